//! Mapping model classes to dataset classes (e.g. ImageNet-1k → IN-9). This is the one place a class
//! map is applied: [`ClassMap::pred`] and [`ClassMap::hit5`] turn a model's top-k into the values
//! stored in each evaluation record.
//!
//! File format (JSON):
//! ```json
//! {"classes": ["dog", "bird", ...], "map": {"151": 0, "152": 0, "7": 1, "999": -1}}
//! ```
//! `classes` is the dataset label space in index order; `map` sends a model class index (a decimal
//! string key) to a dataset class index, or to `-1` for "no dataset class". Model classes absent from
//! `map` are unmapped too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::frame::LabelSpace;
use crate::quote::{clip, clip_path};

/// An invalid class map file or construction.
#[derive(Debug, thiserror::Error)]
pub enum ClassMapError {
    /// The file could not be read.
    #[error(
        "cannot read class map {}: {source}; check --class-map, `class_map` in `[dataset]` or in \
         the model description",
        clip_path(path)
    )]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not JSON of the expected shape.
    #[error(
        "class map {}: {}; expected {{\"classes\": [names...], \"map\": {{\"<model index>\": <dataset index or -1>}}}}",
        clip_path(path), clip(&source.to_string())
    )]
    Json {
        /// The file.
        path: PathBuf,
        /// The cause (with line and column).
        source: serde_json::Error,
    },
    /// A key of `map` is not a model class index written in plain decimal.
    #[error(
        "class map {}: key `{}` in `map` is not a model class index (a decimal number like \"151\")",
        clip_path(path),
        clip(key)
    )]
    BadKey {
        /// The file.
        path: PathBuf,
        /// The key as written.
        key: String,
    },
    /// A key of `map` appears twice.
    #[error(
        "class map {}: model class {index} appears twice in `map` (key `{}`)",
        clip_path(path),
        clip(key)
    )]
    DuplicateKey {
        /// The file.
        path: PathBuf,
        /// The second key as written.
        key: String,
        /// The model class index.
        index: usize,
    },
    /// A value of `map` is not -1 or a valid dataset class index.
    #[error(
        "class map {}: `map.\"{}\"` = {} is not a dataset class: use -1 (unmapped) or an index below {classes} (the length of `classes`)",
        clip_path(path),
        clip(key),
        clip(value)
    )]
    BadValue {
        /// The file.
        path: PathBuf,
        /// The key whose value is wrong.
        key: String,
        /// The value, as JSON text.
        value: String,
        /// Number of dataset classes.
        classes: usize,
    },
    /// A key of `map` is not a class of the model.
    #[error(
        "class map {}: key `{}` in `map` is not a class of the model, which has {model_classes} classes (0..{model_classes})",
        clip_path(path),
        clip(key)
    )]
    KeyOutOfRange {
        /// The file.
        path: PathBuf,
        /// The key as written.
        key: String,
        /// Number of model classes.
        model_classes: usize,
    },
}

/// The on-disk shape; validated into a [`ClassMap`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClassMap {
    classes: Vec<String>,
    #[serde(deserialize_with = "entries")]
    map: Vec<(String, serde_json::Value)>,
}

/// A JSON object as its entries in file order, keeping duplicate keys (a plain map would silently
/// keep only the last one).
fn entries<'de, D>(de: D) -> Result<Vec<(String, serde_json::Value)>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Entries;
    impl<'de> serde::de::Visitor<'de> for Entries {
        type Value = Vec<(String, serde_json::Value)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of \"<model index>\": <dataset index or -1>")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut access: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = access.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    de.deserialize_map(Entries)
}

/// Model class index → dataset class index, with the dataset's label space.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassMap {
    classes: LabelSpace,
    /// Model class → dataset class; `None` (written -1) and absent keys are unmapped.
    map: BTreeMap<usize, Option<usize>>,
    /// Where the map came from, for messages (`None` for built-in maps).
    source: Option<PathBuf>,
}

impl ClassMap {
    /// The identity map: model class `i` is dataset class `i`, for every class of `labels` (the
    /// model's own label space, which then is the dataset's too).
    pub fn identity(labels: &LabelSpace) -> Self {
        Self {
            classes: labels.clone(),
            map: (0..labels.len()).map(|i| (i, Some(i))).collect(),
            source: None,
        }
    }

    /// Reads a class map file ([`ClassMap::from_file`]) and checks it against a model with
    /// `model_classes` outputs ([`ClassMap::check_model_classes`]).
    pub fn load(path: &Path, model_classes: usize) -> Result<Self, ClassMapError> {
        let map = Self::from_file(path)?;
        map.check_model_classes(model_classes)?;
        Ok(map)
    }

    /// Reads and validates a class map file (format in the module docs).
    fn from_file(path: &Path) -> Result<Self, ClassMapError> {
        let text =
            crate::fsread::read_text_io(path, crate::fsread::MAX_TEXT_BYTES).map_err(|source| {
                ClassMapError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Self::from_json(&text, path)
    }

    /// Parses and validates class map JSON; `path` is only used in messages.
    pub(crate) fn from_json(text: &str, path: &Path) -> Result<Self, ClassMapError> {
        let path_buf = || path.to_path_buf();
        let raw: RawClassMap =
            serde_json::from_str(text).map_err(|source| ClassMapError::Json {
                path: path_buf(),
                source,
            })?;
        let n_classes = raw.classes.len();
        let mut map = BTreeMap::new();
        for (key, value) in raw.map {
            let index = parse_index(&key).ok_or_else(|| ClassMapError::BadKey {
                path: path_buf(),
                key: key.clone(),
            })?;
            if map.contains_key(&index) {
                return Err(ClassMapError::DuplicateKey {
                    path: path_buf(),
                    key,
                    index,
                });
            }
            let target = match value.as_i64() {
                Some(-1) => Ok(None),
                Some(v) => usize::try_from(v)
                    .ok()
                    .filter(|&c| c < n_classes)
                    .map(Some)
                    .ok_or(()),
                None => Err(()),
            };
            let Ok(target) = target else {
                return Err(ClassMapError::BadValue {
                    path: path_buf(),
                    key,
                    value: value.to_string(),
                    classes: n_classes,
                });
            };
            map.insert(index, target);
        }
        Ok(Self {
            classes: LabelSpace::new(raw.classes),
            map,
            source: Some(path_buf()),
        })
    }

    /// Checks that every key of the map is a class of a model with `model_classes` outputs.
    pub(crate) fn check_model_classes(&self, model_classes: usize) -> Result<(), ClassMapError> {
        match self.map.keys().next_back() {
            Some(&last) if last >= model_classes => Err(ClassMapError::KeyOutOfRange {
                path: self
                    .source
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("(built-in)")),
                key: last.to_string(),
                model_classes,
            }),
            _ => Ok(()),
        }
    }

    /// The dataset class of model class `model_class`, or `None` when it is unmapped.
    pub fn map(&self, model_class: usize) -> Option<usize> {
        self.map.get(&model_class).copied().flatten()
    }

    /// The dataset label space.
    pub fn classes(&self) -> &LabelSpace {
        &self.classes
    }

    /// The file the map was read from (`None` for built-in maps).
    #[cfg(test)]
    fn source(&self) -> Option<&Path> {
        self.source.as_deref()
    }

    /// The stored prediction for a model top-1: its dataset class, or -1 when unmapped.
    pub(crate) fn pred(&self, top1: usize) -> i64 {
        self.map(top1)
            .and_then(|c| i64::try_from(c).ok())
            .unwrap_or(-1)
    }

    /// True when `truth` (a dataset class) is the mapped class of one of the first five entries of
    /// `top` (model classes, best first). Unmapped entries never match.
    fn hit5(&self, top: &[usize], truth: usize) -> bool {
        top.iter().take(5).any(|&c| self.map(c) == Some(truth))
    }

    /// The `pred` and `hit5` fields of a record for a model top-k (`top`, best first) and an
    /// optional dataset truth: `pred` is -1 when `top` is empty or its first class is unmapped;
    /// `hit5` is `None` without a truth.
    pub(crate) fn score(&self, top: &[usize], truth: Option<usize>) -> (i64, Option<bool>) {
        let pred = top.first().map_or(-1, |&c| self.pred(c));
        (pred, truth.map(|t| self.hit5(top, t)))
    }
}

/// A model class index written in plain decimal: digits only, no sign, no leading zeros.
fn parse_index(key: &str) -> Option<usize> {
    let plain = !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_digit())
        && (key == "0" || !key.starts_with('0'));
    plain.then(|| key.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<ClassMap, ClassMapError> {
        ClassMap::from_json(text, Path::new("maps/in9.json"))
    }

    const IN9: &str = r#"{"classes": ["dog", "bird", "other"],
        "map": {"151": 0, "152": 0, "7": 1, "999": -1}}"#;

    #[test]
    fn maps_and_unmapped() {
        let m = load(IN9).unwrap();
        assert_eq!(m.map(151), Some(0));
        assert_eq!(m.map(7), Some(1));
        assert_eq!(m.map(999), None);
        assert_eq!(m.map(3), None);
        assert_eq!(m.pred(152), 0);
        assert_eq!(m.pred(999), -1);
        assert_eq!(m.pred(4), -1);
        assert_eq!(m.classes().len(), 3);
        assert_eq!(m.classes().name(1), Some("bird"));
        assert_eq!(m.source(), Some(Path::new("maps/in9.json")));
    }

    #[test]
    fn hit5_uses_mapped_top_five_only() {
        let m = load(IN9).unwrap();
        assert!(m.hit5(&[999, 3, 152], 0));
        assert!(!m.hit5(&[999, 3, 152], 1));
        // The sixth entry is outside the top-5.
        assert!(!m.hit5(&[1, 2, 3, 4, 5, 7], 1));
        assert!(m.hit5(&[1, 2, 3, 4, 7, 5], 1));
        assert!(!m.hit5(&[], 0));
    }

    #[test]
    fn score_builds_record_fields() {
        let m = load(IN9).unwrap();
        assert_eq!(m.score(&[151, 7], Some(1)), (0, Some(true)));
        assert_eq!(m.score(&[999, 7], Some(0)), (-1, Some(false)));
        assert_eq!(m.score(&[7], None), (1, None));
        assert_eq!(m.score(&[], Some(0)), (-1, Some(false)));
    }

    #[test]
    fn identity_map() {
        let names = LabelSpace::new(vec!["a".into(), "b".into(), "c".into()]);
        let m = ClassMap::identity(&names);
        assert_eq!(m.map(2), Some(2));
        assert_eq!(m.map(3), None);
        assert_eq!(m.pred(0), 0);
        assert_eq!(m.pred(3), -1);
        assert_eq!(m.classes(), &names);
        assert_eq!(m.source(), None);
        assert!(m.check_model_classes(3).is_ok());
        let e = m.check_model_classes(2).unwrap_err();
        assert!(e.to_string().contains("(built-in)"), "{e}");
    }

    #[test]
    fn rejects_bad_keys_naming_file_and_key() {
        for key in ["dog", "-1", "+7", "1.5", "", " 7", "007"] {
            let text = format!(r#"{{"classes": ["a"], "map": {{"{key}": 0}}}}"#);
            let e = load(&text).unwrap_err();
            assert!(matches!(e, ClassMapError::BadKey { .. }), "{key}: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains("maps/in9.json") && msg.contains(&format!("`{key}`")),
                "{msg}"
            );
        }
        let e = load(r#"{"classes": ["a"], "map": {"99999999999999999999999": 0}}"#).unwrap_err();
        assert!(matches!(e, ClassMapError::BadKey { .. }));
    }

    #[test]
    fn rejects_bad_values() {
        for value in ["3", "-2", "0.5", "\"0\"", "null", "1e3"] {
            let text = format!(r#"{{"classes": ["a", "b", "c"], "map": {{"5": {value}}}}}"#);
            let e = load(&text).unwrap_err();
            assert!(matches!(e, ClassMapError::BadValue { .. }), "{value}: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains("maps/in9.json") && msg.contains("\"5\""),
                "{msg}"
            );
        }
        assert!(load(r#"{"classes": ["a", "b", "c"], "map": {"5": 2}}"#).is_ok());
    }

    #[test]
    fn rejects_wrong_shape() {
        for text in [
            "",
            "[]",
            r#"{"classes": ["a"]}"#,
            r#"{"map": {}}"#,
            r#"{"classes": [1], "map": {}}"#,
            r#"{"classes": ["a"], "map": {}, "extra": 1}"#,
        ] {
            let e = load(text).unwrap_err();
            assert!(matches!(e, ClassMapError::Json { .. }), "{text}: {e}");
            assert!(e.to_string().contains("maps/in9.json"));
        }
    }

    #[test]
    fn rejects_duplicate_keys() {
        let e = load(r#"{"classes": ["a", "b"], "map": {"7": 0, "8": 1, "7": 1}}"#).unwrap_err();
        assert!(
            matches!(e, ClassMapError::DuplicateKey { index: 7, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("maps/in9.json"));
    }

    #[test]
    fn model_class_range_is_checked() {
        let m = load(IN9).unwrap();
        assert!(m.check_model_classes(1000).is_ok());
        let e = m.check_model_classes(999).unwrap_err();
        assert!(e.to_string().contains("`999`"), "{e}");
    }

    #[test]
    fn reads_file_and_reports_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("map.json");
        std::fs::write(&path, IN9).unwrap();
        assert_eq!(ClassMap::from_file(&path).unwrap().map(7), Some(1));
        assert_eq!(ClassMap::load(&path, 1000).unwrap().map(151), Some(0));
        let e = ClassMap::load(&path, 10).unwrap_err();
        assert!(matches!(e, ClassMapError::KeyOutOfRange { .. }), "{e}");
        assert!(e.to_string().contains("map.json"), "{e}");
        let e = ClassMap::from_file(&dir.path().join("nope.json")).unwrap_err();
        assert!(matches!(e, ClassMapError::Io { .. }) && e.to_string().contains("nope.json"));
    }

    #[test]
    fn a_class_map_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
        let dir = tempfile::tempdir().unwrap();
        let limit = crate::fsread::MAX_TEXT_BYTES;
        for (path, why) in crate::fsread::refused_paths(dir.path(), limit) {
            let e = ClassMap::load(&path, 1000).unwrap_err();
            assert!(matches!(e, ClassMapError::Io { .. }), "{e}");
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("cannot read class map {}: {why}", path.display()))
                    && e.contains("check --class-map"),
                "{e}"
            );
        }
    }
}
