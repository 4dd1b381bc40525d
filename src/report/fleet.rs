//! The labels that say which device a run is (docs/prometheus.md#fleets): `device` (the host name
//! by default), `camera` (the live source's device or URL), `shard` (`I/N` in a sharded run) and
//! the user's own (`--run-label KEY=VALUE`, `[report] labels`). They go on `robustream_run_info`
//! next to the built-in labels and into summary.json's `run.labels`, so a central Prometheus can
//! group a fleet's figures by device and a report says where it came from.
//!
//! A user label may replace `device` and `camera`; the other built-in labels say what the run
//! computes and cannot be replaced, and `instance` / `job` are Prometheus's own (set when it
//! scrapes). Names follow the Prometheus data model: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with
//! `__`. Values are any text; the exporter escapes them as the exposition format requires.

use std::collections::BTreeMap;
use std::path::Path;

use crate::quote::clip;

/// The labels of `robustream_run_info` that say what the run computes: fixed by robustream.
const BUILT_IN: [&str; 8] = [
    "version",
    "model",
    "engine",
    "onnxruntime",
    "source",
    "plan",
    "scenarios",
    "shard",
];

/// Labels Prometheus sets on every series when it scrapes (the target's address and job): a
/// `robustream_run_info` label of that name would be renamed `exported_…` by the scrape and could
/// not be joined on.
const SCRAPE: [&str; 2] = ["instance", "job"];

/// The longest `camera` value, in characters (a long URL is cut in the middle, see
/// [`crate::quote::clip_to`]).
const CAMERA_MAX: usize = 120;

/// A user label that cannot be used; the message names it, the rule and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    /// The name is not `[a-zA-Z_][a-zA-Z0-9_]*`.
    #[error(
        "label name `{}` is not a Prometheus label name: letters, digits and `_`, not starting \
         with a digit ([a-zA-Z_][a-zA-Z0-9_]*); rename it",
        clip(name)
    )]
    BadName {
        /// The name as given.
        name: String,
    },
    /// The name starts with `__`, which Prometheus reserves for its own use.
    #[error(
        "label name `{}` starts with `__`, which Prometheus reserves for its own use; rename it",
        clip(name)
    )]
    Reserved {
        /// The name as given.
        name: String,
    },
    /// The name is one of robustream's own labels that say what the run computes.
    #[error(
        "label `{name}` is robustream's own (it says what the run computes) and cannot be \
         replaced; of the built-in labels only `device` and `camera` can be set; rename it"
    )]
    BuiltIn {
        /// The name.
        name: String,
    },
    /// The name is one Prometheus sets when it scrapes.
    #[error(
        "label `{name}` is set by Prometheus when it scrapes (the target's address and job), so \
         the dashboards join on it; rename it (to name the device, set `device`)"
    )]
    Scrape {
        /// The name.
        name: String,
    },
    /// `--run-label` without `=`.
    #[error("`{}` is not KEY=VALUE; write e.g. --run-label line=3", clip(text))]
    NotAssignment {
        /// The argument as given.
        text: String,
    },
}

/// Checks a user label's name: a Prometheus label name (`[a-zA-Z_][a-zA-Z0-9_]*`, not starting
/// with `__`), and not a built-in label other than `device` and `camera`, nor `instance` / `job`.
pub(crate) fn check_name(name: &str) -> Result<(), LabelError> {
    let mut chars = name.chars();
    let well_formed = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !well_formed {
        return Err(LabelError::BadName { name: name.into() });
    }
    if name.starts_with("__") {
        return Err(LabelError::Reserved { name: name.into() });
    }
    if BUILT_IN.contains(&name) {
        return Err(LabelError::BuiltIn { name: name.into() });
    }
    if SCRAPE.contains(&name) {
        return Err(LabelError::Scrape { name: name.into() });
    }
    Ok(())
}

/// `--run-label KEY=VALUE` split at the first `=` (the value may hold more, or be empty); the name
/// is checked when the config settles ([`check_name`]), with the config's labels.
pub(crate) fn parse_assignment(text: &str) -> Result<(String, String), LabelError> {
    match text.split_once('=') {
        Some((k, v)) => Ok((k.to_string(), v.to_string())),
        None => Err(LabelError::NotAssignment { text: text.into() }),
    }
}

/// The host name, trimmed: `/proc/sys/kernel/hostname`, else `/etc/hostname`, else `$HOSTNAME`;
/// `None` when none says one.
pub(crate) fn host_name() -> Option<String> {
    let read = |p: &str| crate::fsread::read_text_io(Path::new(p), 4096).ok();
    [
        read("/proc/sys/kernel/hostname"),
        read("/etc/hostname"),
        std::env::var("HOSTNAME").ok(),
    ]
    .into_iter()
    .flatten()
    .map(|h| h.trim().to_string())
    .find(|h| !h.is_empty())
}

/// A live source's own name for itself as the `camera` label: a URL loses its user name and
/// password (`rtsp://user:pw@host/x` → `rtsp://host/x`: they would be stored centrally), and a long
/// one is cut to [`CAMERA_MAX`] characters.
pub(crate) fn camera_label(described: &str) -> String {
    let text = match described.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => described.to_string(),
            }
        }
        None => described.to_string(),
    };
    crate::quote::clip_to(&text, CAMERA_MAX).into_owned()
}

/// A run's fleet labels in order: `device` (`host`, or empty when unknown), `camera` (empty for
/// files), `shard` when sharded, then the user's labels by name; a user `device` or `camera`
/// replaces the built-in value in place.
pub(crate) fn run_labels(
    host: Option<String>,
    camera: Option<String>,
    shard: Option<String>,
    user: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut labels = vec![
        ("device".to_string(), host.unwrap_or_default()),
        ("camera".to_string(), camera.unwrap_or_default()),
    ];
    if let Some(s) = shard {
        labels.push(("shard".into(), s));
    }
    for (k, v) in user {
        match labels.iter_mut().find(|(name, _)| name == k) {
            Some(slot) => slot.1 = v.clone(),
            None => labels.push((k.clone(), v.clone())),
        }
    }
    labels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names_follow_the_prometheus_rule() {
        for ok in ["line", "plant", "_x", "a1", "Line_3", "device", "camera"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "3line", "line-3", "plant.north", "é", "a b", "x=y"] {
            let e = check_name(bad).unwrap_err();
            assert!(matches!(e, LabelError::BadName { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("[a-zA-Z_][a-zA-Z0-9_]*"), "{e}");
        }
        let e = check_name("__name__").unwrap_err();
        assert!(matches!(e, LabelError::Reserved { .. }), "{e}");
        assert!(e.to_string().contains("`__name__` starts with `__`"), "{e}");
        for name in BUILT_IN {
            let e = check_name(name).unwrap_err();
            assert_eq!(e, LabelError::BuiltIn { name: name.into() });
            assert!(
                e.to_string()
                    .contains(&format!("label `{name}` is robustream's own")),
                "{e}"
            );
        }
        for name in SCRAPE {
            assert!(matches!(check_name(name), Err(LabelError::Scrape { .. })));
        }
        // A huge name is quoted clipped.
        let long = "-".repeat(10_000);
        assert!(check_name(&long).unwrap_err().to_string().len() < 400);
    }

    #[test]
    fn assignments_split_at_the_first_equals_sign() {
        assert_eq!(parse_assignment("line=3"), Ok(("line".into(), "3".into())));
        assert_eq!(
            parse_assignment("url=a=b"),
            Ok(("url".into(), "a=b".into()))
        );
        assert_eq!(parse_assignment("empty="), Ok(("empty".into(), "".into())));
        let e = parse_assignment("line").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`line` is not KEY=VALUE; write e.g. --run-label line=3"
        );
    }

    #[test]
    fn run_labels_put_user_labels_after_the_built_in_ones() {
        let user: BTreeMap<String, String> = [("plant", "north"), ("line", "3")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let labels = run_labels(Some("cam-host".into()), None, Some("2/8".into()), &user);
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("device", "cam-host"),
                ("camera", ""),
                ("shard", "2/8"),
                ("line", "3"),
                ("plant", "north")
            ]
        );
        // `device` and `camera` are replaced in place.
        let user: BTreeMap<String, String> = [("device", "line-3"), ("camera", "gate")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let labels = run_labels(None, Some("/dev/video0".into()), None, &user);
        assert_eq!(
            labels,
            [
                ("device".to_string(), "line-3".to_string()),
                ("camera".to_string(), "gate".to_string())
            ]
        );
    }

    #[test]
    fn camera_urls_lose_their_credentials_and_are_clipped() {
        assert_eq!(
            camera_label("rtsp://admin:s3cret@10.0.0.7:554/stream1"),
            "rtsp://10.0.0.7:554/stream1"
        );
        assert_eq!(camera_label("rtsp://10.0.0.7/a@b"), "rtsp://10.0.0.7/a@b");
        assert_eq!(camera_label("/dev/video0"), "/dev/video0");
        let long = format!("http://host/{}", "x".repeat(500));
        let clipped = camera_label(&long);
        assert!(clipped.chars().count() < CAMERA_MAX + 40, "{clipped}");
        assert!(clipped.starts_with("http://host/"), "{clipped}");
    }

    #[test]
    fn the_host_name_is_read_and_trimmed() {
        let host = host_name().expect("this machine has a host name");
        assert!(!host.is_empty());
        assert_eq!(host, host.trim());
    }
}
