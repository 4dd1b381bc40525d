//! Durations as people write them in configs and on the command line (`90`, `90s`, `15m`, `1.5h`):
//! `--duration`, `[run] duration`, the summary interval and a video source's segment times all go
//! through [`parse_duration`]. Also the one clock format: [`utc`] timestamps (run directories,
//! `robustream bench`'s start time).

use std::time::Duration;

/// A duration that does not parse, with the text as written (clipped). Display = the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// A unit other than s, m (min) or h.
    #[error("duration `{written}`: unit `{unit}` is not s, m or h")]
    Unit {
        /// The duration as written (clipped).
        written: String,
        /// The unit as written (clipped).
        unit: String,
    },
    /// The number before the unit does not parse.
    #[error("duration `{written}` is not a number with s, m or h")]
    NotANumber {
        /// The duration as written (clipped).
        written: String,
    },
    /// Negative, infinite or too long.
    #[error("duration `{written}` must be ≥ 0 and finite")]
    OutOfRange {
        /// The duration as written (clipped).
        written: String,
    },
}

/// Parses a duration like `90`, `90s`, `15m`, `1h`, `1.5h` (seconds without a unit).
pub(crate) fn parse_duration(written: &str) -> Result<Duration, DurationError> {
    let s = || crate::quote::clip(written).into_owned();
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
            return Err(DurationError::Unit {
                written: s(),
                unit: crate::quote::clip(unit).into_owned(),
            });
        }
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| DurationError::NotANumber { written: s() })?;
    Duration::try_from_secs_f64(v * factor).map_err(|_| DurationError::OutOfRange { written: s() })
}

/// `secs` since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub(crate) fn utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
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
        assert!(
            parse_duration("1d")
                .unwrap_err()
                .to_string()
                .contains("unit `d`")
        );
        assert!(parse_duration("-3s").is_err());
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn utc_dates_from_unix_seconds() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_795_711_740), "2026-11-26T16:49:00Z");
        assert_eq!(utc(4_107_542_399), "2100-02-28T23:59:59Z");
    }
}
