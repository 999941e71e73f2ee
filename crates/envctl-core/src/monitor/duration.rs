//! Durations as people type them on the command line (`1`, `0.5`, `500ms`, `2s`, `1m`),
//! read by jiff where they carry a unit: the parser `envctl stats --interval` uses, with
//! the shortest and longest intervals that make sense to sample at.

use std::time::Duration;

/// The shortest interval accepted: the daemon itself samples streams once a second, and
/// NVML's utilisation counters cover about 1/6 s to 1 s.
pub const MINIMUM_INTERVAL: Duration = Duration::from_millis(100);

/// The longest interval accepted: an hour between samples is already no live view, and a
/// bound keeps every deadline computed from it (`Instant + interval`) far from overflow.
pub const MAXIMUM_INTERVAL: Duration = Duration::from_secs(3600);

/// The shortest and longest history `--window` keeps for the dashboard: a few samples,
/// and a day (the history's own bound on points holds besides).
pub const MINIMUM_WINDOW: Duration = Duration::from_secs(10);
pub const MAXIMUM_WINDOW: Duration = Duration::from_secs(86_400);

/// A bare number of seconds (`1`, `0.5`) or anything with a unit, jiff's to read (`500ms`,
/// `2s`, `1m`, `1m30s`, ISO 8601 `PT2S`). A negative one is no duration.
fn parse(text: &str, examples: &str) -> Result<Duration, String> {
    let not_a_duration = || format!("`{text}` is not a duration like {examples}");
    match text.parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds).map_err(|_| not_a_duration()),
        Err(_) => text
            .parse::<jiff::SignedDuration>()
            .ok()
            .and_then(|signed| Duration::try_from(signed).ok())
            .ok_or_else(not_a_duration),
    }
}

/// `10m`, `1h`, `90s`, `600`; from [`MINIMUM_WINDOW`] to [`MAXIMUM_WINDOW`].
pub fn parse_window(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let duration = parse(text, "10m, 1h or 90s")?;
    if duration < MINIMUM_WINDOW {
        return Err(format!(
            "`{text}` is shorter than {} s, too short to show a curve",
            MINIMUM_WINDOW.as_secs()
        ));
    }
    if duration > MAXIMUM_WINDOW {
        return Err(format!(
            "`{text}` is longer than a day; take a recording (`--record`) and draw it with `stats report` instead"
        ));
    }
    Ok(duration)
}

/// A window as people say it: `10 min`, `1 h`, `90 s`.
pub fn humanize_span(span: Duration) -> String {
    let seconds = span.as_secs();
    if seconds >= 3600 && seconds.is_multiple_of(3600) {
        format!("{} h", seconds / 3600)
    } else if seconds >= 60 && seconds.is_multiple_of(60) {
        format!("{} min", seconds / 60)
    } else {
        format!("{} s", span.as_secs_f64())
    }
}

/// `1`, `0.5`, `500ms`, `2s`, `1m`; from [`MINIMUM_INTERVAL`] to [`MAXIMUM_INTERVAL`]. The
/// error is the sentence clap shows after the argument's name.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let duration = parse(text, "1, 0.5, 500ms or 2s")?;
    if duration < MINIMUM_INTERVAL {
        return Err(format!(
            "`{text}` is shorter than {} ms, faster than anything can be sampled",
            MINIMUM_INTERVAL.as_millis()
        ));
    }
    if duration > MAXIMUM_INTERVAL {
        return Err(format!(
            "`{text}` is longer than {} s between samples; take a recording (`--record`) at a shorter interval instead",
            MAXIMUM_INTERVAL.as_secs()
        ));
    }
    Ok(duration)
}

/// An interval as the live header says it: whole seconds as `2 s`, anything else in
/// milliseconds (`500 ms`).
pub fn humanize(interval: Duration) -> String {
    if interval.subsec_millis() == 0 {
        format!("{} s", interval.as_secs())
    } else {
        format!("{} ms", interval.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Whatever number is typed, the parser answers in bounds or says no; it never
        /// panics, and a duration it accepts can be added to a deadline.
        #[test]
        fn any_number_is_bounded_or_refused(number in proptest::num::f64::ANY, unit in 0..4usize) {
            let text = format!("{number}{}", ["", "ms", "s", "m"][unit]);
            if let Ok(duration) = parse_interval(&text) {
                proptest::prop_assert!(duration >= MINIMUM_INTERVAL && duration <= MAXIMUM_INTERVAL);
                proptest::prop_assert!(std::time::Instant::now().checked_add(duration).is_some());
            }
        }
    }

    #[test]
    fn units_are_read_by_jiff_and_bad_text_is_refused() {
        assert_eq!(parse_interval("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_interval("1.5s").unwrap(), Duration::from_millis(1500));
        for text in ["-2s", "2x", "", "s", "ms"] {
            assert!(
                parse_interval(text)
                    .unwrap_err()
                    .contains("is not a duration like"),
                "{text}"
            );
        }
    }

    #[test]
    fn huge_intervals_are_refused() {
        for text in ["1e19", "1e9", "3601", "61m"] {
            assert!(parse_interval(text).is_err(), "{text}");
        }
        assert_eq!(parse_interval("60m").unwrap(), MAXIMUM_INTERVAL);
    }

    #[test]
    fn intervals_take_seconds_or_units() {
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("0.5").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_interval("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_interval("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_interval("10ms").unwrap_err().contains("shorter"));
        assert!(parse_interval("fast").is_err());
        assert!(parse_interval("-1").is_err());
    }

    #[test]
    fn windows_take_minutes_hours_or_seconds_within_bounds() {
        assert_eq!(parse_window("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_window("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_window("90").unwrap(), Duration::from_secs(90));
        assert!(parse_window("5s").unwrap_err().contains("shorter"));
        assert!(parse_window("2d").is_err());
        assert!(parse_window("25h").unwrap_err().contains("longer"));
        assert!(parse_window("soon").unwrap_err().contains("10m, 1h or 90s"));
        assert_eq!(humanize_span(Duration::from_secs(600)), "10 min");
        assert_eq!(humanize_span(Duration::from_secs(7200)), "2 h");
        assert_eq!(humanize_span(Duration::from_secs(90)), "90 s");
    }

    #[test]
    fn the_header_says_seconds_or_milliseconds() {
        assert_eq!(humanize(Duration::from_secs(2)), "2 s");
        assert_eq!(humanize(Duration::from_millis(500)), "500 ms");
        assert_eq!(humanize(Duration::from_millis(1500)), "1500 ms");
    }
}
