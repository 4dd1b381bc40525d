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
