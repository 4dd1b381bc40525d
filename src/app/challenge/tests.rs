use super::*;
use serde_json::json;

fn bottom_k(seed: u64, ids: &[String], k: usize) -> Vec<String> {
    let mut r = BottomK::new(k, seed, "t");
    for id in ids {
        if let Some(s) = r.decide(id) {
            r.place(s, id, 0, RgbImage::new(1, 1), GrayImage::new(1, 1));
        }
    }
    assert_eq!(r.seen(), ids.len() as u64);
    r.into_foregrounds().into_iter().map(|f| f.id).collect()
}

#[test]
fn bottom_k_keeps_the_smallest_ranks_in_source_order() {
    let ids: Vec<String> = (0..200).map(|i| format!("f{i}")).collect();
    let a = bottom_k(1, &ids, 4);
    assert_eq!(a.len(), 4);
    assert_eq!(a, bottom_k(1, &ids, 4));
    assert_ne!(a, bottom_k(2, &ids, 4));
    // Exactly the four smallest ranks, in source order, and not simply the first four.
    let mut ranked: Vec<(u64, usize)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (rank(1, id, "t"), i))
        .collect();
    ranked.sort_unstable();
    let mut want: Vec<usize> = ranked[..4].iter().map(|&(_, i)| i).collect();
    want.sort_unstable();
    let idx: Vec<usize> = a.iter().map(|s| s[1..].parse().unwrap()).collect();
    assert_eq!(idx, want);
    assert!(idx.iter().any(|&i| i >= 4), "{idx:?}");
    // Fewer candidates than the bound: all of them.
    assert_eq!(bottom_k(1, &ids[..3], 4), ids[..3].to_vec());
}

#[test]
fn bottom_k_of_parts_merges_to_the_bottom_k_of_the_whole() {
    let ids: Vec<String> = (0..300).map(|i| format!("frame-{i}")).collect();
    let whole = bottom_k(7, &ids, 5);
    // Three parts (any split that keeps source order within a part), each keeping its own five.
    let mut union: Vec<(u64, usize, String)> = Vec::new();
    for part in 0..3 {
        let mine: Vec<String> = ids
            .iter()
            .enumerate()
            .filter(|(i, _)| (i * 7 + i / 5) % 3 == part)
            .map(|(_, id)| id.clone())
            .collect();
        for id in bottom_k(7, &mine, 5) {
            let at = ids.iter().position(|x| *x == id).unwrap();
            union.push((rank(7, &id, "t"), at, id));
        }
    }
    union.sort();
    union.truncate(5);
    union.sort_by_key(|&(_, at, _)| at);
    let merged: Vec<String> = union.into_iter().map(|(_, _, id)| id).collect();
    assert_eq!(merged, whole);
}

#[test]
fn composite_takes_the_foreground_exactly_where_the_mask_is_set() {
    let fg = RgbImage::from_fn(3, 2, |x, y| image::Rgb([x as u8, y as u8, 200]));
    let bg = RgbImage::from_pixel(3, 2, image::Rgb([9, 9, 9]));
    let mask = GrayImage::from_fn(3, 2, |x, y| image::Luma([if x == y { 255 } else { 0 }]));
    let mut out = RgbImage::new(0, 0);
    composite(&fg, &mask, &bg, &mut out);
    for (x, y, p) in out.enumerate_pixels() {
        let want = if x == y {
            *fg.get_pixel(x, y)
        } else {
            image::Rgb([9, 9, 9])
        };
        assert_eq!(*p, want, "({x},{y})");
    }
}

#[test]
fn background_order_is_a_keyed_permutation() {
    let a = background_order(3, "f", 50);
    let mut s = a.clone();
    s.sort_unstable();
    assert_eq!(s, (0..50).collect::<Vec<_>>());
    assert_eq!(a, background_order(3, "f", 50));
    assert_ne!(a, background_order(3, "g", 50));
    assert_ne!(a, (0..50).collect::<Vec<_>>());
    assert!(background_order(0, "f", 0).is_empty());
}

#[test]
fn keep_ranked_bounds_and_keeps_original_order() {
    let ids: Vec<String> = (0..20).map(|i| format!("b{i}")).collect();
    let kept = keep_ranked(ids.clone(), 7, 5, |s| s.as_str());
    assert_eq!(kept.len(), 5);
    let pos: Vec<usize> = kept
        .iter()
        .map(|k| ids.iter().position(|i| i == k).unwrap())
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(kept, keep_ranked(ids.clone(), 7, 5, |s| s.as_str()));
    assert_eq!(keep_ranked(ids.clone(), 7, 50, |s| s.as_str()), ids);
}

/// Scores class 0 for a composite whose first input value (a background pixel) is dark, NaN
/// for a bright one.
struct NanOnBright {
    len: usize,
}

impl Engine for NanOnBright {
    fn describe(&self) -> String {
        "NaN on bright".into()
    }
    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        Ok((0..batch)
            .flat_map(|i| match input[i * self.len] > 128.0 {
                true => [f32::NAN; 3],
                false => [5.0, 0.0, 0.0],
            })
            .collect())
    }
}

/// A description of a 3-class model (labels a, b, c) with a `width`×`height` input, resized
/// to `shorter` and centre-cropped, written into `dir` (the ONNX file is never loaded).
fn three_class_model(dir: &Path, width: u32, height: u32, shorter: u32) -> ModelDesc {
    std::fs::write(dir.join("labels.txt"), "a\nb\nc\n").unwrap();
    let p = dir.join("m.toml");
    let desc = format!(
        "onnx = \"m.onnx\"\nlabels = \"labels.txt\"\n[input]\nname = \"x\"\n\
             layout = \"nchw\"\nheight = {height}\nwidth = {width}\n[preprocess]\n\
             resize_shorter = {shorter}\ncrop = \"center\"\nmean = [0.0, 0.0, 0.0]\n\
             std = [1.0, 1.0, 1.0]\n[output]\nname = \"y\"\nkind = \"logits\"\nclasses = 3\n"
    );
    std::fs::write(&p, desc).unwrap();
    ModelDesc::load(&p).unwrap()
}

#[test]
fn composites_the_model_cannot_score_are_counted_not_scored() {
    let d = tempfile::tempdir().unwrap();
    let model = three_class_model(d.path(), 8, 8, 8);
    let labels = crate::frame::LabelSpace::new(vec!["a".into(), "b".into(), "c".into()]);
    let class_map = ClassMap::identity(&labels);
    let mask = GrayImage::from_fn(8, 8, |x, y| {
        image::Luma([u8::from((2..6).contains(&x) && (2..6).contains(&y)) * 255])
    });
    // Class 0 survives the dark background and is not scored on the bright one: undecided.
    // Class 1 is fooled on the dark one: vulnerable whatever the bright one would have said.
    let fgs: Vec<Foreground> = (0..2)
        .map(|truth| Foreground {
            id: format!("fg{truth}"),
            truth,
            image: RgbImage::from_pixel(8, 8, image::Rgb([60; 3])),
            mask: mask.clone(),
            order: truth as u64,
            rank: 0,
        })
        .collect();
    let bgs: Vec<Background> = [("dark", 10), ("bright", 240)]
        .into_iter()
        .map(|(id, v)| Background {
            id: id.into(),
            image: RgbImage::from_pixel(8, 8, image::Rgb([v; 3])),
        })
        .collect();
    let jsonl = d.path().join("challenge.jsonl");
    let mut run = ChallengeRun {
        model: &model,
        class_map: &class_map,
        seed: 1,
        batch: 2,
        jsonl: &jsonl,
        quiet: true,
        strict: false,
    };
    let mut engine = NanOnBright {
        len: model.input_len(),
    };
    let stop = AtomicBool::new(false);
    let r = evaluate(&run, &mut engine, &fgs, &bgs, &stop).unwrap();
    let t = r.tally;
    assert_eq!((t.composites, t.failed), (4, 2), "{t:?}");
    assert_eq!(
        (t.foregrounds, t.vulnerable, t.undecided),
        (1, 1, 1),
        "{t:?}"
    );
    assert_eq!(t.accuracy(), Some(0.0));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (
            &lines[0]["undecided"],
            &lines[0]["failed"],
            &lines[0]["vulnerable"]
        ),
        (&json!(true), &json!(1), &json!(false))
    );
    assert_eq!(
        (
            &lines[1]["undecided"],
            &lines[1]["failed"],
            &lines[1]["fooled_by"]
        ),
        (&json!(false), &json!(1), &json!("dark"))
    );
    // --strict: the first such composite fails the pass, naming frame and background.
    run.strict = true;
    let e = evaluate(&run, &mut engine, &fgs, &bgs, &stop).unwrap_err();
    assert_eq!(
        e.to_string(),
        "challenge: frame fg0 on background bright: the model's output holds NaN/inf (NaN); \
         check that the model description's `[preprocess]` normalises the input as the model \
         was trained (docs/model-description.md#preprocess), then the model alone on a clean \
         image (`python3 scripts/check_model.py --model MODEL.onnx IMAGE`, with \
         EfficientNet-Lite0's preprocessing)"
    );
}

#[test]
fn pool_backgrounds_from_the_view_equal_the_pipelines_at_the_model_input_stage() {
    use crate::frame::{BBox, Regions};
    use crate::scenario::ScenarioStage;
    let d = tempfile::tempdir().unwrap();
    let model = three_class_model(d.path(), 64, 48, 56);
    let pipeline = crate::scenario::pool::pool_maker(&model, ScenarioStage::ModelInput);
    let ours = crate::scenario::pool::pool_maker(&model, ScenarioStage::Native);
    let mut view = ModelView::new(&model);
    for (seed, boxes) in [(1, vec![]), (2, vec![BBox::new(30, 20, 90, 70)])] {
        let s = crate::scene::random_scene(150, 100, seed);
        let native = Regions {
            mask: Some(s.mask.clone()),
            boxes: boxes.clone(),
        };
        let small = Regions {
            mask: Some(view.mask(&s.mask, MaskResize::Nearest)),
            boxes: view.boxes(&boxes, s.image.dimensions()),
        };
        let want = pipeline(&s.image, &native);
        assert!(want.is_some());
        assert_eq!(ours(&view.image(&s.image), &small), want, "seed {seed}");
    }
}

#[test]
fn config_bounds_are_checked() {
    assert!(ChallengeConfig::default().validate().is_ok());
    let c = ChallengeConfig {
        backgrounds: 0,
        ..Default::default()
    };
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("challenge.backgrounds")
    );
}
