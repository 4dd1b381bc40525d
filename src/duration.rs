//! Durations as people write them in configs and on the command line (`90`, `90s`, `15m`, `1.5h`):
//! `--duration`, `[run] duration`, the summary interval and a video source's segment times all go
//! through [`parse_duration`].

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
pub fn parse_duration(written: &str) -> Result<Duration, DurationError> {
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
}
