//! Fixed engine shapes: the real model on the CPU provider gives the same top-5 and
//! probabilities (within 1e-5) for an image whether it runs alone, in an exact batch, padded to a
//! larger size, split into several sizes, from the caller's buffer with padding written in place,
//! or through ONNX Runtime's IO binding (the GPU providers' path, here on the CPU), with one
//! session for every size or one per size.

use robustream::engine::onnx::OnnxEngine;
use robustream::engine::{
    BatchShapes, Engine, EngineConfig, Partial, Prediction, Sessions, decode_row,
};
use robustream::model::ModelDesc;
use robustream::preprocess::Normalizer;
use robustream::view::ModelView;

const PHOTOS: [&str; 5] = [
    "coffee.png",
    "chelsea.png",
    "rocket.jpg",
    "flower.jpg",
    "china.jpg",
];

fn engine(model: &ModelDesc, sizes: &[usize], partial: Partial, io: bool) -> OnnxEngine {
    engine_with(model, sizes, partial, io, Sessions::Shared)
}

fn engine_with(
    model: &ModelDesc,
    sizes: &[usize],
    partial: Partial,
    io: bool,
    sessions: Sessions,
) -> OnnxEngine {
    let config = EngineConfig {
        sessions: Some(sessions),
        library: Some(crate::util::ort_lib()),
        threads: 1,
        batch_sizes: Some(sizes.to_vec()),
        partial: Some(partial),
        io_binding: Some(io),
        ..EngineConfig::default()
    };
    OnnxEngine::new(model, &config).unwrap()
}

/// The five photos' tensors, back to back.
fn inputs(model: &ModelDesc) -> Vec<f32> {
    let mut view = ModelView::new(model);
    let norm = Normalizer::new(model);
    PHOTOS
        .iter()
        .flat_map(|p| {
            let img = image::open(crate::util::photo(p)).unwrap().to_rgb8();
            norm.tensor(&view.image(&img))
        })
        .collect()
}

fn decode(model: &ModelDesc, scores: &[f32]) -> Vec<Prediction> {
    scores
        .chunks_exact(model.output.classes)
        .map(|row| decode_row(row, model.output.kind, 5))
        .collect()
}

fn assert_same(what: &str, got: &[Prediction], want: &[Prediction]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.top, w.top, "{what}: image {i} top-5");
        for (a, b) in g.prob.iter().zip(&w.prob) {
            assert!((a - b).abs() <= 1e-5, "{what}: image {i}: {a} vs {b}");
        }
    }
}

#[test]
fn padded_split_and_bound_batches_score_every_image_as_it_scores_alone() {
    let model = ModelDesc::load(&crate::util::model()).unwrap();
    let input = inputs(&model);
    let per = model.input_len();
    let n = PHOTOS.len();

    // Reference: each image alone, at batch size 1.
    let mut alone = engine(&model, &[1], Partial::Pad, false);
    let reference: Vec<Prediction> = input
        .chunks_exact(per)
        .flat_map(|one| decode(&model, &alone.infer(one, 1).unwrap()))
        .collect();
    // The photos are told apart (the comparison is not between five equal rows).
    assert!(reference.windows(2).any(|w| w[0].top[0] != w[1].top[0]));

    let (shared, per_size) = (Sessions::Shared, Sessions::PerSize);
    for (what, sizes, partial, io, sessions) in [
        ("exact", &[5][..], Partial::Pad, false, shared),
        ("padded 5 -> 8", &[8], Partial::Pad, false, shared),
        (
            "split 5 -> 4 + 1",
            &[1, 2, 4, 8],
            Partial::Split,
            false,
            shared,
        ),
        (
            "split 5 -> 2 + 2 + 2 (padded)",
            &[2],
            Partial::Split,
            false,
            shared,
        ),
        (
            "io binding, padded 5 -> 8",
            &[8],
            Partial::Pad,
            true,
            shared,
        ),
        (
            "io binding, split 5 -> 4 + 1",
            &[1, 4],
            Partial::Split,
            true,
            shared,
        ),
        (
            "a session per size, split 5 -> 4 + 1",
            &[1, 2, 4, 8],
            Partial::Split,
            false,
            per_size,
        ),
        (
            "a session per size, io binding, split 5 -> 4 + 1",
            &[1, 4],
            Partial::Split,
            true,
            per_size,
        ),
    ] {
        let mut e = engine_with(&model, sizes, partial, io, sessions);
        assert_same(
            what,
            &decode(&model, &e.infer(&input, n).unwrap()),
            &reference,
        );
        // From a batch buffer of the engine's largest size, rows after the batch holding garbage
        // (the padding is written in place).
        let rows = e.shapes().unwrap().max().max(n);
        let mut buffer = e.batch_buffer(rows, per);
        buffer.as_mut_slice().fill(7.5);
        buffer.as_mut_slice()[..n * per].copy_from_slice(&input);
        let scores = e.infer_buffer(&mut buffer, n).unwrap();
        assert_same(
            &format!("{what}, in place"),
            &decode(&model, &scores),
            &reference,
        );
        // Twice: buffers and bound outputs are reused, not re-made.
        let scores = e.infer_buffer(&mut buffer, n).unwrap();
        assert_same(
            &format!("{what}, again"),
            &decode(&model, &scores),
            &reference,
        );
    }
}

#[test]
fn an_engine_says_which_calls_ran_a_batch_and_per_size_sessions_say_so() {
    let model = ModelDesc::load(&crate::util::model()).unwrap();
    let input = inputs(&model);
    let per = model.input_len();
    for sessions in [Sessions::Shared, Sessions::PerSize] {
        let mut e = engine_with(&model, &[1, 2, 4], Partial::Split, false, sessions);
        assert_eq!(
            e.describe().contains("a session per size"),
            sessions == Sessions::PerSize,
            "{}",
            e.describe()
        );
        // Warm-up calls are not a batch's.
        e.warm_up().unwrap();
        assert!(e.take_runs().is_empty());
        e.infer(&input, 5).unwrap();
        let runs = e.take_runs();
        let calls: Vec<(usize, usize)> = runs.iter().map(|r| (r.shape, r.rows)).collect();
        assert_eq!(calls, [(4, 4), (1, 1)], "{sessions:?}");
        assert!(runs.iter().all(|r| r.ms > 0.0));
        // Taken: a second take is empty; the next batch starts a new list.
        assert!(e.take_runs().is_empty());
        let mut buffer = e.batch_buffer(4, per);
        buffer.as_mut_slice()[..3 * per].copy_from_slice(&input[..3 * per]);
        e.infer_buffer(&mut buffer, 3).unwrap();
        let calls: Vec<(usize, usize)> = e.take_runs().iter().map(|r| (r.shape, r.rows)).collect();
        assert_eq!(calls, [(2, 2), (1, 1)], "{sessions:?}");
    }
    // The default on the CPU: one session.
    assert_eq!(
        EngineConfig::default().resolved_sessions(),
        Sessions::Shared
    );
}

#[test]
fn warm_up_runs_each_batch_size_once_and_reports_it() {
    let model = ModelDesc::load(&crate::util::model()).unwrap();
    let mut e = engine(&model, &[4, 1, 2], Partial::Split, false);
    let warm = e.warm_up().unwrap();
    let sizes: Vec<usize> = warm.iter().map(|(s, _)| *s).collect();
    assert_eq!(sizes, [1, 2, 4]);
    assert!(warm.iter().all(|(_, ms)| *ms > 0.0));
    assert!(
        e.describe().contains("batch sizes 1, 2, 4 (split)"),
        "{}",
        e.describe()
    );
    // The default: powers of two up to the largest batch, split on the CPU.
    let config = EngineConfig::default();
    assert_eq!(
        config.shapes(12).unwrap(),
        BatchShapes::powers_of_two(12, Partial::Split)
    );
}

#[test]
fn an_output_unlike_its_description_is_a_kind_naming_the_setting() {
    use robustream::engine::{EngineError, OutputMismatch};
    let desc = crate::util::root().join("tests/fixtures/engine/null_classifier.toml");
    let config = EngineConfig {
        library: Some(crate::util::ort_lib()),
        threads: 1,
        ..EngineConfig::default()
    };
    let mut renamed = ModelDesc::load(&desc).unwrap();
    renamed.output.name = "scores".into();
    let e = OnnxEngine::new(&renamed, &config).err().unwrap();
    let EngineError::Output {
        mismatch: OutputMismatch::Missing { name, outputs },
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (name.as_str(), outputs.as_slice()),
        ("scores", &["logits".to_string()][..])
    );
    assert!(
        e.to_string()
            .ends_with("null_classifier.onnx: has no output `scores` (outputs: [\"logits\"]); fix `[output] name`"),
        "{e}"
    );
    let mut fewer = ModelDesc::load(&desc).unwrap();
    fewer.output.classes = 10;
    let e = OnnxEngine::new(&fewer, &config).err().unwrap();
    assert!(
        matches!(
            &e,
            EngineError::Output {
                mismatch: OutputMismatch::Classes {
                    classes: 1000,
                    expected: 10,
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with(
            "output `logits` has 1000 classes but the description says 10; fix `[output] classes` \
             and the labels file"
        ),
        "{e}"
    );
    // A convolutional head exported without its flatten: the shape is named, not "1 class".
    let rank4 = crate::util::root().join("tests/fixtures/engine/rank4_output.toml");
    let e = OnnxEngine::new(&ModelDesc::load(&rank4).unwrap(), &config)
        .err()
        .unwrap();
    assert!(
        matches!(
            &e,
            EngineError::Output {
                mismatch: OutputMismatch::Rank { shape, .. },
                ..
            } if shape == "[N, 10, 1, 1]"
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with(
            "rank4_output.onnx: output `logits` has shape [N, 10, 1, 1], not [batch, classes]; \
             robustream reads one row of `[output] classes` scores per image: re-export the model \
             with a Flatten (or Reshape to [N, classes]) at the end of the graph"
        ),
        "{e}"
    );
}

#[test]
fn an_input_unlike_its_description_is_a_kind_naming_the_setting() {
    use robustream::engine::{EngineError, InputMismatch};
    let fixtures = crate::util::root().join("tests/fixtures/engine");
    let config = EngineConfig {
        library: Some(crate::util::ort_lib()),
        threads: 1,
        ..EngineConfig::default()
    };
    let mut renamed = ModelDesc::load(&fixtures.join("null_classifier.toml")).unwrap();
    renamed.input.name = "pixels".into();
    let e = OnnxEngine::new(&renamed, &config).err().unwrap();
    assert!(
        matches!(
            &e,
            EngineError::Input {
                mismatch: InputMismatch::Missing { name, inputs },
                ..
            } if name == "pixels" && inputs == &["input".to_string()]
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().ends_with(
            "null_classifier.onnx: has no input `pixels` (inputs: [\"input\"]); fix `[input] name`"
        ),
        "{e}"
    );
    let uint8 = ModelDesc::load(&fixtures.join("uint8_input.toml")).unwrap();
    let e = OnnxEngine::new(&uint8, &config).err().unwrap();
    let EngineError::Input {
        mismatch: InputMismatch::NotFloat32 { element, .. },
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert!(
        e.to_string().contains(&format!(
            "is {element} but robustream feeds float32 or float16 (normalised by the \
             description's `[preprocess]` mean/std); re-export the model with a float32 input"
        )),
        "{e}"
    );
}

/// A model exported with a fixed batch dimension runs at that size whatever the batch settings
/// (smaller batches padded, larger ones cut), scores every variant, and the run says so once.
#[test]
fn a_fixed_batch_model_sets_the_batch_and_says_so() {
    let desc = crate::util::root().join("tests/fixtures/engine/fixed_batch4.toml");
    let d = tempfile::tempdir().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let out = d.path().join(out);
        let o = crate::util::robustream()
            .args(["run", "--quiet", "--model"])
            .arg(&desc)
            .args([
                "--source",
                "synthetic:64x48@10/6",
                "--scenarios",
                "corruption/fog/1",
            ])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = crate::util::text(&o.stderr);
        assert!(o.status.success(), "{err}");
        (err, crate::util::summary(&out))
    };
    let (err, s) = run("default", &[]);
    assert_eq!(
        err.matches("note: the model's batch dimension is fixed at 4: every batch runs at 4")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("set `--batch 4`"), "{err}");
    assert!(
        s["run"]["engine"]
            .as_str()
            .unwrap()
            .contains("batch sizes 4 (pad)"),
        "{s}"
    );
    assert_eq!(s["scenarios"]["corruption/fog/1"]["n"], 6, "{s}");
    // Settings that agree with the model: no note.
    let (err, s) = run("agreed", &["--batch", "4"]);
    assert!(!err.contains("note:"), "{err}");
    assert_eq!(s["scenarios"]["clean"]["n"], 6, "{s}");
}

/// A float16 model (the null classifier between Casts, scripts/make_float16.py) scores exactly as
/// the float32 one does on the batch rounded to float16, its scores rounded to float16: both
/// conversions happen, at the boundary and nowhere else, in every path a batch can take (exact
/// size, padded, split, from the caller's buffer, through the IO binding).
#[test]
fn a_float16_model_gets_its_batch_converted_and_its_scores_back_as_f32() {
    use half::f16;
    let fixtures = crate::util::root().join("tests/fixtures/engine");
    let f32_model = ModelDesc::load(&fixtures.join("null_classifier.toml")).unwrap();
    let f16_model = ModelDesc::load(&fixtures.join("null_classifier_f16.toml")).unwrap();
    // ImageNet's normalisation: values float16 cannot all represent (the fixtures' own
    // (x − 127) / 128 it can, k / 128 exactly).
    let mut imagenet = f32_model.clone();
    imagenet.preprocess.mean = [123.675, 116.28, 103.53];
    imagenet.preprocess.std = [58.395, 57.12, 57.375];
    let x = inputs(&imagenet);
    let per = f32_model.input_len();
    let rounded: Vec<f32> = x.iter().map(|&v| f16::from_f32(v).to_f32()).collect();
    let changed = rounded.iter().zip(&x).filter(|(a, b)| a != b).count();
    assert!(
        changed > x.len() / 2,
        "{changed} of {} values rounded",
        x.len()
    );
    let mut reference = engine(&f32_model, &[1, 2, 4], Partial::Split, false);
    let want: Vec<f32> = reference
        .infer(&rounded, PHOTOS.len())
        .unwrap()
        .iter()
        .map(|&v| f16::from_f32(v).to_f32())
        .collect();
    for (sizes, partial, io) in [
        (&[1, 2, 4][..], Partial::Split, false),
        (&[8][..], Partial::Pad, false),
        (&[1, 2, 4][..], Partial::Split, true),
        (&[8][..], Partial::Pad, true),
    ] {
        let mut e = engine(&f16_model, sizes, partial, io);
        e.warm_up().unwrap();
        let got = e.infer(&x, PHOTOS.len()).unwrap();
        assert_eq!(got, want, "{sizes:?} {partial:?} io binding {io}");
        let d = e.describe();
        assert_eq!(
            d.contains("io binding") && !d.contains("binding off"),
            io,
            "{d}"
        );
        let mut buffer = e.batch_buffer(sizes[sizes.len() - 1].max(5), per);
        buffer.as_mut_slice()[..x.len()].copy_from_slice(&x);
        assert_eq!(e.infer_buffer(&mut buffer, PHOTOS.len()).unwrap(), want);
        // Twice: the reused float16 buffer holds nothing of the previous batch.
        assert_eq!(e.infer(&x[per..3 * per], 2).unwrap(), want[1000..3000]);
    }
    // The predictions are the float32 model's.
    let plain = reference.infer(&x, PHOTOS.len()).unwrap();
    let (a, b) = (decode(&f32_model, &plain), decode(&f16_model, &want));
    for (p, q) in a.iter().zip(&b) {
        assert_eq!(p.top[0], q.top[0]);
        assert!((p.prob[0] - q.prob[0]).abs() < 1e-2, "{p:?} {q:?}");
    }
}
