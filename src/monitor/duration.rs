//! Durations as people type them on the command line (`1`, `0.5`, `500ms`, `2s`, `1m`):
//! the parser `envctl stats --interval` uses, with the shortest interval that can be
//! sampled at all.

use std::time::Duration;

/// The shortest interval accepted: the daemon itself samples streams once a second, and
/// NVML's utilisation counters cover about 1/6 s to 1 s.
pub const MINIMUM_INTERVAL: Duration = Duration::from_millis(100);

/// `1`, `0.5`, `500ms`, `2s`, `1m`; at least [`MINIMUM_INTERVAL`]. The error is the
/// sentence clap shows after the argument's name.
pub fn parse_interval(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, scale) = if let Some(number) = text.strip_suffix("ms") {
        (number, 0.001)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1.0)
    } else if let Some(number) = text.strip_suffix('m') {
        (number, 60.0)
    } else {
        (text, 1.0)
    };
    let seconds = number
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("`{text}` is not a duration like 1, 0.5, 500ms or 2s"))?
        * scale;
    let duration = Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}` is not a duration like 1, 0.5, 500ms or 2s"))?;
    if duration < MINIMUM_INTERVAL {
        return Err(format!(
            "`{text}` is shorter than {} ms, faster than anything can be sampled",
            MINIMUM_INTERVAL.as_millis()
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
    fn the_header_says_seconds_or_milliseconds() {
        assert_eq!(humanize(Duration::from_secs(2)), "2 s");
        assert_eq!(humanize(Duration::from_millis(500)), "500 ms");
        assert_eq!(humanize(Duration::from_millis(1500)), "1500 ms");
    }
}
