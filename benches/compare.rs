//! `robustream compare` on a run pair of ImageNet-C sweep size: 2,000 frames × (clean + 19 × 5)
//! scenarios, 192,000 records a side, labelled, every record paired. Reading a run directory
//! (`Input::load`: records.jsonl parsed and the summary rebuilt) and the comparison itself
//! (`Comparison::new`: pairing, exact McNemar, Newcombe intervals, metric rows, three rules).

use criterion::{Criterion, criterion_group, criterion_main};
use robustream::key::CORRUPTIONS;
use robustream::metrics::{Record, Timings};
use robustream::report::compare::rules::parse_rules;
use robustream::report::compare::{Comparison, Input};
use robustream::report::jsonl::RecordWriter;
use robustream::report::summary::Summary;

const FRAMES: usize = 2000;

/// A run's records: frame `f`'s truth is `f % 1000`; scenario `s` is right unless
/// `(f · 7 + s · salt) % 10 < s % 5 + 1` (harder at higher severity, different per side).
fn records(salt: usize) -> Vec<Record> {
    let mut keys = vec!["clean".to_string()];
    for (c, _) in CORRUPTIONS {
        for s in 1..=5 {
            keys.push(format!("corruption/{c}/{s}"));
        }
    }
    let mut out = Vec::with_capacity(FRAMES * keys.len());
    for f in 0..FRAMES {
        let truth = f % 1000;
        for (s, key) in keys.iter().enumerate() {
            let wrong = s > 0 && (f * 7 + s * salt) % 10 < s % 5 + 1;
            let top = if wrong { (truth + 1) % 1000 } else { truth };
            out.push(Record {
                format: robustream::contract::Format,
                frame: format!("val/{f:05}.JPEG"),
                seq: None,
                scenario: key.clone(),
                truth: Some(truth),
                pred: top as i64,
                top5: vec![
                    top,
                    (top + 2) % 1000,
                    (top + 3) % 1000,
                    (top + 4) % 1000,
                    (top + 5) % 1000,
                ],
                prob: vec![0.6, 0.1, 0.1, 0.1, 0.1],
                hit5: Some(!wrong),
                ms: Timings::new(),
                boxes: None,
                groups: Default::default(),
            });
        }
    }
    out
}

/// A run directory holding `records` and the summary made from them.
fn run_dir(records: &[Record]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut w = RecordWriter::create(&dir.path().join("records.jsonl")).expect("records.jsonl");
    for frame in records.chunks(96) {
        w.write_batch(frame).expect("write");
    }
    let summary = Summary::recompute(records, None);
    std::fs::write(dir.path().join("summary.json"), summary.to_json()).expect("summary.json");
    dir
}

fn bench(c: &mut Criterion) {
    let (a, b) = (records(3), records(5));
    let (da, db) = (run_dir(&a), run_dir(&b));
    let mut g = c.benchmark_group("compare");
    g.sample_size(10);
    g.bench_function("load_run_192k_records", |bench| {
        bench.iter(|| Input::load(da.path(), "baseline").expect("load"))
    });
    let (ia, ib) = (
        Input::load(da.path(), "baseline").expect("load"),
        Input::load(db.path(), "candidate").expect("load"),
    );
    let rules = parse_rules(["top1_drop>2%,top1_drop[corruption/*/5]>5%,mce>+1%"]).expect("rules");
    g.bench_function("compare_192k_paired", |bench| {
        bench.iter(|| Comparison::new(&ia, &ib, Some(0.05), &rules))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
