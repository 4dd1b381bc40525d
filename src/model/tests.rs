use super::*;

const DESC: &str = r#"
onnx = "m.onnx"
labels = "labels.txt"
[input]
name = "input"
layout = "nchw"
height = 4
width = 6
[preprocess]
resize_shorter = 8
crop = "center"
mean = [127.0, 127.0, 127.0]
std = [128.0, 128.0, 128.0]
[output]
name = "logits"
kind = "logits"
classes = 3
"#;

fn dir_with_labels(n: usize) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..n).map(|i| format!("class{i}")).collect();
    std::fs::write(d.path().join("labels.txt"), names.join("\n") + "\n").unwrap();
    d
}

#[test]
fn loads_and_resolves_paths() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    std::fs::write(&p, DESC).unwrap();
    let m = ModelDesc::load(&p).unwrap();
    assert_eq!(m.onnx, d.path().join("m.onnx"));
    assert_eq!(m.labels.len(), 3);
    assert_eq!(m.input_len(), 72);
    assert_eq!(m.preprocess.resize_shorter, Some(8));
}

#[test]
fn unknown_key_is_named() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    let e = ModelDesc::parse(&DESC.replace("layout", "layuot"), &p).unwrap_err();
    assert!(e.to_string().contains("layuot"), "{e}");
    assert!(e.to_string().contains("m.toml"), "{e}");
}

#[test]
fn degenerate_values_are_refused_naming_the_key_and_the_fix() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    for (from, to, key, fix) in [
        (
            "resize_shorter = 8",
            "resize_shorter = 0",
            "resize_shorter",
            "remove the key",
        ),
        (
            "resize_shorter = 8",
            "resize_shorter = 3",
            "resize_shorter",
            "at least 4",
        ),
        (
            "resize_shorter = 8",
            "resize_shorter = 9000",
            "resize_shorter",
            "at most 8192",
        ),
        (
            "crop = \"center\"",
            "crop = \"squash\"",
            "resize_shorter",
            "remove it",
        ),
        ("height = 4", "height = 0", "[input] width", "positive"),
        (
            "width = 6",
            "width = 100000",
            "[input] width",
            "at most 8192",
        ),
        (
            "std = [128.0, 128.0, 128.0]",
            "std = [128.0, 0.0, 128.0]",
            "[preprocess] std",
            "positive",
        ),
        (
            "std = [128.0, 128.0, 128.0]",
            "std = [128.0, -1.0, 128.0]",
            "[preprocess] std",
            "positive",
        ),
        (
            "mean = [127.0, 127.0, 127.0]",
            "mean = [127.0, nan, 127.0]",
            "[preprocess] mean",
            "finite",
        ),
        (
            "mean = [127.0, 127.0, 127.0]\nstd = [128.0, 128.0, 128.0]",
            "mean = [0.485, 0.456, 0.406]\nstd = [0.229, 0.224, 0.225]",
            "[preprocess] mean",
            "multiply them by 255",
        ),
        ("classes = 3", "classes = 0", "[output] classes", "positive"),
        (
            "resize_shorter = 8",
            "resize_shorter = 8\nresize = { width = 8, height = 8 }",
            "resize_shorter",
            "not both",
        ),
        (
            "resize_shorter = 8\ncrop = \"center\"",
            "resize = { width = 8, height = 8 }\ncrop = \"squash\"",
            "[preprocess] resize",
            "remove it",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = 0, height = 8 }",
            "[preprocess] resize",
            "1..=8192",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = 8, height = 9000 }",
            "[preprocess] resize",
            "1..=8192",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = 8, height = 3 }",
            "[preprocess] resize",
            "height at least 4",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = 5, height = 8 }",
            "[preprocess] resize",
            "width at least 6",
        ),
        (
            "resize_shorter = 8",
            "resize = [8, 8]",
            "`[preprocess] resize` is not a table",
            "resize = { width = 256, height = 256 }",
        ),
        (
            "resize_shorter = 8",
            "resize = { w = 8, height = 8 }",
            "unknown key `w`",
            "resize = { width = 256, height = 256 }",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = 8 }",
            "no `height`",
            "resize = { width = 256, height = 256 }",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = -8, height = 8 }",
            "width = -8 is not a pixel count",
            "resize = { width = 256, height = 256 }",
        ),
        (
            "resize_shorter = 8",
            "resize = { width = 8.5, height = 8 }",
            "width must be a whole number",
            "resize = { width = 256, height = 256 }",
        ),
    ] {
        assert!(DESC.contains(from), "{from}");
        let e = ModelDesc::parse(&DESC.replace(from, to), &p)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(key) && e.contains(fix) && e.contains("m.toml") && !e.contains('\n'),
            "{to}: {e}"
        );
    }
    // Raw pixels (mean 0, std 1), and no resize, are fine.
    let raw = DESC
        .replace("mean = [127.0, 127.0, 127.0]", "mean = [0.0, 0.0, 0.0]")
        .replace("std = [128.0, 128.0, 128.0]", "std = [1.0, 1.0, 1.0]")
        .replace("resize_shorter = 8\n", "");
    ModelDesc::parse(&raw, &p).unwrap();
    // A squash to a fixed size before the crop, as large as the input or larger.
    for size in ["width = 6, height = 4", "width = 256, height = 256"] {
        let m = ModelDesc::parse(
            &DESC.replace("resize_shorter = 8", &format!("resize = {{ {size} }}")),
            &p,
        )
        .unwrap();
        assert_eq!(m.preprocess.resize_shorter, None);
        assert!(m.preprocess.resize.is_some());
    }
    // A landscape input may be cut from a shorter side between its height and width.
    ModelDesc::parse(
        &DESC.replace("resize_shorter = 8", "resize_shorter = 5"),
        &p,
    )
    .unwrap();
}

#[test]
fn a_missing_or_binary_description_says_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let e = ModelDesc::load(&d.path().join("nope.toml")).unwrap_err();
    let line = crate::error_line(&e);
    assert!(
        line.contains("nope.toml") && line.contains("check --model") && line.contains("setup.sh"),
        "{line}"
    );
    let onnx = d.path().join("m.onnx");
    std::fs::write(&onnx, b"\x08\x08\xff\xfe binary").unwrap();
    let line = crate::error_line(&ModelDesc::load(&onnx).unwrap_err());
    assert!(line.contains("not the .onnx file itself"), "{line}");
}

#[test]
fn label_count_must_match_classes() {
    let d = dir_with_labels(5);
    let p = d.path().join("m.toml");
    let e = ModelDesc::parse(DESC, &p).unwrap_err();
    assert!(e.to_string().contains("5 classes"), "{e}");
}

/// `DESC` with its `[preprocess]` table replaced by `keys`, at an input of `width` × `height`.
fn with_preprocess(keys: &str, width: u32, height: u32) -> String {
    let start = DESC.find("[preprocess]").unwrap();
    let end = DESC.find("[output]").unwrap();
    format!("{}[preprocess]\n{keys}\n{}", &DESC[..start], &DESC[end..])
        .replace("height = 4", &format!("height = {height}"))
        .replace("width = 6", &format!("width = {width}"))
}

/// One preset's expected values: (preset, input side, resize_shorter, crop, interpolation, scale,
/// mean, std, channels).
type Row = (
    &'static str,
    u32,
    Option<u32>,
    Crop,
    Interpolation,
    f32,
    [f32; 3],
    [f32; 3],
    Channels,
);

#[test]
fn presets_resolve_to_their_documented_values() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    let imagenet = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]);
    // (preset, input side, resize_shorter, crop, interpolation, scale, mean, std, channels), as the
    // table in docs/preprocessing.md#presets gives them.
    let table: [Row; 12] = [
        (
            "torchvision",
            224,
            Some(256),
            Crop::Center,
            Interpolation::Bilinear,
            1.0 / 255.0,
            imagenet.0,
            imagenet.1,
            Channels::Rgb,
        ),
        (
            "torchvision",
            299,
            Some(342),
            Crop::Center,
            Interpolation::Bilinear,
            1.0 / 255.0,
            imagenet.0,
            imagenet.1,
            Channels::Rgb,
        ),
        (
            "timm",
            224,
            Some(256),
            Crop::Center,
            Interpolation::Bicubic,
            1.0 / 255.0,
            imagenet.0,
            imagenet.1,
            Channels::Rgb,
        ),
        (
            "timm",
            299,
            Some(341),
            Crop::Center,
            Interpolation::Bicubic,
            1.0 / 255.0,
            imagenet.0,
            imagenet.1,
            Channels::Rgb,
        ),
        (
            "keras",
            224,
            None,
            Crop::Squash,
            Interpolation::Nearest,
            1.0,
            [123.68, 116.779, 103.939],
            [1.0; 3],
            Channels::Bgr,
        ),
        (
            "keras-tf",
            224,
            None,
            Crop::Squash,
            Interpolation::Nearest,
            1.0 / 127.5,
            [1.0; 3],
            [1.0; 3],
            Channels::Rgb,
        ),
        (
            "keras-torch",
            224,
            None,
            Crop::Squash,
            Interpolation::Nearest,
            1.0 / 255.0,
            imagenet.0,
            imagenet.1,
            Channels::Rgb,
        ),
        (
            "ultralytics-cls",
            224,
            Some(224),
            Crop::Center,
            Interpolation::Bilinear,
            1.0 / 255.0,
            [0.0; 3],
            [1.0; 3],
            Channels::Rgb,
        ),
        (
            "efficientnet-lite",
            224,
            Some(256),
            Crop::Center,
            Interpolation::Bicubic,
            1.0,
            [127.0; 3],
            [128.0; 3],
            Channels::Rgb,
        ),
        (
            "efficientnet-lite",
            240,
            Some(274),
            Crop::Center,
            Interpolation::Bicubic,
            1.0,
            [127.0; 3],
            [128.0; 3],
            Channels::Rgb,
        ),
        (
            "efficientnet-lite",
            280,
            Some(320),
            Crop::Center,
            Interpolation::Bicubic,
            1.0,
            [127.0; 3],
            [128.0; 3],
            Channels::Rgb,
        ),
        (
            "efficientnet-lite",
            300,
            Some(343),
            Crop::Center,
            Interpolation::Bicubic,
            1.0,
            [127.0; 3],
            [128.0; 3],
            Channels::Rgb,
        ),
    ];
    for (name, side, shorter, crop, interpolation, scale, mean, std, channels) in table {
        let m = ModelDesc::parse(
            &with_preprocess(&format!("preset = \"{name}\""), side, side),
            &p,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = PreprocessDesc {
            preset: Preset::ALL.into_iter().find(|p| p.name() == name),
            resize_shorter: shorter,
            resize: None,
            crop,
            interpolation,
            scale,
            mean,
            std,
            channels,
        };
        assert_eq!(m.preprocess, want, "{name} at {side}");
    }
    // A non-square input scales with its shorter side.
    let m = ModelDesc::parse(&with_preprocess("preset = \"torchvision\"", 320, 224), &p).unwrap();
    assert_eq!(m.preprocess.resize_shorter, Some(256));
}

#[test]
fn keys_next_to_a_preset_override_it() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    let keys = "preset = \"timm\"\nresize_shorter = 248\ninterpolation = \"bilinear\"\n\
                mean = [0.5, 0.5, 0.5]\nstd = [0.5, 0.5, 0.5]\nchannels = \"bgr\"\ncrop = \"center\"";
    let m = ModelDesc::parse(&with_preprocess(keys, 224, 224), &p).unwrap();
    let pre = &m.preprocess;
    assert_eq!(pre.preset, Some(Preset::Timm));
    assert_eq!(pre.resize_shorter, Some(248));
    assert_eq!(pre.interpolation, Interpolation::Bilinear);
    assert_eq!((pre.mean, pre.std), ([0.5; 3], [0.5; 3]));
    assert_eq!(pre.channels, Channels::Bgr);
    // Not overridden: the preset's.
    assert_eq!((pre.crop, pre.scale), (Crop::Center, 1.0 / 255.0));
    // `scale` too: keras' caffe mean on 0..1.
    let m = ModelDesc::parse(
        &with_preprocess("preset = \"keras\"\nscale = 0.00392157\nmean = [0.485, 0.456, 0.406]\nstd = [0.229, 0.224, 0.225]", 224, 224),
        &p,
    )
    .unwrap();
    assert_eq!(m.preprocess.channels, Channels::Bgr);
    assert_eq!(m.preprocess.scale, 0.00392157);
}

#[test]
fn a_preset_and_another_shape_rule_is_one_error() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    for (keys, key, preset_shape) in [
        (
            "preset = \"torchvision\"\nresize = { width = 256, height = 256 }",
            "`[preprocess] resize` = { width = 256, height = 256 }",
            "shorter side to 256, then a 224×224 centre crop",
        ),
        (
            "preset = \"torchvision\"\ncrop = \"squash\"",
            "`[preprocess] crop` = \"squash\"",
            "shorter side to 256",
        ),
        (
            "preset = \"keras\"\nresize_shorter = 256",
            "`[preprocess] resize_shorter` = 256",
            "a squash to 224×224",
        ),
        (
            "preset = \"keras-tf\"\ncrop = \"center\"",
            "`[preprocess] crop` = \"center\"",
            "a squash to 224×224",
        ),
    ] {
        let e = ModelDesc::parse(&with_preprocess(keys, 224, 224), &p).unwrap_err();
        assert!(
            matches!(
                &e,
                ModelDescError::Value {
                    source: DescValueError::PresetConflict(_),
                    ..
                }
            ),
            "{keys}: {e:?}"
        );
        let line = e.to_string();
        assert!(
            line.contains(key)
                && line.contains(preset_shape)
                && line.contains("remove `preset`")
                && !line.contains('\n'),
            "{keys}: {line}"
        );
    }
}

#[test]
fn an_unknown_preset_suggests_the_nearest_name() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    for (typo, near) in [
        ("torchvison", Some("torchvision")),
        ("keras_tf", Some("keras-tf")),
        ("ultralytics", None),
        ("pillow", None),
    ] {
        let e = ModelDesc::parse(
            &with_preprocess(&format!("preset = \"{typo}\""), 224, 224),
            &p,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("unknown `[preprocess] preset` `{typo}`")),
            "{e}"
        );
        assert!(
            e.contains("`efficientnet-lite`") && !e.contains('\n'),
            "{e}"
        );
        match near {
            Some(n) => assert!(e.contains(&format!("did you mean `{n}`?")), "{e}"),
            None => assert!(!e.contains("did you mean"), "{e}"),
        }
    }
}

#[test]
fn without_a_preset_the_normalisation_and_crop_are_required() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    for (drop, key) in [
        ("crop = \"center\"\n", "`crop`"),
        ("mean = [127.0, 127.0, 127.0]\n", "`mean`"),
        ("std = [128.0, 128.0, 128.0]\n", "`std`"),
    ] {
        let e = ModelDesc::parse(&DESC.replace(drop, ""), &p).unwrap_err();
        assert!(
            matches!(
                &e,
                ModelDescError::Value {
                    source: DescValueError::Missing(_),
                    ..
                }
            ),
            "{e:?}"
        );
        let line = e.to_string();
        assert!(line.contains(key) && line.contains("`preset`"), "{line}");
    }
    // The new keys are optional and default to what descriptions meant before them.
    let m = ModelDesc::parse(DESC, &p).unwrap();
    assert_eq!(m.preprocess.preset, None);
    assert_eq!(m.preprocess.interpolation, Interpolation::Bilinear);
    assert_eq!(m.preprocess.scale, 1.0);
    assert_eq!(m.preprocess.channels, Channels::Rgb);
}

#[test]
fn scale_and_the_mean_std_scale_must_agree() {
    let d = dir_with_labels(3);
    let p = d.path().join("m.toml");
    let bad = |keys: &str, want: &[&str]| {
        let e = ModelDesc::parse(&with_preprocess(keys, 4, 4), &p)
            .unwrap_err()
            .to_string();
        assert!(want.iter().all(|w| e.contains(w)), "{keys}: {e}");
    };
    let norm = "crop = \"center\"\nmean = [0.485, 0.456, 0.406]\nstd = [0.229, 0.224, 0.225]";
    // 0..1 values on the default 0..255 scale: the old message, now also naming `scale`.
    bad(norm, &["multiply them by 255", "scale = 0.00392157"]);
    bad(
        &format!("{norm}\nscale = 0.0"),
        &["`[preprocess] scale` = 0", "above 0"],
    );
    bad(&format!("{norm}\nscale = nan"), &["`[preprocess] scale`"]);
    // 0..255 values with a 1/255 scale (a torchvision preset with a mean pasted from elsewhere).
    bad(
        "preset = \"torchvision\"\nmean = [123.675, 116.28, 103.53]",
        &["`[preprocess] mean`", "divide them by 255", "scale = 1.0"],
    );
    ModelDesc::parse(
        &with_preprocess(&format!("{norm}\nscale = 0.00392157"), 4, 4),
        &p,
    )
    .unwrap();
}
