//! The retry schedule: `webhooks.retry_schedule`, delays such as
//! `0s,5s,5m,30m,2h,5h,10h,10h`. The first is the delay before the first
//! attempt; a message is given up after the last.
use std::time::Duration;

pub fn parse(text: &str) -> Result<Vec<Duration>, String> {
    let delays: Vec<Duration> = text.split(',').map(|part| parse_one(part.trim())).collect::<Result<_, _>>()?;
    if delays.is_empty() {
        return Err("the retry schedule is empty".into());
    }
    Ok(delays)
}

fn parse_one(part: &str) -> Result<Duration, String> {
    let split = part.find(|c: char| !c.is_ascii_digit()).ok_or_else(|| format!("`{part}` has no unit"))?;
    let (number, unit) = part.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("`{part}` is not a delay"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(format!("`{part}` has an unknown unit (ms, s, m, h)")),
    }
}

/// A delay spread by ±10% so that retries of many messages do not arrive
/// together.
pub fn with_jitter(delay: Duration) -> Duration {
    use rand::Rng;
    delay.mul_f64(rand::thread_rng().gen_range(0.9..=1.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_schedule_parses_and_nonsense_does_not() {
        let delays = parse("0s,5s,5m,30m,2h,5h,10h,10h").unwrap();
        assert_eq!(delays.len(), 8);
        assert_eq!(delays[3], Duration::from_secs(1800));
        assert_eq!(parse("150ms").unwrap(), vec![Duration::from_millis(150)]);
        assert!(parse("5").is_err());
        assert!(parse("5d").is_err());
    }
}
