use std::path::Path;

use super::*;
use crate::frame::BBox;
use crate::scene::{Background, Object, Shape, render};
use crate::source::memory::MemorySource;
use crate::source::test_util::mask_iou;

/// The fixtures of `scripts/make_segment_fixture.py`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/segment")
        .join(name)
}

fn ort_ready() -> bool {
    // The tests load the real ONNX Runtime like the binary: the set-up script's copy.
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/lib/libonnxruntime.so");
    assert!(
        lib.exists(),
        "ONNX Runtime is missing: run `bash scripts/assets.sh`"
    );
    true
}

fn logits_config() -> SegmentConfig {
    let mut c = SegmentConfig::new(fixture("red_logits_nchw.onnx"));
    c.classes = Some(vec![1]);
    c.library = Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/lib/libonnxruntime.so"));
    c
}

fn prob_config() -> SegmentConfig {
    let mut c = SegmentConfig::new(fixture("red_prob_nhwc.onnx"));
    c.layout = Layout::Nhwc;
    c.size = Some([48, 40]);
    c.mean = [0.0; 3];
    c.std = [1.0; 3];
    c.library = logits_config().library;
    c
}

/// A red disc and a red rectangle on a dark checker (all channels in 20..110): the fixture's
/// foreground is exactly the objects.
fn scene(w: u32, h: u32) -> crate::scene::Scene {
    let bg = Background::checker([20, 110, 60], [110, 20, 20], 9);
    let objects = [
        Object::new(
            Shape::Disc,
            BBox::new(w / 8, h / 6, w / 2, h * 2 / 3),
            [230, 30, 30],
        ),
        Object::new(
            Shape::Rect,
            BBox::new(w * 5 / 8, h / 2, w * 7 / 8, h * 7 / 8),
            [250, 60, 40],
        ),
    ];
    render(w, h, &bg, &objects)
}

/// Every one-line error of this source says what to do: after the problem, a `;` or `:` and
/// an instruction (give, set, fix, remove, …).
fn assert_says_what_to_do(message: &str) {
    const VERBS: [&str; 10] = [
        "give",
        "set",
        "fix",
        "remove",
        "re-export",
        "check",
        "keep",
        "list",
        "point",
        "use",
    ];
    let told = VERBS
        .iter()
        .any(|v| message.contains(&format!("; {v} ")) || message.contains(&format!(": {v} ")));
    assert!(told, "no fix in: {message}");
    assert!(!message.contains('\n'), "{message}");
}

#[test]
fn every_readout_error_says_what_to_do() {
    for (readout, channels) in [
        (Readout::Classes(vec![1]), 1),
        (Readout::Classes(vec![5]), 3),
        (SegmentConfig::new("m").readout(), 21),
    ] {
        assert_says_what_to_do(&readout.check_channels(channels).unwrap_err().to_string());
    }
    let e = output_geometry(&[2, 1, 8, 8], Layout::Nchw)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("[2, 1, 8, 8]") && e.contains("fix `[source.segment] layout`"),
        "{e}"
    );
    assert_says_what_to_do(&e);
}

#[test]
fn config_checks_name_the_key() {
    let ok = SegmentConfig::new("m.onnx");
    assert!(ok.check().is_ok());
    assert_eq!(
        ok.readout(),
        Readout::Threshold {
            threshold: 0.5,
            minmax: false
        }
    );
    let bad = |edit: &dyn Fn(&mut SegmentConfig), key: &str| {
        let mut c = SegmentConfig::new("m.onnx");
        edit(&mut c);
        let e = c.check().unwrap_err().to_string();
        assert!(e.contains(key), "{e}");
        assert_says_what_to_do(&e);
    };
    bad(&|c| c.every = 0, "every = 0");
    bad(&|c| c.size = Some([0, 10]), "size = [0, 10]");
    bad(&|c| c.scale = f32::NAN, "scale");
    bad(&|c| c.std = [1.0, 0.0, 1.0], "std");
    bad(&|c| c.mean = [f32::INFINITY, 0.0, 0.0], "mean");
    bad(&|c| c.threshold = Some(f32::NAN), "threshold");
    bad(&|c| c.scale = -1.0, "scale = -1");
    bad(
        &|c| {
            c.classes = Some(vec![1]);
            c.threshold = Some(0.3);
        },
        "keep one",
    );
    bad(&|c| c.classes = Some(vec![]), "classes = []");
    bad(
        &|c| {
            c.classes = Some(vec![1]);
            c.minmax = true;
        },
        "minmax",
    );
    // TOML: unknown keys are refused, defaults filled in.
    let c: SegmentConfig = toml::from_str("model = \"a.onnx\"\nevery = 3").unwrap();
    assert_eq!((c.every, c.threads, c.layout), (3, 1, Layout::Nchw));
    assert_eq!((c.mean, c.std), (IMAGENET_MEAN, IMAGENET_STD));
    assert!(toml::from_str::<SegmentConfig>("model = \"a\"\nthresh = 0.5").is_err());
    assert!(toml::from_str::<SegmentConfig>("model = \"a\"\nlibrary = \"x\"").is_err());
    let c: SegmentConfig = toml::from_str("model = \"a\"\nlayout = \"nhwc\"").unwrap();
    assert_eq!(c.layout, Layout::Nhwc);
}

#[test]
fn output_shapes_and_channel_checks() {
    assert_eq!(
        output_geometry(&[1, 21, 8, 6], Layout::Nchw),
        Ok((21, 8, 6))
    );
    assert_eq!(
        output_geometry(&[1, 8, 6, 21], Layout::Nhwc),
        Ok((21, 8, 6))
    );
    assert_eq!(
        output_geometry(&[1, 1, -1, -1], Layout::Nchw),
        Ok((1, 0, 0))
    );
    assert_eq!(output_geometry(&[1, 8, 6], Layout::Nchw), Ok((1, 8, 6)));
    assert_eq!(output_geometry(&[8, 6], Layout::Nhwc), Ok((1, 8, 6)));
    assert!(output_geometry(&[2, 1, 8, 6], Layout::Nchw).is_err());
    assert!(output_geometry(&[1, 1, 1, 8, 6], Layout::Nchw).is_err());
    let classes = Readout::Classes(vec![15]);
    assert!(classes.check_channels(21).is_ok());
    assert!(
        classes
            .check_channels(1)
            .unwrap_err()
            .to_string()
            .contains("remove `classes`")
    );
    assert!(
        classes
            .check_channels(10)
            .unwrap_err()
            .to_string()
            .contains("class 15")
    );
    let t = SegmentConfig::new("m").readout();
    assert!(t.check_channels(1).is_ok());
    assert!(
        t.check_channels(21)
            .unwrap_err()
            .to_string()
            .contains("classes = [..]")
    );
}

#[test]
fn margins_of_logits_and_maps() {
    // 3 classes × 2 pixels, NCHW: pixel 0 argmax 2, pixel 1 argmax 0; tie in pixel 2 → bg.
    let nchw = [1.0, 5.0, 2.0, 0.0, 1.0, 2.0, 3.0, 0.0, 2.0];
    let fg = Readout::Classes(vec![2]);
    let m = margin_map(&nchw, 3, 3, Layout::Nchw, &fg);
    assert_eq!(m, vec![2.0, -5.0, 0.0]);
    // The same values channels-last.
    let nhwc = [1.0, 0.0, 3.0, 5.0, 1.0, 0.0, 2.0, 2.0, 2.0];
    assert_eq!(margin_map(&nhwc, 3, 3, Layout::Nhwc, &fg), m);
    // Two foreground classes: the best of them against the best of the rest.
    let two = Readout::Classes(vec![1, 2]);
    assert_eq!(
        margin_map(&nchw, 3, 3, Layout::Nchw, &two),
        vec![2.0, -4.0, 0.0]
    );
    let t = Readout::Threshold {
        threshold: 0.5,
        minmax: false,
    };
    assert_eq!(
        margin_map(&[0.25, 0.75], 1, 2, Layout::Nchw, &t),
        vec![-0.25, 0.25]
    );
    // Min–max stretches [0.1, 0.2, 0.3] to [0, 0.5, 1]: only the top pixel passes 0.6.
    let mm = Readout::Threshold {
        threshold: 0.6,
        minmax: true,
    };
    let m = margin_map(&[0.1, 0.2, 0.3], 1, 3, Layout::Nchw, &mm);
    assert!(m[0] < 0.0 && m[1] < 0.0 && m[2] > 0.0, "{m:?}");
    // Without min–max none of them passes; a constant map has no foreground.
    assert!(
        margin_map(&[0.1, 0.2, 0.3], 1, 3, Layout::Nchw, &t)
            .iter()
            .all(|&v| v < 0.0)
    );
    assert!(
        margin_map(&[0.7; 4], 1, 4, Layout::Nchw, &mm)
            .iter()
            .all(|&v| v < 0.0)
    );
}

#[test]
fn upsampling_keeps_the_geometry() {
    // A 4×2 map with the right half foreground, to 8×4: the right half exactly.
    let m = [-1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0];
    let up = upsample_mask(&m, 4, 2, 8, 4);
    for y in 0..4 {
        let row: Vec<u8> = (0..8).map(|x| up.get_pixel(x, y).0[0]).collect();
        assert_eq!(row, [0, 0, 0, 0, 255, 255, 255, 255], "row {y}");
    }
    // One foreground sample in the middle of 3×3 stays a centred 3×3 blob at 9×9 (where
    // its weight exceeds ½).
    let mut one = [-1.0f32; 9];
    one[4] = 1.0;
    let up = upsample_mask(&one, 3, 3, 9, 9);
    assert_eq!(crate::geometry::tight_box(&up), Some(BBox::new(3, 3, 6, 6)));
    // Same size: the map itself.
    let same = upsample_mask(&m, 4, 2, 4, 2);
    assert_eq!(same.as_raw(), &vec![0, 0, 255, 255, 0, 0, 255, 255]);
}

#[test]
fn small_blobs_are_removed() {
    let mut m = GrayImage::new(10, 10);
    m.put_pixel(0, 0, image::Luma([255]));
    for y in 4..8 {
        for x in 4..8 {
            m.put_pixel(x, y, image::Luma([255]));
        }
    }
    let mut kept = m.clone();
    remove_small(&mut kept, 0);
    assert_eq!(kept, m);
    remove_small(&mut kept, 2);
    assert_eq!(kept.iter().filter(|&&v| v != 0).count(), 16);
    assert_eq!(kept.get_pixel(0, 0).0, [0]);
    remove_small(&mut kept, 17);
    assert!(kept.iter().all(|&v| v == 0));
}

#[test]
fn the_fixture_finds_the_red_objects_in_both_layouts() {
    assert!(ort_ready());
    let s = scene(160, 120);
    let mut logits = Segmenter::open(&logits_config()).unwrap();
    assert_eq!(logits.size(), (64, 64), "the size is read from the model");
    let a = logits.mask(&s.image).unwrap();
    let mut prob = Segmenter::open(&prob_config()).unwrap();
    let b = prob.mask(&s.image).unwrap();
    for m in [&a, &b] {
        assert_eq!(m.dimensions(), (160, 120));
        let v = mask_iou(m, &s.mask);
        eprintln!("IoU with the exact mask: {v:.4}");
        // Edges are off by up to ~1 model pixel (2.5 frame pixels at 64 px for 160).
        assert!(v > 0.94, "IoU {v}");
    }
    // Misalignment, inversion and emptiness would all fail the bound: the exact mask
    // shifted by 8 pixels, its complement and nothing.
    let shifted = image::imageops::crop_imm(&s.mask, 8, 0, 152, 120).to_image();
    let mut moved = GrayImage::new(160, 120);
    image::imageops::replace(&mut moved, &shifted, 0, 0);
    assert!(mask_iou(&moved, &s.mask) < 0.9);
    // Feeding channels-last data to the NCHW model scrambles the mask.
    let mut tensor = Vec::new();
    let small = Resampler::new().resize_rgb(&s.image, 64, 64, Filter::Bilinear);
    write_tensor(&small, Layout::Nhwc, &logits.lut, &mut tensor);
    let readout = logits.readout.clone();
    let wrong = {
        let input = TensorRef::from_array_view(([1usize, 3, 64, 64], tensor.as_slice())).unwrap();
        let outputs = logits.session.run(ort::inputs!["image" => input]).unwrap();
        let (_, data) = outputs["logits"].try_extract_tensor::<f32>().unwrap();
        let margin = margin_map(data, 2, 64 * 64, Layout::Nchw, &readout);
        upsample_mask(&margin, 64, 64, 160, 120)
    };
    assert!(
        mask_iou(&wrong, &s.mask) < 0.5,
        "{}",
        mask_iou(&wrong, &s.mask)
    );
    // A scene without red has no foreground.
    let empty = render(
        160,
        120,
        &Background::checker([20, 110, 60], [110, 20, 20], 9),
        &[],
    );
    assert!(logits.mask(&empty.image).unwrap().iter().all(|&v| v == 0));
}

#[test]
fn model_shape_mismatches_are_one_line_errors() {
    assert!(ort_ready());
    let open_err = |c: SegmentConfig| {
        let e = Segmenter::open(&c).err().unwrap().to_string();
        assert_says_what_to_do(&e);
        e
    };
    let mut c = prob_config();
    c.classes = Some(vec![1]);
    assert!(open_err(c).contains("remove `classes`"));
    let mut c = logits_config();
    c.classes = None;
    assert!(open_err(c).contains("2 channels"));
    let mut c = logits_config();
    c.classes = Some(vec![2]);
    assert!(open_err(c).contains("class 2"));
    let mut c = logits_config();
    c.size = Some([32, 32]);
    assert!(open_err(c).contains("size = [32, 32]"));
    let mut c = logits_config();
    c.layout = Layout::Nhwc;
    assert!(open_err(c).contains("layout"));
    let mut c = prob_config();
    c.size = None;
    assert!(open_err(c).contains("set `[source.segment] size"));
    let c = SegmentConfig {
        model: fixture("nope.onnx"),
        ..logits_config()
    };
    let e = open_err(c);
    assert!(
        e.contains("nope.onnx") && e.contains("does not exist"),
        "{e}"
    );
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.onnx");
    std::fs::write(&junk, b"not a model").unwrap();
    let e = open_err(SegmentConfig {
        model: junk,
        ..logits_config()
    });
    assert!(e.contains("cannot load it") && !e.contains('\n'), "{e}");
    // A classifier with a uint8 input and one whose output is class scores, not a map.
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine");
    let e = open_err(SegmentConfig {
        model: engine.join("uint8_input.onnx"),
        ..logits_config()
    });
    assert!(
        e.contains("robustream feeds float32: re-export the model with a float32 input"),
        "{e}"
    );
    // A model that fails on the frame: the per-frame error names the input it was given.
    let mut c = SegmentConfig {
        model: fixture("fails_unless_64.onnx"),
        ..prob_config()
    };
    c.size = Some([32, 32]);
    let mut failing = Segmenter::open(&c).unwrap();
    let e = failing
        .mask(&RgbImage::new(40, 30))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("inference failed (")
            && e.ends_with(
                "check that the model runs on a float32 [1, 32, 32, 3] input \
                     (`[source.segment] size` and `layout = \"nhwc\"`)"
            ),
        "{e}"
    );
    assert_says_what_to_do(&e);
}

fn frame(n: u64, image: RgbImage, regions: Option<Regions>) -> Frame {
    Frame {
        regions,
        ..Frame::new(format!("f{n}"), n, image)
    }
}

fn frames(n: u64) -> Box<dyn Source> {
    // The red disc moves right by 4 pixels a frame.
    let bg = Background::checker([20, 110, 60], [110, 20, 20], 9);
    let frames = (0..n)
        .map(|i| {
            let x = 10 + 4 * i as u32;
            let disc = Object::new(Shape::Disc, BBox::new(x, 20, x + 40, 60), [230, 30, 30]);
            frame(i, render(120, 90, &bg, &[disc]).image, None)
        })
        .collect();
    Box::new(MemorySource::new(frames))
}

#[test]
fn every_k_reuses_the_last_mask_and_reports_the_cost() {
    assert!(ort_ready());
    let mut c = logits_config();
    c.every = 3;
    let mut s = SegmentSource::new(frames(7), &c).unwrap();
    let masks: Vec<GrayImage> = (0..7)
        .map(|_| {
            s.next_frame()
                .unwrap()
                .unwrap()
                .regions
                .unwrap()
                .mask
                .unwrap()
        })
        .collect();
    assert!(s.next_frame().is_none());
    // Frames 0, 3, 6 are segmented; 1, 2 reuse 0's mask (which lags the moving disc), 4, 5
    // reuse 3's.
    assert_eq!(masks[1], masks[0]);
    assert_eq!(masks[2], masks[0]);
    assert_ne!(masks[3], masks[0]);
    assert_eq!(masks[5], masks[3]);
    assert_ne!(masks[6], masks[3]);
    let r = s.report().unwrap();
    let seg = &r["segment"];
    assert_eq!(
        (seg["calls"].as_u64(), seg["reused"].as_u64()),
        (Some(3), Some(4))
    );
    assert_eq!(seg["every"], 3);
    assert!(seg["ms_per_call"]["p50"].as_f64().unwrap() > 0.0, "{r}");
    assert!(
        seg["model"]
            .as_str()
            .unwrap()
            .ends_with("red_logits_nchw.onnx")
    );
    assert!(s.describe().contains("every 3 frames"));
}

#[test]
fn frames_without_foreground_get_no_mask_and_own_masks_are_replaced() {
    assert!(ort_ready());
    let bg = Background::checker([20, 110, 60], [110, 20, 20], 9);
    let plain = render(64, 48, &bg, &[]).image;
    let mut s = SegmentSource::new(
        Box::new(MemorySource::new(vec![frame(0, plain, None)])),
        &logits_config(),
    )
    .unwrap();
    let f = s.next_frame().unwrap().unwrap();
    assert!(f.regions.is_none());
    assert_eq!(s.report().unwrap()["segment"]["no_foreground"], 1);
    // A frame's own mask and boxes (here wrong on purpose: the left half) are replaced.
    let sc = scene(96, 72);
    let mut own = GrayImage::new(96, 72);
    for y in 0..72 {
        for x in 0..48 {
            own.put_pixel(x, y, image::Luma([255]));
        }
    }
    let regions = Regions {
        mask: Some(own),
        boxes: vec![BBox::new(0, 0, 48, 72)],
    };
    let mut s = SegmentSource::new(
        Box::new(MemorySource::new(vec![frame(
            0,
            sc.image.clone(),
            Some(regions),
        )])),
        &logits_config(),
    )
    .unwrap();
    let r = s.next_frame().unwrap().unwrap().regions.unwrap();
    assert!(
        r.boxes.is_empty(),
        "boxes follow from the model's mask downstream"
    );
    let m = r.mask.unwrap();
    assert!(mask_iou(&m, &sc.mask) > 0.85, "{}", mask_iou(&m, &sc.mask));
}
