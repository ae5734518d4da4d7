//! The standard process metrics (the names every Prometheus client
//! library exports), read from `/proc` at each scrape. Written as text
//! beside the recorder's: the recorder's counters count whole numbers, and
//! CPU seconds are not.
use std::fmt::Write;

/// The process metrics in the Prometheus text format; empty where `/proc`
/// is not (they are Linux's).
pub fn exposition() -> String {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return String::new() };
    // The fields after the command name, which is in parentheses and may hold spaces.
    let Some(fields) = stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect::<Vec<_>>()) else {
        return String::new();
    };
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf reads constants of the system.
    let (ticks, page) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK) as f64, libc::sysconf(libc::_SC_PAGESIZE) as f64) };
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<f64>().ok())))
        .unwrap_or(0.0);
    let open_fds = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as f64).unwrap_or(0.0);
    let max_fds = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).and_then(|v| v.parse::<f64>().ok()))
        })
        .unwrap_or(0.0);
    let mut out = String::new();
    let mut family = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n");
    };
    // Fields of proc(5): 14 utime, 15 stime, 22 starttime (ticks), 23 vsize (bytes), 24 rss (pages).
    family(
        "process_cpu_seconds_total",
        "counter",
        "Total user and system CPU time spent in seconds.",
        (field(14) + field(15)) / ticks,
    );
    family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", field(24) * page);
    family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", field(23));
    family("process_open_fds", "gauge", "Number of open file descriptors.", open_fds);
    family("process_max_fds", "gauge", "Maximum number of open file descriptors.", max_fds);
    family(
        "process_start_time_seconds",
        "gauge",
        "Start time of the process since unix epoch in seconds.",
        boot + field(22) / ticks,
    );
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_metrics_are_read_from_proc() {
        let text = super::exposition();
        let value = |name: &str| -> f64 {
            let line =
                text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name} in {text}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        assert!(value("process_resident_memory_bytes") > 1e6);
        assert!(value("process_open_fds") >= 3.0);
        let started = value("process_start_time_seconds");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!(started > now - 86_400.0 && started <= now + 1.0, "started {started}, now {now}");
    }
}
