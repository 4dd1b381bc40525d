//! Sharding's own cost (docs/deploy.md#how-frames-are-split): which shard a frame id belongs to,
//! and a shard's pass over a manifest of 200,000 items — ImageNet-val size ×4 — against reading
//! every item (the unsharded run). The items are files that do not exist, so what is measured is
//! the source's own work per item (a failed open for every item read, nothing for an item passed
//! over), not image decoding, which a shard saves on top.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use robustream::frame::LabelSpace;
use robustream::shard::Shard;
use robustream::source::{ItemFilter, RawSourceConfig, Source};

const ITEMS: usize = 200_000;

fn ids() -> Vec<String> {
    (0..ITEMS)
        .map(|i| format!("n{:08}/ILSVRC2012_val_{i:08}.JPEG", 1_440_764 + i % 1000))
        .collect()
}

/// A manifest of `ITEMS` rows naming missing files, and the source over it.
fn open(manifest: &std::path::Path) -> Box<dyn Source> {
    let raw: RawSourceConfig =
        toml::from_str(&format!("path = {:?}", manifest.display().to_string()))
            .expect("a source table");
    let settled = raw.settle().expect("a manifest source");
    let labels = LabelSpace::new(vec!["espresso".into()]);
    robustream::source::open(&settled, &labels).expect("the manifest opens")
}

/// Goes through the source as admission does: passing over what `wanted` refuses, reading the
/// rest. Returns the items read.
fn sweep(source: &mut dyn Source, wanted: Option<&ItemFilter>) -> usize {
    let mut read = 0;
    loop {
        if let Some(w) = wanted
            && source.pass_over(w, u64::MAX) > 0
        {
            continue;
        }
        match source.next_frame() {
            Some(_) => read += 1,
            None => return read,
        }
    }
}

fn bench(c: &mut Criterion) {
    let ids = ids();
    let mut g = c.benchmark_group("shard");
    g.sample_size(10);
    g.bench_function("owns, 200k ids, 8 shards", |b| {
        let s = Shard { index: 3, count: 8 };
        b.iter(|| ids.iter().filter(|id| s.owns(id)).count())
    });

    let dir = tempfile::tempdir().expect("a temporary directory");
    let manifest = dir.path().join("val.csv");
    let mut text = String::from("path,label\n");
    for id in &ids {
        text.push_str(id);
        text.push_str(",espresso\n");
    }
    std::fs::write(&manifest, text).expect("the manifest is written");
    g.bench_function("manifest 200k: open + read every item (unsharded)", |b| {
        b.iter(|| sweep(open(&manifest).as_mut(), None))
    });
    let shard = Shard { index: 0, count: 8 };
    let wanted: ItemFilter = Arc::new(move |id: &str| shard.owns(id));
    g.bench_function("manifest 200k: open + shard 0/8 (pass over 7/8)", |b| {
        b.iter(|| sweep(open(&manifest).as_mut(), Some(&wanted)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
