//! The time the service records and how it writes it. Times are UTC to the
//! microsecond, which is what PostgreSQL stores, so SQLite and PostgreSQL
//! answer the same instants. They are written as RFC 3339 with exactly six
//! fractional digits and `Z`: fixed width, so text order is time order (audit
//! rows store `occurred_at` this way and filter on the text).
use chrono::{DateTime, Datelike, SubsecRound, Timelike, Utc};
use serde::Serializer;

pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub fn format(at: DateTime<Utc>) -> String {
    Stamp::of(at).as_str().to_owned()
}

/// A formatted time on the stack, for writing without an allocation.
pub struct Stamp([u8; 27]);

impl Stamp {
    pub fn of(at: DateTime<Utc>) -> Stamp {
        // The stored UTC fields, not the local view (which adds the zero offset field by field).
        let utc = at.naive_utc();
        let (date, time) = (utc.date(), utc.time());
        let seconds = time.num_seconds_from_midnight();
        let mut out = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, width: usize, mut value: u32| {
            for slot in out[at..at + width].iter_mut().rev() {
                *slot = b'0' + (value % 10) as u8;
                value /= 10;
            }
        };
        put(0, 4, date.year().clamp(0, 9999) as u32);
        put(5, 2, date.month());
        put(8, 2, date.day());
        put(11, 2, seconds / 3600);
        put(14, 2, seconds / 60 % 60);
        put(17, 2, seconds % 60);
        // A leap second carries nanoseconds past 1e9: write its last microsecond.
        put(20, 6, (time.nanosecond() / 1000).min(999_999));
        Stamp(out)
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("ASCII digits")
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// `#[serde(serialize_with = "clock::serialize")]` for API timestamps.
pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(Stamp::of(*at).as_str())
}

/// The same for optional timestamps (`null` when absent).
pub fn serialize_option<S: Serializer>(at: &Option<DateTime<Utc>>, serializer: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serialize(at, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_with_six_fractional_digits_like_chrono_micros() {
        let texts = [
            "2026-11-22T04:28:30.411227Z",
            "2026-01-02T03:04:05.000000Z",
            "0999-12-31T23:59:59.999999Z",
            "2024-02-29T12:00:00.000001Z",
        ];
        for text in texts {
            let at = DateTime::parse_from_rfc3339(text).unwrap().to_utc();
            assert_eq!(format(at), text);
            assert_eq!(format(at), at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true));
        }
    }
}
