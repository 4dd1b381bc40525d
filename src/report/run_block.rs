//! `summary.json`'s `run` block, typed: what the run was (written before the first frame, so an
//! interim summary has it), how it ended, and what the post passes and `robustream merge` add. The
//! run writes it (`run.rs`), and `run --resume`, `robustream merge`, `compare` and the reports
//! read it back by field, so a renamed field is a compile error, not a merge that silently finds
//! nothing. Fields in the order they are written (docs/output.md#run-directory); an absent field
//! reads as its default (files of older formats, docs/output.md#format-changelog), and a field this
//! robustream does not know is kept, in place after the known ones, in [`RunBlock::extra`].

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::metrics::in9::ChallengeEntry;

/// How a run ended (`run.end`); `running` in the summaries written while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RunEnd {
    /// An interim summary: the run had not ended when it was written (or was killed since).
    Running,
    /// The source ended and every frame was evaluated.
    Completed,
    /// `--limit` frames were evaluated.
    Limit,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// `--duration` ran out.
    Duration,
    /// An error ended it (`run.error` says which).
    Failed,
}

impl RunEnd {
    /// The word `summary.json` writes.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Limit => "limit",
            Self::Interrupted => "interrupted",
            Self::Duration => "duration",
            Self::Failed => "failed",
        }
    }
}

/// `run.shard`: the part of a sharded run this one is (docs/deploy.md#shards).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ShardEntry {
    /// This shard, `0..count`.
    pub(crate) index: u64,
    /// How many shards the run is split into.
    pub(crate) count: u64,
    /// Where the shard was given: `--shard`, `ROBUSTREAM_SHARD`, `JOB_COMPLETION_INDEX` or
    /// `SLURM_ARRAY_TASK_ID`.
    pub(crate) from: String,
}

/// `run.fingerprint`: what decides the run's numbers (`fingerprint.rs`,
/// docs/deploy.md#compatible-runs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Fingerprint {
    /// FNV-1a of `parts`' JSON, 16 hex digits.
    pub(crate) hash: String,
    /// The parts, in order; compared part by part (`first_difference` in `fingerprint.rs`).
    pub(crate) parts: Map<String, Value>,
}

/// `run` of summary.json (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RunBlock {
    /// robustream's version.
    pub(crate) robustream: String,
    /// The config file, when the run had one.
    pub(crate) config: Option<String>,
    /// The model description (TOML).
    pub(crate) model: String,
    /// The ONNX file.
    pub(crate) onnx: String,
    /// The engine in words: provider, threads, batch sizes.
    pub(crate) engine: String,
    /// ONNX Runtime's build.
    pub(crate) onnxruntime: String,
    /// The source in words.
    pub(crate) source: String,
    /// The seed all randomness is keyed by.
    pub(crate) seed: u64,
    /// Where scenarios apply (`model_input` | `source`).
    pub(crate) stage: crate::scenario::ScenarioStage,
    /// The JPEG quality of the round trip after each corruption, if any.
    pub(crate) jpeg_after_corruption: Option<u8>,
    /// The plan's scenario keys, in order.
    pub(crate) plan: Vec<String>,
    /// The schedule in words.
    pub(crate) schedule: String,
    /// Scenario workers (0: one per core).
    pub(crate) workers: usize,
    /// The largest engine batch.
    pub(crate) max_batch: usize,
    /// How long a partial batch waits.
    pub(crate) max_wait_ms: u64,
    /// The engine's warm-up per batch size, ms (keys: batch sizes, in the order warmed).
    #[serde(with = "crate::ordered")]
    pub(crate) engine_warmup_ms: Vec<(String, f64)>,
    /// `--strict`.
    pub(crate) strict: bool,
    /// `--limit`.
    pub(crate) limit: Option<u64>,
    /// `--duration`, seconds.
    pub(crate) duration_s: Option<f64>,
    /// Start, Unix seconds.
    pub(crate) started_unix: u64,
    /// Where variants are made: `cpu` | `gpu`.
    pub(crate) scenarios_on: String,
    /// The GPU that makes variants (`run.gpu`), when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu: Option<Value>,
    /// The scenarios the GPU makes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gpu_scenarios: Option<Vec<String>>,
    /// The scenarios the CPU makes beside the GPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpu_fallback: Option<Vec<String>>,
    /// In a shard's run, which shard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shard: Option<ShardEntry>,
    /// What decides the numbers (absent in summaries of robustream before it existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fingerprint: Option<Fingerprint>,
    /// The fleet labels, in order (docs/prometheus.md#fleets).
    #[serde(with = "crate::ordered", skip_serializing_if = "Vec::is_empty")]
    pub(crate) labels: Vec<(String, String)>,
    /// Resident memory over the run (the watcher, `watch.rs`), at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) rss_mib: Option<Value>,
    /// The main pass's CPU use, at the end (null where it could not be measured).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) cpu: Option<Option<Value>>,
    /// Variants whose scenario failed, at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) variants_failed: Option<u64>,
    /// End, Unix seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ended_unix: Option<u64>,
    /// Seconds from the start to this summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) wall_s: Option<f64>,
    /// How it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) end: Option<RunEnd>,
    /// At the end: the error that ended it, or null.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) error: Option<Option<String>>,
    /// What the source says of itself at the end (a stream's reconnects, a camera's drops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) source_report: Option<Value>,
    /// What the engine's batches add up to (docs/output.md#runbatches).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) batches: Option<Value>,
    /// The backgrounds challenge's entry (the challenge pass's), with `--challenge`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) challenge: Option<ChallengeEntry>,
    /// In a merged run, the shard runs' directories, in shard order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) merged_from: Option<Vec<String>>,
    /// In a merged run, how many shards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shards: Option<u64>,
    /// Fields this robustream does not know (a newer minor format's), kept in order.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl RunBlock {
    /// Whether nothing is known of the run (`robustream report` on records without a summary):
    /// written as `{}`.
    pub(crate) fn is_unknown(&self) -> bool {
        *self == Self::default()
    }

    /// The block as JSON, fields in order (the Markdown and HTML reports list them).
    pub(crate) fn to_value(&self) -> Value {
        match self.is_unknown() {
            true => Value::Object(Map::new()),
            // Cannot fail: every field serialises, every map key is a string.
            false => serde_json::to_value(self).unwrap_or_default(),
        }
    }

    /// A block from JSON, for tests that set a few fields (panics on a malformed one).
    #[cfg(test)]
    pub(crate) fn from_json(v: Value) -> Self {
        serde_json::from_value(v).expect("a test's run block is well formed")
    }

    /// Whether the run has ended (its final summary was written).
    #[cfg(test)]
    fn ended(&self) -> bool {
        self.end.is_some_and(|e| e != RunEnd::Running)
    }

    /// The value of a fleet label.
    #[cfg(test)]
    pub(crate) fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `Summary::run` as written: `{}` when nothing is known ([`RunBlock::is_unknown`]).
pub(crate) fn serialize_run<S: serde::Serializer>(run: &RunBlock, s: S) -> Result<S::Ok, S::Error> {
    match run.is_unknown() {
        true => Map::new().serialize(s),
        false => run.serialize(s),
    }
}

/// `Summary::run` as read: null (hand-made summaries) as nothing known.
pub(crate) fn deserialize_run<'de, D: Deserializer<'de>>(d: D) -> Result<RunBlock, D::Error> {
    Option::<RunBlock>::deserialize(d).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_interim_and_a_final_block_read_back_as_written() {
        let interim = json!({
            "robustream": "0.1.0", "config": null, "model": "m.toml", "onnx": "m.onnx",
            "engine": "e", "onnxruntime": "ort", "source": "s", "seed": 0, "stage": "model_input",
            "jpeg_after_corruption": null, "plan": ["clean"], "schedule": "all",
            "workers": 0, "max_batch": 8, "max_wait_ms": 5, "engine_warmup_ms": {"8": 1.5, "16": 2.0},
            "strict": false, "limit": null, "duration_s": null, "started_unix": 1,
            "scenarios_on": "cpu",
            "fingerprint": {"hash": "00", "parts": {"seed": 0, "plan": ["clean"]}},
            "labels": {"device": "vm", "camera": ""}, "wall_s": 0.5, "end": "running"
        });
        let run: RunBlock = serde_json::from_value(interim.clone()).unwrap();
        assert_eq!(serde_json::to_value(&run).unwrap(), interim);
        assert!(!run.ended());
        assert_eq!(run.label("device"), Some("vm"));
        let mut ended = interim.clone();
        let o = ended.as_object_mut().unwrap();
        o.remove("wall_s");
        o.remove("end");
        for (k, v) in [
            ("rss_mib", json!({"max_mib": 1.0})),
            ("cpu", Value::Null),
            ("variants_failed", json!(0)),
            ("ended_unix", json!(2)),
            ("wall_s", json!(1.0)),
            ("end", json!("completed")),
            ("error", Value::Null),
            ("source_report", json!({"kind": "file"})),
            ("batches", json!({"count": 1})),
            ("challenge", json!({"applicable": false})),
            ("a_newer_field", json!([1])),
        ] {
            o.insert(k.into(), v);
        }
        let run: RunBlock = serde_json::from_value(ended.clone()).unwrap();
        assert_eq!(run.cpu, Some(None));
        assert_eq!(run.error, Some(None));
        assert_eq!(run.extra.len(), 1);
        assert!(run.ended());
        assert_eq!(serde_json::to_string(&run).unwrap(), ended.to_string());
    }

    #[test]
    fn nothing_known_is_an_empty_object_and_wrong_types_are_refused() {
        assert_eq!(RunBlock::default().to_value(), json!({}));
        let run: RunBlock = serde_json::from_value(json!({})).unwrap();
        assert!(run.is_unknown());
        assert!(serde_json::from_value::<RunBlock>(json!({"end": "paused"})).is_err());
        assert!(serde_json::from_value::<RunBlock>(json!({"seed": "x"})).is_err());
    }

    #[test]
    fn a_summary_or_record_of_a_newer_format_fails_with_one_line_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let summary = d.path().join("summary.json");
        std::fs::write(&summary, r#"{"format": 9, "run": {}, "frames": {}}"#).unwrap();
        let e = crate::report::summary::Summary::read(&summary)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "summary.json: not a valid summary.json: format 9 was written by a newer robustream"
            ),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        let records = d.path().join("records.jsonl");
        let line = r#"{"format":9,"frame":"a","scenario":"clean","truth":null,"pred":0,"top5":[0],"prob":[1.0],"hit5":null,"ms":{}}"#;
        std::fs::write(&records, format!("{}\n{line}\n", line.replace("9", "2"))).unwrap();
        let e = crate::report::jsonl::read_records(&records)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("records.jsonl") && e.contains("2") && e.contains("format 9"),
            "{e}"
        );
        // Format 1 (no field) and this format read.
        std::fs::write(
            &records,
            format!("{}\n", line.replace(r#""format":9,"#, "")),
        )
        .unwrap();
        assert_eq!(
            crate::report::jsonl::read_records(&records)
                .unwrap()
                .records
                .len(),
            1
        );
    }
}
