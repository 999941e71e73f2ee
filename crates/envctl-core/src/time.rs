//! Wall-clock dates and times in UTC, the way envctl writes them (`2026-11-29` in
//! `envctl.lock` and lifecycle checks, `14:03:27` in the live `stats` header), formatted by
//! `jiff` rather than by hand-written calendar arithmetic. No time zone but UTC is read.

use std::time::SystemTime;

use jiff::Timestamp;

/// `now` (from the context's clock) as a jiff timestamp. jiff spans the years -9999 to
/// 9999; a clock outside them is held at the nearest end rather than read as the epoch.
pub fn timestamp(now: SystemTime) -> Timestamp {
    Timestamp::try_from(now).unwrap_or(if now < SystemTime::UNIX_EPOCH {
        Timestamp::MIN
    } else {
        Timestamp::MAX
    })
}

/// `YYYY-MM-DD` of `timestamp`, in UTC.
pub fn date_utc(timestamp: Timestamp) -> String {
    timestamp.strftime("%Y-%m-%d").to_string()
}

/// `HH:MM:SS` of `timestamp`, in UTC.
pub fn time_of_day_utc(timestamp: Timestamp) -> String {
    timestamp.strftime("%H:%M:%S").to_string()
}

/// Seconds since the Unix epoch at `now`, with their fraction. A clock set before 1970
/// reads as negative seconds, not as the epoch.
pub fn unix_seconds(now: SystemTime) -> f64 {
    timestamp(now).as_duration().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).unwrap()
    }

    #[test]
    fn dates_and_times_of_day_in_utc() {
        assert_eq!(date_utc(at(0)), "1970-01-01");
        // 2026-11-29T23:59:59Z, then the first second of the next day.
        assert_eq!(date_utc(at(1_795_996_799)), "2026-11-29");
        assert_eq!(date_utc(at(1_795_996_800)), "2026-11-30");
        // A leap day, and the turn of a century that is a leap year.
        assert_eq!(date_utc(at(1_709_164_800)), "2024-02-29");
        assert_eq!(date_utc(at(951_782_400)), "2000-02-29");
        assert_eq!(time_of_day_utc(at(1_795_996_799)), "23:59:59");
        assert_eq!(time_of_day_utc(at(3_600 + 2 * 60 + 3)), "01:02:03");
        let epoch = SystemTime::UNIX_EPOCH;
        assert_eq!(
            unix_seconds(epoch + std::time::Duration::from_millis(1_500)),
            1.5
        );
        assert_eq!(
            unix_seconds(epoch - std::time::Duration::from_secs(2)),
            -2.0
        );
    }
}
