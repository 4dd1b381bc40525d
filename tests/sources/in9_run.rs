//! Released layouts run as a user runs them, without a config file, on the real model:
//! - an IN-9 release (docs/in9.md#variations-and-release-layout,
//!   docs/in9.md#evaluation-preprocessing) given as `--source` alone: the kind is detected, the
//!   plan is the stored variations present (`original` → `clean`, `only_fg` → `background/only_fg`,
//!   …), stored images are evaluated as they are, and a 1000-class model is scored through the
//!   built-in ImageNet → IN-9 map (docs/in9.md#classes-and-the-imagenet-mapping; unmapped classes
//!   are wrong);
//! - `--source-kind in9` with `--scenarios`: only the stored variations of the plan are read;
//! - `--source-kind imagenet-c` (+ `--clean`): the released ImageNet-C layout without a config.

use std::path::Path;

use crate::util::*;
use serde_json::Value;

/// The model's 224² view of a photo, as `robustream apply --scenario clean --model` makes it (what a
/// stored variation at the input size holds; the clean record of the original sees the same pixels).
fn model_view(photo_name: &str, out: &Path) {
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let o = run(robustream()
        .args(["apply", "--scenario", "clean", "--model"])
        .arg(model())
        .arg(photo(photo_name))
        .arg(out));
    assert!(o.status.success(), "{}", text(&o.stderr));
}

/// A small IN-9 release from real photos:
/// - `original`: the quokka (in `00_dog`, with its `fg_mask` .npy), the motorcycle (`02_vehicle`) and
///   Chelsea the cat (`04_carnivore`) at their native sizes;
/// - `only_fg`: each original's model view under the original's stem (so its record must equal the
///   clean record, pixel for pixel the same input);
/// - `mixed_same`: only for the motorcycle, holding Chelsea's model view, named
///   `fg_<stem>_bg_<other>` as the release names mixed images.
fn in9_release(root: &Path) {
    let originals = [
        ("00_dog", "quokka", "quokka.jpg"),
        ("02_vehicle", "moto", "motorcycle_left.png"),
        ("04_carnivore", "chelsea", "chelsea.png"),
    ];
    for (class, stem, file) in originals {
        let dir = root.join("original/val").join(class);
        std::fs::create_dir_all(&dir).unwrap();
        let ext = Path::new(file).extension().unwrap().to_str().unwrap();
        std::fs::copy(photo(file), dir.join(format!("{stem}.{ext}"))).unwrap();
        model_view(
            file,
            &root
                .join("only_fg/val")
                .join(class)
                .join(format!("{stem}.png")),
        );
    }
    model_view(
        "chelsea.png",
        &root.join("mixed_same/val/02_vehicle/fg_moto_bg_chelsea.png"),
    );
    let masks = root.join("fg_mask/val/00_dog");
    std::fs::create_dir_all(&masks).unwrap();
    let mask = image::open(photo("quokka_mask.png")).unwrap().to_luma8();
    std::fs::write(
        masks.join("quokka.npy"),
        robustream::source::mask::mask_to_npy(&mask),
    )
    .unwrap();
}

fn run_in9(source: &Path, out: &Path, extra: &[&str]) -> Vec<Value> {
    let o = run(robustream()
        .args(["run", "--quiet", "--strict", "--model"])
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
        .args(extra));
    assert!(o.status.success(), "{}", text(&o.stderr));
    records(out)
}

fn keys_of<'a>(records: &'a [Value], frame: &str) -> Vec<&'a str> {
    records
        .iter()
        .filter(|r| r["frame"] == frame)
        .map(|r| r["scenario"].as_str().unwrap())
        .collect()
}

fn record<'a>(records: &'a [Value], frame: &str, key: &str) -> &'a Value {
    records
        .iter()
        .find(|r| r["frame"] == frame && r["scenario"] == key)
        .unwrap_or_else(|| panic!("no record {frame} {key}"))
}

#[test]
fn in9_release_runs_from_the_layout_alone_in_the_in9_label_space() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("bg_challenge");
    in9_release(&root);
    let in_to_in9 = robustream::source::in9::in_to_in9().unwrap();

    let out = d.path().join("run");
    let recs = run_in9(&root, &out, &[]);
    let s = summary(&out);
    assert_eq!(
        s["run"]["plan"],
        serde_json::json!(["clean", "background/only_fg", "background/mixed_same"])
    );
    assert!(
        s["run"]["source"]
            .as_str()
            .unwrap()
            .contains("(stored: original, only_fg, mixed_same; 7 images)"),
        "{}",
        s["run"]["source"]
    );
    // Per image, its stored variations under their keys, image by image in class order.
    assert_eq!(recs.len(), 7);
    assert_eq!(
        keys_of(&recs, "00_dog/quokka"),
        ["clean", "background/only_fg"]
    );
    assert_eq!(
        keys_of(&recs, "02_vehicle/moto"),
        ["clean", "background/only_fg", "background/mixed_same"]
    );
    assert_eq!(
        keys_of(&recs, "04_carnivore/chelsea"),
        ["clean", "background/only_fg"]
    );
    for r in &recs {
        // Truth from the folder prefix; pred is the IN-9 image of the 1000-class top-1, or -1.
        let frame = r["frame"].as_str().unwrap();
        assert_eq!(r["truth"], frame[..2].parse::<u64>().unwrap(), "{r}");
        let top1 = r["top5"][0].as_u64().unwrap() as usize;
        let pred = r["pred"].as_i64().unwrap();
        assert_eq!(pred, in_to_in9.map(top1).map_or(-1, |c| c as i64), "{r}");
    }
    // Stored images are evaluated as they are: the stored model view of the original scores exactly
    // as the original through the model's view (nothing re-generated from a mask).
    for frame in ["00_dog/quokka", "02_vehicle/moto", "04_carnivore/chelsea"] {
        let (a, b) = (
            record(&recs, frame, "clean"),
            record(&recs, frame, "background/only_fg"),
        );
        assert_eq!(
            (&a["top5"], &a["prob"]),
            (&b["top5"], &b["prob"]),
            "{frame}"
        );
    }
    // The motorcycle is predicted as an ImageNet class of IN-9's wheeled vehicles (2): a hit. Its
    // stored mixed_same image holds the cat, scored exactly as the cat's own record is.
    let moto = record(&recs, "02_vehicle/moto", "clean");
    assert_eq!(moto["pred"], 2, "{moto}");
    assert_eq!(moto["hit5"], true, "{moto}");
    let cat = record(&recs, "04_carnivore/chelsea", "clean");
    let mixed = record(&recs, "02_vehicle/moto", "background/mixed_same");
    assert_eq!(
        (&mixed["top5"], &mixed["prob"]),
        (&cat["top5"], &cat["prob"])
    );
    // The cat's top-1 (a domestic cat class) is one of the ImageNet classes IN-9 leaves unmapped: a
    // miss although IN-9's carnivores are its truth.
    assert_eq!(cat["pred"], -1, "{cat}");
    assert_eq!(
        in_to_in9.map(cat["top5"][0].as_u64().unwrap() as usize),
        None
    );
    assert_eq!(s["scenarios"]["clean"]["n_labelled"], 3);
    let top1 = s["scenarios"]["clean"]["top1"].as_f64().unwrap();
    assert!((top1 - 1.0 / 3.0).abs() < 1e-9, "{top1}");
}

#[test]
fn source_kind_in9_with_scenarios_reads_only_the_planned_variations() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("bg");
    in9_release(&root);
    // The plan asks for only_fg: mixed_same is not read, so no stored image falls outside the plan
    // (under --strict a stray one would fail the run).
    let out = d.path().join("only_fg");
    let recs = run_in9(
        &root,
        &out,
        &["--source-kind", "in9", "--scenarios", "background/only_fg"],
    );
    assert_eq!(recs.len(), 6);
    assert!(
        recs.iter()
            .all(|r| r["scenario"] != "background/mixed_same")
    );
    assert_eq!(
        keys_of(&recs, "02_vehicle/moto"),
        ["clean", "background/only_fg"]
    );

    // A plan with nothing stored for it: the originals are read with their fg_mask and the plan is
    // made on the fly (only the quokka has a mask; the others are reported, not fatal without
    // --strict).
    let out = d.path().join("fly");
    let o = run(robustream()
        .args(["run", "--quiet", "--source-kind", "in9", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .args(["--scenarios", "background/no_fg"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&out);
    assert_eq!(
        keys_of(&recs, "00_dog/quokka"),
        ["clean", "background/no_fg"]
    );
    assert_eq!(keys_of(&recs, "02_vehicle/moto"), ["clean"]);
    let s = summary(&out);
    assert!(
        s["run"]["source"]
            .as_str()
            .unwrap()
            .contains("(original; 3 images, 1 with fg_mask)"),
        "{}",
        s["run"]["source"]
    );
}

#[test]
fn source_kind_imagenet_c_runs_the_released_layout_without_a_config() {
    let d = tempfile::tempdir().unwrap();
    // <root>/<corruption>/<severity>/<wnid>/<file>: two stored contrast images of the moped class
    // (n03785016 = 665, the motorcycle's top-1; in fact its model view), and a clean val folder with
    // the photo itself.
    let root = d.path().join("imagenet-c");
    let clean = d.path().join("val");
    let wnid = "n03785016";
    model_view(
        "motorcycle_left.png",
        &root.join("contrast/3").join(wnid).join("moto.png"),
    );
    model_view(
        "motorcycle_left.png",
        &root.join("contrast/5").join(wnid).join("moto.png"),
    );
    std::fs::create_dir_all(clean.join(wnid)).unwrap();
    std::fs::copy(
        photo("motorcycle_left.png"),
        clean.join(wnid).join("moto.png"),
    )
    .unwrap();

    // Without --source-kind the folder is an ImageFolder tree whose `contrast` class is unknown.
    let out = d.path().join("as_folder");
    let o = run(robustream()
        .args(["run", "--quiet", "--model"])
        .arg(model())
        .arg("--source")
        .arg(&root)
        .arg("--out")
        .arg(&out));
    assert!(!o.status.success());

    let out = d.path().join("run");
    let o = run(robustream()
        .args(["run", "--quiet", "--strict", "--source-kind", "imagenet-c"])
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(&root)
        .arg("--clean")
        .arg(&clean)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&out);
    let mut keys: Vec<&str> = recs
        .iter()
        .map(|r| r["scenario"].as_str().unwrap())
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["clean", "corruption/contrast/3", "corruption/contrast/5"]
    );
    assert!(recs.iter().all(|r| r["truth"] == 665), "{recs:?}");
    let s = summary(&out);
    assert_eq!(
        s["run"]["plan"],
        serde_json::json!(["clean", "corruption/contrast/3", "corruption/contrast/5"])
    );
    // The stored images are the clean image's model view: same scores under every key.
    assert!(recs.iter().all(|r| r["top5"] == recs[0]["top5"]));
}
