//! What decides a run's numbers, written as `run.fingerprint` in summary.json: two runs with the
//! same fingerprint evaluate the same frames the same way, so a resumed run may go on where a
//! killed one stopped and shard runs may be merged (docs/deploy.md#compatible-runs).
//!
//! The parts, in order: robustream's version; the model description, ONNX file and class map by
//! content (a 64-bit FNV-1a hash of their bytes, with their sizes); the source as configured; the
//! plan, schedule, seed, scenario stage, JPEG round trip and limit; the engine's provider and
//! precision and where variants are made (CPU or GPU: the GPU's random corruptions draw other
//! numbers); the background pool size and the live window (both change numbers in the summary);
//! the post passes' and metric families' settings. Not in it: threads, workers, batching of the
//! main pass, outputs, paths of the run directory — they change speed, not numbers. The hash is
//! FNV-1a over the parts' JSON.

use std::io::Read;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::app::config::RunConfig;
use crate::model::ModelDesc;
use crate::report::run_block::Fingerprint;

/// The fingerprint of a run: `{"hash": "<16 hex digits>", "parts": {…}}`.
pub(crate) fn of_run(
    config: &RunConfig,
    model: &ModelDesc,
    plan: &[String],
    schedule: &str,
    scenarios_on_gpu: bool,
) -> Fingerprint {
    let class_map = config
        .dataset
        .class_map
        .as_ref()
        .or(model.class_map.as_ref());
    let e = &config.engine;
    let challenge = config.challenge.enabled.then(|| {
        json!({
            "foregrounds": config.challenge.foregrounds,
            "backgrounds": config.challenge.backgrounds,
            // Early stop is per engine batch of composites.
            "max_batch": config.pipeline.max_batch,
        })
    });
    let parts: Map<String, Value> = [
        ("robustream", json!(env!("CARGO_PKG_VERSION"))),
        ("model", json!(file_hash(&model.path))),
        ("onnx", json!(file_hash(&model.onnx))),
        ("class_map", json!(class_map.map(|p| file_hash(p)))),
        ("source", json!(format!("{:?}", config.source))),
        ("plan", json!(plan)),
        ("schedule", json!(schedule)),
        ("seed", json!(config.seed)),
        ("stage", json!(format!("{:?}", config.stage))),
        ("jpeg_after_corruption", json!(config.jpeg_after_corruption)),
        ("limit", json!(config.limit)),
        ("engine", json!(format!("{:?} fp16={}", e.provider, e.fp16))),
        (
            "scenarios_on",
            json!(if scenarios_on_gpu { "gpu" } else { "cpu" }),
        ),
        ("pool", json!(config.pipeline.pool)),
        ("window", json!(config.report.window)),
        ("challenge", json!(challenge)),
        // Structured: `robustream merge` reads the bound of the saliency sample from it.
        (
            "saliency",
            json!(config.saliency.enabled.then(|| {
                let s = &config.saliency;
                json!({"frames": s.frames, "patch": s.patch, "stride": s.stride, "maps": s.maps})
            })),
        ),
        ("metrics", json!(format!("{:?}", config.metrics))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let hash = format!(
        "{:016x}",
        fnv1a(
            Value::Object(parts.clone()).to_string().as_bytes(),
            FNV_OFFSET
        )
    );
    Fingerprint { hash, parts }
}

/// The first part in which `a` and `b` differ, with both values as written (clipped), or `None`
/// when they agree. Parts only one of them has count as differing.
pub(crate) fn first_difference(
    a: &Fingerprint,
    b: &Fingerprint,
) -> Option<(String, String, String)> {
    let (pa, pb) = (&a.parts, &b.parts);
    let clip = |v: Option<&Value>| match v {
        Some(v) => crate::quote::clip_to(&v.to_string(), 160).into_owned(),
        None => "(absent)".to_string(),
    };
    let keys = pa.keys().chain(pb.keys().filter(|k| !pa.contains_key(*k)));
    for k in keys {
        if pa.get(k) != pb.get(k) {
            return Some((k.clone(), clip(pa.get(k)), clip(pb.get(k))));
        }
    }
    let hash = |f: &Fingerprint| Value::String(f.hash.clone()).to_string();
    (a.hash != b.hash).then(|| ("hash".to_string(), hash(a), hash(b)))
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// `"<hash> <bytes>"` of a file's content; `"unreadable: <error>"` when it cannot be read (the
/// run has read it already, so that is rare; the fingerprint then differs from a readable one).
fn file_hash(path: &Path) -> String {
    let hash = || -> std::io::Result<(u64, u64)> {
        let mut file = std::fs::File::open(path)?;
        let mut buf = vec![0u8; 1 << 20];
        let (mut h, mut n) = (FNV_OFFSET, 0u64);
        loop {
            let got = file.read(&mut buf)?;
            if got == 0 {
                return Ok((h, n));
            }
            h = fnv1a(&buf[..got], h);
            n += got as u64;
        }
    };
    match hash() {
        Ok((h, n)) => format!("{h:016x} {n}"),
        Err(e) => format!("unreadable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_differing_part_is_named() {
        let fingerprint = |v: Value| serde_json::from_value::<Fingerprint>(v).unwrap();
        let a = json!({"hash": "1", "parts": {"robustream": "0.1", "seed": 0, "plan": ["clean"]}});
        let mut b = a.clone();
        assert_eq!(
            first_difference(&fingerprint(a.clone()), &fingerprint(b.clone())),
            None
        );
        b["parts"]["seed"] = json!(1);
        b["parts"]["plan"] = json!(["clean", "x"]);
        b["hash"] = json!("2");
        let (a, b) = (fingerprint(a), fingerprint(b));
        assert_eq!(
            first_difference(&a, &b),
            Some(("seed".into(), "0".into(), "1".into()))
        );
        let c = fingerprint(
            json!({"hash": "1", "parts": {"robustream": "0.1", "seed": 0, "plan": ["clean"], "new": 1}}),
        );
        let mut d = a.clone();
        d.hash = "3".into();
        assert_eq!(
            first_difference(&a, &d),
            Some(("hash".into(), "\"1\"".into(), "\"3\"".into()))
        );
        assert_eq!(
            first_difference(&a, &c),
            Some(("new".into(), "(absent)".into(), "1".into()))
        );
    }

    #[test]
    fn file_hashes_follow_content() {
        let d = tempfile::tempdir().unwrap();
        let (p, q) = (d.path().join("a"), d.path().join("b"));
        std::fs::write(&p, b"abc").unwrap();
        std::fs::write(&q, b"abc").unwrap();
        assert_eq!(file_hash(&p), file_hash(&q));
        // FNV-1a 64 of "abc".
        assert_eq!(file_hash(&p), "e71fa2190541574b 3");
        std::fs::write(&q, b"abd").unwrap();
        assert_ne!(file_hash(&p), file_hash(&q));
        assert!(file_hash(&d.path().join("none")).starts_with("unreadable: "));
    }
}
