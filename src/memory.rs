//! Giving memory back to the kernel: the pages of a range this process
//! owns (`madvise`), and, once start-up is over, the pages of its own code
//! that only start-up ran. Both earn their `unsafe` on a figure operators
//! see, measured side by side with their removal (BENCHMARKS.md,
//! "Micro-optimisations measured"): idle RSS 28 MiB with the code pages
//! given back, 40 MiB without.
//!
//! Start-up (configuration, the migrations, the OpenAPI document, every
//! worker's routes) runs code that serving never runs again, and the kernel
//! maps code 64 KiB around each page first run: after start-up 17 MiB of the
//! binary's 22 MiB of code is resident, and stays so. Like a kernel freeing
//! its init sections after boot, the process drops its code pages once it
//! serves; the kernel keeps them in its page cache, and serving faults back
//! in (from memory, no disk read) only what it runs.

/// Caps glibc's malloc arenas at the number of cores (at least 2), unless
/// `MALLOC_ARENA_MAX` says otherwise. glibc's default is 8 per core: a
/// thread that finds an arena locked makes another, so under CPU
/// contention the sign-ins' threads spread over more arenas, and each
/// keeps the memory freed into it. Measured with the binary of c7f82c4
/// (`tests/api/memory.rs` beside two busy loops): 70 MiB resident after 52
/// sign-ins with the default, under 64 MiB with 2 arenas.
pub fn cap_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
        // SAFETY: sets one of the allocator's tunables; it applies to the
        // arenas made from then on, which is all of them this early.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, cores as libc::c_int) };
    }
}

/// `madvise(advice)` over the whole pages inside `[address, address + bytes)`.
///
/// # Safety
/// The caller owns the range, nothing else uses it meanwhile, and what
/// `advice` does to its contents is acceptable to the caller.
#[cfg(target_os = "linux")]
pub unsafe fn advise(address: usize, bytes: usize, advice: libc::c_int) {
    let (start, len) = whole_pages(address, bytes);
    if len > 0 {
        // SAFETY: the caller's contract; the range only shrinks to whole pages.
        unsafe { libc::madvise(start as *mut libc::c_void, len, advice) };
    }
}

/// The whole pages inside `[address, address + len)`: (first page, bytes).
fn whole_pages(address: usize, len: usize) -> (usize, usize) {
    const PAGE: usize = 4096;
    let start = address.next_multiple_of(PAGE);
    let end = (address + len) / PAGE * PAGE;
    (start, end.saturating_sub(start))
}

/// Drops this process's mappings of its own executable that hold only the
/// file's pages (code and read-only data: not writable, no private copy),
/// and answers the bytes they had resident. Their next use faults them in
/// again from the page cache. A mapping with a private copy of a page (a
/// debugger's or a uprobe's breakpoint) is left alone.
pub fn release_start_up_code() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else { return 0 };
        let ours = release_start_up_code as *const () as usize;
        let mappings = file_only_mappings(&smaps, ours);
        for mapping in &mappings {
            // SAFETY: the range is a read-only private mapping of the
            // executable holding only the file's pages (no private copies):
            // dropping them loses nothing, the next access reads the same
            // bytes from the file again.
            unsafe { advise(mapping.start, mapping.end - mapping.start, libc::MADV_DONTNEED) };
        }
        mappings.iter().map(|m| m.resident_kib * 1024).sum()
    }
    #[cfg(not(target_os = "linux"))]
    0
}

#[derive(Debug, PartialEq)]
struct Mapping {
    start: usize,
    end: usize,
    resident_kib: u64,
}

/// In `/proc/self/smaps`, the mappings of the file that holds `address`
/// that are not writable and have no anonymous (privately copied) pages.
fn file_only_mappings(smaps: &str, address: usize) -> Vec<Mapping> {
    struct Entry<'a> {
        start: usize,
        end: usize,
        writable: bool,
        path: &'a str,
        resident_kib: u64,
        anonymous_kib: Option<u64>,
    }
    let mut entries: Vec<Entry<'_>> = Vec::new();
    for line in smaps.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(first) = fields.next() else { continue };
        if let Some((start, end)) = first
            .split_once('-')
            .and_then(|(s, e)| Some((usize::from_str_radix(s, 16).ok()?, usize::from_str_radix(e, 16).ok()?)))
        {
            let permissions = fields.next().unwrap_or_default();
            let path = fields.nth(3).unwrap_or_default();
            entries.push(Entry {
                start,
                end,
                writable: permissions.contains('w'),
                path,
                resident_kib: 0,
                anonymous_kib: None,
            });
            continue;
        }
        let (Some(entry), Some(kib)) = (entries.last_mut(), fields.next().and_then(|v| v.parse::<u64>().ok())) else {
            continue;
        };
        match first {
            "Rss:" => entry.resident_kib = kib,
            "Anonymous:" => entry.anonymous_kib = Some(kib),
            _ => {}
        }
    }
    let Some(file) = entries.iter().find(|e| (e.start..e.end).contains(&address)).map(|e| e.path) else {
        return Vec::new();
    };
    if !file.starts_with('/') {
        return Vec::new();
    }
    entries
        .into_iter()
        .filter(|e| e.path == file && !e.writable && e.anonymous_kib == Some(0))
        .map(|e| Mapping { start: e.start, end: e.end, resident_kib: e.resident_kib })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_pages_are_given_back() {
        assert_eq!(whole_pages(4096, 8192), (4096, 8192));
        assert_eq!(whole_pages(4097, 8192), (8192, 4096));
        assert_eq!(whole_pages(100, 4000), (4096, 0));
        assert_eq!(whole_pages(0, 0), (0, 0));
    }

    const SMAPS: &str = "\
55a336753000-55a336c57000 r--p 00000000 08:01 123 /srv/gatehouse
Rss:                1984 kB
Anonymous:             0 kB
55a336c58000-55a338253000 r-xp 00504000 08:01 123 /srv/gatehouse
Rss:               17020 kB
Anonymous:             0 kB
55a338253000-55a3382c0000 r--p 01aff000 08:01 123 /srv/gatehouse
Rss:                 460 kB
Anonymous:           460 kB
55a3382c0000-55a3382d0000 rw-p 01b6c000 08:01 123 /srv/gatehouse
Rss:                  64 kB
Anonymous:            64 kB
7f4b385c0000-7f4b38700000 r-xp 00026000 08:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                1120 kB
Anonymous:             0 kB
7f4af4000000-7f4af422a000 rw-p 00000000 00:00 0 
Rss:                2208 kB
Anonymous:          2208 kB
";

    #[test]
    fn the_executables_read_only_file_pages_are_chosen() {
        let found = file_only_mappings(SMAPS, 0x55a336d00000);
        assert_eq!(
            found,
            vec![
                Mapping { start: 0x55a336753000, end: 0x55a336c57000, resident_kib: 1984 },
                Mapping { start: 0x55a336c58000, end: 0x55a338253000, resident_kib: 17020 },
            ]
        );
        // Relocated read-only data (a private copy) and writable data are kept.
        assert!(found.iter().all(|m| m.start != 0x55a338253000 && m.start != 0x55a3382c0000));
    }

    #[test]
    fn nothing_is_chosen_outside_a_named_file() {
        assert!(file_only_mappings(SMAPS, 0x7f4af4000100).is_empty());
        assert!(file_only_mappings(SMAPS, 0x1000).is_empty());
        assert!(file_only_mappings("", 0x55a336d00000).is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn released_code_runs_on_from_the_file() {
        // The test binary's own code and constants are dropped, then run
        // and read again (faulted in from the page cache).
        assert!(release_start_up_code() > 0);
        assert_eq!(format!("{:?}", whole_pages(4097, 8192)), "(8192, 4096)");
        assert!(release_start_up_code() > 0);
    }
}
