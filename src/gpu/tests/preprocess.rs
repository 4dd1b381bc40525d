//! The model view and the input tensor on the GPU (`gpu::preprocess`) against the CPU path:
//! `view::ModelView` + `preprocess::Normalizer`. Both use the same integer resampling and the same
//! tables, so the view's bytes, the float32 tensor's bits and the float16 tensor's bits are equal.

use image::RgbImage;

use super::{flat, test_image};
use crate::gpu::host::HostLauncher;
use crate::gpu::launch::DeviceImage;
use crate::gpu::launch::Launcher;
use crate::gpu::preprocess::{Element, GpuView};
use crate::key::Corruption as Kind;
use crate::model::{Layout, ModelDesc, Preset};
use crate::preprocess::Normalizer;
use crate::rng::RngKey;
use crate::scenario::ScenarioStage;
use crate::scenario::corruption::Corruption;
use crate::view::ModelView;

/// A description of a `width × height` input with the `[preprocess]` table `keys`.
fn desc(dir: &std::path::Path, keys: &str, width: u32, height: u32) -> ModelDesc {
    let text = format!(
        "onnx = \"m.onnx\"\nlabels = \"labels.txt\"\n[input]\nname = \"input\"\nlayout = \
         \"nchw\"\nheight = {height}\nwidth = {width}\n[preprocess]\n{keys}\n[output]\nname = \
         \"logits\"\nkind = \"logits\"\nclasses = 3\n"
    );
    let p = dir.join("m.toml");
    std::fs::write(&p, &text).unwrap();
    ModelDesc::load(&p).unwrap_or_else(|e| panic!("{keys}: {e}"))
}

/// The shipped description, every preset at 224², and descriptions for the other resize rules,
/// filters and input shapes: (name, description).
fn models() -> Vec<(String, ModelDesc)> {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("labels.txt"), "a\nb\nc\n").unwrap();
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/models/efficientnet_lite0.toml");
    let mut out = vec![(
        "efficientnet_lite0.toml".to_owned(),
        ModelDesc::load(&shipped).unwrap(),
    )];
    for p in Preset::ALL {
        let keys = format!("preset = \"{}\"", p.name());
        out.push((p.name().to_owned(), desc(d.path(), &keys, 224, 224)));
    }
    let norm = "mean = [123.675, 116.28, 103.53]\nstd = [58.395, 57.12, 57.375]";
    for (name, keys, w, h) in [
        ("timm 320×240", "preset = \"timm\"".to_owned(), 320, 240),
        (
            "torchvision 299",
            "preset = \"torchvision\"".to_owned(),
            299,
            299,
        ),
        (
            "resize 256² (Hard ImageNet)",
            format!("resize = {{ width = 256, height = 256 }}\ncrop = \"center\"\n{norm}"),
            224,
            224,
        ),
        ("crop only", format!("crop = \"center\"\n{norm}"), 224, 224),
        (
            "box",
            format!("resize_shorter = 256\ncrop = \"center\"\ninterpolation = \"box\"\n{norm}"),
            224,
            224,
        ),
        (
            "lanczos squash",
            format!("crop = \"squash\"\ninterpolation = \"lanczos\"\n{norm}"),
            200,
            120,
        ),
        (
            "nearest shorter side 320×240, bgr",
            format!(
                "resize_shorter = 250\ncrop = \"center\"\ninterpolation = \"nearest\"\n\
                 channels = \"bgr\"\n{norm}"
            ),
            320,
            240,
        ),
    ] {
        out.push((name.to_owned(), desc(d.path(), &keys, w, h)));
    }
    out
}

/// Frames of several sizes: square, 4:3, 1080p, one not a multiple of 8 (61×17), one pixel wide
/// or high, flat black and white; with [`models`], every path of the recipe: a plain crop, with
/// and without padding; one resampled axis (256×300 and 300×256 squashed to 256²); both, the
/// horizontal pass first or (224² squashed to 200×120) the vertical one; a resize that the crop
/// pads (1×50 for timm's 320×240); NEAREST, with and without padding.
fn frames() -> Vec<RgbImage> {
    vec![
        test_image(224, 224),
        test_image(256, 300),
        test_image(300, 256),
        test_image(640, 480),
        test_image(1920, 1080),
        test_image(61, 17),
        test_image(1, 50),
        test_image(300, 1),
        flat(40, 30, 0),
        flat(40, 30, 255),
    ]
}

/// The frame's view and its tensor row through the host build of the GPU recipe: row 1 of a
/// three-row batch, checking that rows 0 and 2 are left alone.
fn gpu_tensor(model: &ModelDesc, element: Element, frame: &RgbImage) -> (RgbImage, Vec<u8>) {
    let mut l = HostLauncher::new();
    let mut v = GpuView::new(model, element);
    let (w, h) = frame.dimensions();
    let src = DeviceImage {
        buf: l.buffer(frame.as_raw()),
        width: w,
        height: h,
    };
    let (vw, vh) = v.size();
    let view = DeviceImage {
        buf: l.alloc(3 * vw as usize * vh as usize).unwrap(),
        width: vw,
        height: vh,
    };
    v.view(&mut l, src, view).unwrap();
    let view_img = RgbImage::from_raw(vw, vh, l.read(view.buf)).unwrap();
    let row = v.row_bytes();
    let batch = l.alloc(3 * row).unwrap();
    v.view_into_batch(&mut l, src, batch, 1).unwrap();
    let all = l.read(batch);
    assert!(
        all[..row].iter().chain(&all[2 * row..]).all(|&b| b == 0),
        "writes outside its row"
    );
    (view_img, all[row..2 * row].to_vec())
}

/// The CPU tensor's values as the row's bytes: float32 bits, or float16 rounded like the engine.
fn cpu_bytes(values: &[f32], element: Element) -> Vec<u8> {
    match element {
        Element::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        Element::F16 => values
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect(),
    }
}

/// Where two rows first differ, for the failure message.
fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    a.iter().zip(b).position(|(x, y)| x != y)
}

#[test]
fn view_and_tensor_equal_the_cpu_paths_for_every_model_and_frame() {
    let frames = frames();
    for (name, mut model) in models() {
        for layout in [Layout::Nchw, Layout::Nhwc] {
            model.input.layout = layout;
            let mut cpu_view = ModelView::new(&model);
            let norm = Normalizer::new(&model);
            for frame in &frames {
                let what = format!("{name} {layout:?} {:?}", frame.dimensions());
                let want_view = cpu_view.image(frame);
                let want = norm.tensor(&want_view);
                for element in [Element::F32, Element::F16] {
                    let (view, row) = gpu_tensor(&model, element, frame);
                    assert!(view == want_view, "{what}: the view's bytes differ");
                    let want = cpu_bytes(&want, element);
                    assert_eq!(row.len(), want.len(), "{what}");
                    assert!(
                        row == want,
                        "{what} {element:?}: tensor differs from byte {:?}",
                        first_difference(&row, &want)
                    );
                }
            }
        }
    }
}

#[test]
fn both_scenario_stages_equal_the_cpu_pipeline() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("labels.txt"), "a\nb\nc\n").unwrap();
    let models = [
        desc(d.path(), "preset = \"torchvision\"", 224, 224),
        desc(d.path(), "preset = \"keras\"", 224, 224),
    ];
    for model in &models {
        let norm = Normalizer::new(model);
        let mut cpu_view = ModelView::new(model);
        for frame in [test_image(640, 480), test_image(61, 17)] {
            for stage in [ScenarioStage::ModelInput, ScenarioStage::Native] {
                let mut l = HostLauncher::new();
                let mut v = GpuView::new(model, Element::F32);
                let (w, h) = frame.dimensions();
                // The frame and the variant in scratch slots 64 and 65, where a caller (the
                // pipeline) keeps them across calls: the view recipes must leave them alone.
                let frame_buf = l.scratch(64, frame.as_raw().len()).unwrap();
                l.upload(frame_buf, frame.as_raw()).unwrap();
                let src = DeviceImage {
                    buf: frame_buf,
                    width: w,
                    height: h,
                };
                let (vw, vh) = v.size();
                let view_buf = l.alloc(3 * vw as usize * vh as usize).unwrap();
                let base = v.stage_base(&mut l, stage, src, view_buf).unwrap();
                let variant = l.scratch(65, base.elements() as usize).unwrap();
                let batch = l.alloc(6 * v.row_bytes()).unwrap();
                // Row 0 the clean frame, rows 1..=5 contrast at each severity.
                v.variant_into_batch(&mut l, stage, base, batch, 0).unwrap();
                for s in 1..=5u8 {
                    let job = (Kind::Contrast, s, RngKey(7));
                    let row = usize::from(s);
                    assert!(
                        v.corrupt_into_batch(&mut l, stage, base, job, variant, batch, row)
                            .unwrap()
                    );
                }
                let got = l.read(batch);
                assert!(l.read(frame_buf)[..frame.as_raw().len()] == frame.as_raw()[..]);
                let cpu_base = match stage {
                    ScenarioStage::ModelInput => cpu_view.image(&frame),
                    ScenarioStage::Native => frame.clone(),
                };
                for s in 0..=5u8 {
                    let variant = match s {
                        0 => cpu_base.clone(),
                        s => Corruption::new("contrast", s)
                            .unwrap()
                            .corrupt(&cpu_base, RngKey(7)),
                    };
                    let view = match stage {
                        ScenarioStage::ModelInput => variant,
                        ScenarioStage::Native => cpu_view.image(&variant),
                    };
                    let want = cpu_bytes(&norm.tensor(&view), Element::F32);
                    let r = v.row_bytes();
                    let row = &got[usize::from(s) * r..(usize::from(s) + 1) * r];
                    assert!(
                        row == want,
                        "{stage:?} {:?} contrast/{s}: differs from byte {:?}",
                        frame.dimensions(),
                        first_difference(row, &want)
                    );
                }
            }
        }
    }
}

#[test]
fn a_corruption_without_gpu_kernels_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("labels.txt"), "a\nb\nc\n").unwrap();
    let model = desc(d.path(), "preset = \"torchvision\"", 32, 32);
    let mut l = HostLauncher::new();
    let mut v = GpuView::new(&model, Element::F32);
    let frame = test_image(40, 40);
    let src = DeviceImage {
        buf: l.buffer(frame.as_raw()),
        width: 40,
        height: 40,
    };
    let variant = l.alloc(frame.as_raw().len()).unwrap();
    let batch = l.alloc(v.row_bytes()).unwrap();
    // A corruption without kernels (spatter) writes nothing.
    let job = (Kind::Spatter, 1, RngKey(0));
    let made = v
        .corrupt_into_batch(&mut l, ScenarioStage::Native, src, job, variant, batch, 0)
        .unwrap();
    assert!(!made);
    assert!(l.read(batch).iter().all(|&b| b == 0));
    // A view of the wrong size is an error, not a write past the buffer.
    let small = DeviceImage {
        buf: variant,
        width: 8,
        height: 8,
    };
    assert!(v.view(&mut l, src, small).is_err());
    assert!(v.normalize_into_batch(&mut l, small, batch, 0).is_err());
}
