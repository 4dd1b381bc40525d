//! The output contract's format number: written as `"format"` in `summary.json` and in every line
//! of `records.jsonl`, raised whenever a field of the run directory's files changes meaning, moves or
//! goes away (docs/output.md#format-changelog). A reader takes any format up to its own — older files
//! load, fields they lack take their defaults — and refuses a newer one with one line naming it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The format this robustream writes (docs/output.md#format-changelog).
pub const FORMAT: u32 = 3;

/// A file's `format` field. Always written as [`FORMAT`] (what this robustream writes is this
/// format, whatever the file it was read from); reading accepts [`FORMAT`] and below, and files
/// written before the field existed (format 1: absent, so `#[serde(default)]` beside it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Format;

impl Serialize for Format {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(FORMAT)
    }
}

impl<'de> Deserialize<'de> for Format {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = u64::deserialize(d)?;
        match n <= u64::from(FORMAT) {
            true => Ok(Self),
            false => Err(serde::de::Error::custom(newer(n))),
        }
    }
}

/// For `#[serde(deserialize_with = "present")]` on an `Option<Option<T>>` field of the contract's
/// files that may be written as null (with `skip_serializing_if = "Option::is_none"` and a default):
/// present, even as null, → `Some`; absent → the default `None`, so a file reads back as written.
pub(crate) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The message for a file of format `n`, newer than this robustream reads.
fn newer(n: u64) -> String {
    format!(
        "format {n} was written by a newer robustream; this one ({}) reads formats up to \
         {FORMAT} (docs/output.md#format-changelog): read it with the robustream that wrote it",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    struct File {
        #[serde(default)]
        format: Format,
        x: u8,
    }

    #[test]
    fn written_as_this_format_and_older_ones_read() {
        let f: File = serde_json::from_str(r#"{"x": 1}"#).unwrap();
        assert_eq!(serde_json::to_string(&f).unwrap(), r#"{"format":3,"x":1}"#);
        for n in 0..=FORMAT {
            let text = format!(r#"{{"format": {n}, "x": 1}}"#);
            assert!(serde_json::from_str::<File>(&text).is_ok(), "{text}");
        }
    }

    #[test]
    fn a_newer_format_is_refused_with_the_number() {
        let e = serde_json::from_str::<File>(r#"{"format": 4, "x": 1}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("format 4 was written by a newer robustream"),
            "{e}"
        );
        assert!(serde_json::from_str::<File>(r#"{"format": "3", "x": 1}"#).is_err());
    }
}
