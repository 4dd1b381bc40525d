//! Durations as people write them in configs and on the command line (`90`, `90s`, `15m`, `1.5h`):
//! `--duration`, `[run] duration`, the summary interval and a video source's segment times all go
//! through [`parse_duration`].

use std::time::Duration;

/// Parses a duration like `90`, `90s`, `15m`, `1h`, `1.5h` (seconds without a unit).
pub fn parse_duration(written: &str) -> Result<Duration, String> {
    let s = crate::quote::clip(written);
    let t = written.trim();
    let (num, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => t.split_at(i),
        None => (t, "s"),
    };
    let factor = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(format!(
                "duration `{s}`: unit `{}` is not s, m or h",
                crate::quote::clip(unit)
            ));
        }
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("duration `{s}` is not a number with s, m or h"))?;
    Duration::try_from_secs_f64(v * factor)
        .map_err(|_| format!("duration `{s}` must be ≥ 0 and finite"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(parse_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration(" 2s "), Ok(Duration::from_secs(2)));
        assert!(parse_duration("1d").unwrap_err().contains("unit `d`"));
        assert!(parse_duration("-3s").is_err());
        assert!(parse_duration("abc").is_err());
    }
}
