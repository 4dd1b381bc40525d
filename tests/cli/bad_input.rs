//! Bad input never panics: one clear line naming the file/key/frame and what to do; skipped and counted
//! by default, fatal with --strict.

use std::path::Path;

use crate::util::*;

fn no_panic(o: &std::process::Output) {
    let err = text(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// A folder with coffee.png, a corrupt "image", a label the model does not know, and a wrong-size mask.
fn messy_manifest(dir: &Path) -> std::path::PathBuf {
    std::fs::copy(photo("coffee.png"), dir.join("coffee.png")).unwrap();
    std::fs::write(
        dir.join("broken.jpg"),
        b"\xff\xd8\xff\xe0 this is not a jpeg",
    )
    .unwrap();
    image::GrayImage::new(5, 5)
        .save(dir.join("small_mask.png"))
        .unwrap();
    let p = dir.join("manifest.csv");
    std::fs::write(
        &p,
        "path,label,mask\ncoffee.png,espresso,\nbroken.jpg,espresso,\ncoffee.png,unicorn,\ncoffee.png,967,small_mask.png\n",
    )
    .unwrap();
    p
}

#[test]
fn bad_items_are_skipped_counted_and_named() {
    let d = tempfile::tempdir().unwrap();
    let src = messy_manifest(d.path());
    let out = d.path().join("run");
    let o = run_on(&src, &out, &[]);
    no_panic(&o);
    assert!(o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("broken.jpg"), "names the corrupt file:\n{err}");
    // Each on one line (zune-jpeg ends some of its errors with a newline).
    assert!(
        err.lines().all(|l| l.starts_with("warning: skipped ")),
        "{err}"
    );
    assert!(err.contains("unicorn"), "names the unknown label:\n{err}");
    assert!(
        err.contains("small_mask.png"),
        "names the wrong-size mask:\n{err}"
    );
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 1);
    assert_eq!(s["frames"]["skipped"], 3);
    assert_eq!(records(&out).len(), 2);
}

#[test]
fn strict_makes_the_first_bad_item_fatal() {
    let d = tempfile::tempdir().unwrap();
    let src = messy_manifest(d.path());
    let out = d.path().join("run");
    let o = run_on(&src, &out, &["--strict"]);
    no_panic(&o);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("broken.jpg") && err.contains("--strict"),
        "{err}"
    );
    // What was done is still summarised.
    assert_eq!(summary(&out)["run"]["end"], "failed");
}

#[test]
fn config_typo_names_key_and_file() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("typo.toml");
    std::fs::write(&cfg, "model = \"m.toml\"\nsed = 3\n").unwrap();
    let o = run(robustream().args(["run", "--config"]).arg(&cfg));
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("sed") && err.contains("typo.toml"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
}

#[test]
fn unknown_scenario_suggests_the_right_key() {
    let d = tempfile::tempdir().unwrap();
    let o = run(robustream()
        .args([
            "run",
            "--scenarios",
            "corruption/gausian_noise/2",
            "--model",
        ])
        .arg(model())
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(d.path()));
    no_panic(&o);
    let err = text(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("corruption/gaussian_noise/2") && err.contains("robustream scenarios"),
        "{err}"
    );
}

#[test]
fn model_that_does_not_match_its_description_is_refused() {
    let d = tempfile::tempdir().unwrap();
    for (edit, want) in [
        (
            Box::new(|s: String| s.replace("name = \"input\"", "name = \"images\""))
                as Box<dyn Fn(String) -> String>,
            "images",
        ),
        (
            Box::new(|s: String| s.replace("height = 224", "height = 256")),
            "shape",
        ),
        (
            Box::new(|s: String| s.replace("name = \"logits\"", "name = \"probs\"")),
            "probs",
        ),
    ] {
        let m = model_variant(d.path(), "model.toml", edit);
        let o = run(robustream()
            .args(["run", "--model"])
            .arg(&m)
            .arg("--source")
            .arg(photo("coffee.png"))
            .arg("--out")
            .arg(d.path().join("run")));
        no_panic(&o);
        assert_eq!(o.status.code(), Some(1));
        let err = text(&o.stderr);
        assert!(
            err.contains(want) && err.contains("efficientnet_lite0.onnx"),
            "{err}"
        );
    }
}

#[test]
fn missing_runtime_library_and_unavailable_gpu_provider_say_what_to_do() {
    let d = tempfile::tempdir().unwrap();
    let o = run(robustream()
        .env("ORT_DYLIB_PATH", d.path().join("nope.so"))
        .args(["run", "--model"])
        .arg(model())
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(d.path().join("run")));
    no_panic(&o);
    let err = text(&o.stderr);
    assert!(err.contains("nope.so") && err.contains("setup.sh"), "{err}");

    for provider in ["cuda", "tensorrt"] {
        let cfg = d.path().join(format!("{provider}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "model = {:?}\n[source]\npath = {:?}\n[engine]\nprovider = \"{provider}\"\nengine_cache = {:?}\n",
                model(),
                photo("coffee.png"),
                d.path().join("engines")
            ),
        )
        .unwrap();
        let o = run(robustream()
            .args(["run", "--config"])
            .arg(&cfg)
            .arg("--out")
            .arg(d.path().join("run")));
        no_panic(&o);
        if o.status.success() {
            // A machine with the GPU build and a GPU: the provider worked.
            continue;
        }
        let err = text(&o.stderr);
        assert!(
            err.contains(provider) && err.contains("provider = \"cpu\""),
            "{err}"
        );
    }
}

/// A broken-model fixture of `scripts/make_bad_models.py`.
fn bad_model(name: &str) -> std::path::PathBuf {
    root().join("tests/fixtures/engine").join(name)
}

/// A 64×48 image of one grey level.
fn flat(dir: &Path, name: &str, level: u8) {
    image::RgbImage::from_pixel(64, 48, image::Rgb([level; 3]))
        .save(dir.join(name))
        .unwrap();
}

/// The one `error:` line of a failed command; fails unless stderr holds exactly that line.
fn one_error_line(o: &std::process::Output) -> String {
    no_panic(o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    lines[0].to_string()
}

#[test]
fn nan_scores_fail_the_variant_not_the_run_and_are_fatal_under_strict() {
    // The fixture model scores a dark frame and gives NaN for a bright one (make_bad_models.py).
    let d = tempfile::tempdir().unwrap();
    let frames = d.path().join("frames");
    std::fs::create_dir(&frames).unwrap();
    flat(&frames, "bright.png", 230);
    flat(&frames, "dark.png", 20);
    let run_nan = |out: &Path, extra: &[&str]| {
        run(robustream()
            .args(["run", "--quiet", "--scenarios", "corruption/contrast/1"])
            .args(extra)
            .arg("--model")
            .arg(bad_model("nan_when_bright.toml"))
            .arg("--source")
            .arg(&frames)
            .arg("--out")
            .arg(out))
    };
    let out = d.path().join("run");
    let o = run_nan(&out, &[]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    for scenario in ["clean", "corruption/contrast/1"] {
        let line = format!(
            "frame bright.png, scenario {scenario}: the model's output holds NaN/inf (NaN); check \
             that the model description's `[preprocess]` normalises the input as the model was \
             trained (docs/model-description.md#preprocess), then the model alone on a clean image \
             (`python3 scripts/check_model.py --model MODEL.onnx IMAGE`, with EfficientNet-Lite0's \
             preprocessing)"
        );
        assert!(err.contains(&line), "{err}");
    }
    // Only the dark frame's variants are records, every score finite; the others are counted.
    let recs = records(&out);
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r["frame"], "dark.png");
        assert!(
            r["prob"].as_array().unwrap().iter().all(|p| p.is_f64()),
            "{r}"
        );
    }
    let s = summary(&out);
    assert_eq!(s["run"]["variants_failed"], 2, "{}", s["run"]);
    assert_eq!(s["frames"]["read"], 2);

    let out = d.path().join("strict");
    let o = run_nan(&out, &["--strict"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(
        err.contains("frame bright.png, scenario ") && err.contains("NaN/inf (NaN)"),
        "{err}"
    );
    assert!(err.contains("(--strict)"), "{err}");
    assert_eq!(summary(&out)["run"]["end"], "failed");
}

#[test]
fn probabilities_that_do_not_sum_to_one_suggest_logits() {
    // The real model's logits, described as probabilities.
    let d = tempfile::tempdir().unwrap();
    let m = model_variant(d.path(), "probs.toml", |t| {
        t.replace("kind = \"logits\"", "kind = \"probabilities\"")
    });
    let out = d.path().join("run");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--scenarios",
            "corruption/contrast/1",
            "--model",
        ])
        .arg(&m)
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(&out));
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("frame coffee.png, scenario clean: the model's output is not probabilities")
            && err.contains("set `kind = \"logits\"` in ")
            && err.contains("probs.toml"),
        "{err}"
    );
    assert!(records(&out).is_empty());
    assert_eq!(summary(&out)["run"]["variants_failed"], 2);
}

#[test]
fn nan_scores_in_the_saliency_pass_fail_it_and_keep_the_summary() {
    // A mid-grey frame (127: the model's input is exactly 0) is scored; the occluding patch
    // (127.5) makes the fixture's scores NaN.
    let d = tempfile::tempdir().unwrap();
    flat(d.path(), "grey.png", 127);
    image::GrayImage::from_fn(64, 48, |x, y| {
        image::Luma([if (16..48).contains(&x) && (12..36).contains(&y) {
            255
        } else {
            0
        }])
    })
    .save(d.path().join("grey_mask.png"))
    .unwrap();
    let src = d.path().join("m.csv");
    std::fs::write(&src, "path,label,mask\ngrey.png,class1,grey_mask.png\n").unwrap();
    let out = d.path().join("run");
    let o = run(robustream()
        .args([
            "run",
            "--quiet",
            "--saliency",
            "--scenarios",
            "clean",
            "--model",
        ])
        .arg(bad_model("nan_when_bright.toml"))
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out));
    let line = one_error_line(&o);
    assert!(
        line.contains("saliency: frame grey.png (occluded at (")
            && line.contains("the model's output holds NaN/inf (NaN)"),
        "{line}"
    );
    // What the main pass measured is kept.
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "failed");
    assert!(s["run"]["error"].as_str().unwrap().contains("saliency"));
    assert_eq!(records(&out).len(), 1);
}

#[test]
fn unusable_model_files_name_the_file_and_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let garbage = d.path().join("garbage.onnx");
    std::fs::write(&garbage, b"this is not a protobuf \xff\xfe\x00\x01").unwrap();
    let garbage_desc = model_variant(d.path(), "garbage.toml", |t| {
        let onnx = assets().join("models/efficientnet_lite0.onnx");
        t.replace(&format!("{onnx:?}"), &format!("{garbage:?}"))
    });
    let zero_resize = model_variant(d.path(), "zero.toml", |t| {
        t.replace("resize_shorter = 256", "resize_shorter = 0")
    });
    let cases: [(std::path::PathBuf, &[&str]); 5] = [
        (
            d.path().join("nope.toml"),
            &["nope.toml", "check --model", "scripts/setup.sh"],
        ),
        (
            assets().join("models/efficientnet_lite0.onnx"),
            &["efficientnet_lite0.onnx", "not the .onnx file itself"],
        ),
        (garbage_desc, &["garbage.onnx", "not an ONNX model"]),
        (
            bad_model("uint8_input.toml"),
            &[
                "uint8_input.onnx",
                "re-export the model with a float32 input",
            ],
        ),
        (
            zero_resize,
            &["zero.toml", "[preprocess] resize_shorter", "remove the key"],
        ),
    ];
    for (m, want) in cases {
        let o = run(robustream()
            .args(["run", "--quiet", "--model"])
            .arg(&m)
            .arg("--source")
            .arg(photo("coffee.png"))
            .arg("--out")
            .arg(d.path().join("run")));
        let line = one_error_line(&o);
        for w in want {
            assert!(line.contains(w), "{w:?} not in: {line}");
        }
        assert!(line.matches("(os error").count() <= 1, "{line}");
    }
}

#[test]
fn report_on_a_missing_or_empty_run_directory_says_what_to_give() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (dir, why) in [
        (d.path().join("missing"), "no such run directory"),
        (empty, "no records.jsonl here"),
    ] {
        let o = run(robustream().arg("report").arg(&dir));
        let line = one_error_line(&o);
        assert!(
            line.contains(&dir.display().to_string())
                && line.contains(why)
                && line.contains("the folder a run wrote"),
            "{line}"
        );
    }
}

#[test]
fn absurd_engine_threads_are_refused_before_anything_starts() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("threads.toml");
    std::fs::write(&cfg, "[engine]\nthreads = 100000\n").unwrap();
    let o = run(quiet_run(&cfg)
        .arg("--source")
        .arg(photo("coffee.png"))
        .arg("--out")
        .arg(d.path().join("run")));
    let line = one_error_line(&o);
    assert!(
        line.contains("threads.toml")
            && line.contains("`[engine] threads` (--threads) = 100000")
            && line.contains("at most 1024"),
        "{line}"
    );
}

#[test]
fn bench_refuses_nan_scores_and_absurd_threads() {
    let d = tempfile::tempdir().unwrap();
    flat(d.path(), "bright.png", 230);
    let bench = |extra: &[&str]| {
        run(robustream()
            .args(["bench", "--iterations", "1", "--warmup", "0", "--model"])
            .arg(bad_model("nan_when_bright.toml"))
            .arg("--image")
            .arg(d.path().join("bright.png"))
            .args(extra))
    };
    let line = one_error_line(&bench(&[]));
    assert!(
        line.contains("bright.png") && line.contains("the model's output holds NaN/inf (NaN)"),
        "{line}"
    );
    let line = one_error_line(&bench(&["--threads", "100000"]));
    assert!(
        line.contains("--threads") && line.contains("at most 1024"),
        "{line}"
    );
}

/// The lines of `err` that mention `what`.
fn lines_with<'a>(err: &'a str, what: &str) -> Vec<&'a str> {
    err.lines().filter(|l| l.contains(what)).collect()
}

#[test]
fn truncated_images_are_skipped_with_a_line_and_fatal_under_strict() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("photos");
    std::fs::create_dir(&root).unwrap();
    let jpg = std::fs::read(photo("china.jpg")).unwrap();
    let png = std::fs::read(photo("coffee.png")).unwrap();
    for (name, bytes) in [
        ("intact.jpg", &jpg[..]),
        ("intact.png", &png[..]),
        ("jpg_half.jpg", &jpg[..jpg.len() / 2]),
        ("jpg_short.jpg", &jpg[..jpg.len() - 2]),
        ("png_half.png", &png[..png.len() / 2]),
        ("png_short.png", &png[..png.len() - 2]),
    ] {
        std::fs::write(root.join(name), bytes).unwrap();
    }
    // The decoders themselves return the cut JPEG as a whole image (grey where data is missing).
    assert!(image::load_from_memory(&jpg[..jpg.len() / 2]).is_ok());

    let out = d.path().join("run");
    let o = run_on(&root, &out, &[]);
    no_panic(&o);
    assert!(o.status.success());
    let err = text(&o.stderr);
    // One line per skipped file: nothing spills onto a line of its own.
    assert!(
        err.lines().all(|l| l.starts_with("warning: skipped ")),
        "{err}"
    );
    for name in ["jpg_half.jpg", "jpg_short.jpg"] {
        let want = format!(
            "{name}: truncated: the JPEG ends before its end-of-image marker; re-copy the file"
        );
        assert_eq!(lines_with(&err, name).len(), 1, "{err}");
        assert!(lines_with(&err, name)[0].ends_with(&want), "{err}");
    }
    assert!(
        lines_with(&err, "png_half.png")[0]
            .ends_with("png_half.png: truncated: the PNG ends inside its IDAT chunk, before its IEND chunk; re-copy the file"),
        "{err}"
    );
    assert!(
        lines_with(&err, "png_short.png")[0].ends_with(
            "png_short.png: truncated: the PNG ends inside its IEND chunk; re-copy the file"
        ),
        "{err}"
    );
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 2);
    assert_eq!(s["frames"]["skipped"], 4);
    let recs = records(&out);
    assert_eq!(recs.len(), 4);
    assert!(
        recs.iter()
            .all(|r| r["frame"] == "intact.jpg" || r["frame"] == "intact.png")
    );

    let out = d.path().join("strict");
    let o = run_on(&root, &out, &["--strict"]);
    no_panic(&o);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.contains("jpg_half.jpg: truncated: the JPEG ends before its end-of-image marker")
            && err.contains("--strict"),
        "{err}"
    );
    assert_eq!(summary(&out)["run"]["end"], "failed");
}

/// A PNG chunk with its CRC-32.
fn png_chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
    out
}

#[test]
fn devices_folders_huge_files_and_huge_headers_are_one_line_each() {
    let d = tempfile::tempdir().unwrap();

    // /dev/zero as the source: refused before anything is read.
    let o = run_on(Path::new("/dev/zero"), &d.path().join("zero"), &[]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("/dev/zero: is a character device, not an image file, a manifest or a folder"),
        "{err}"
    );

    // The same things as manifest rows: each skipped with its line.
    std::fs::copy(photo("coffee.png"), d.path().join("coffee.png")).unwrap();
    // A 71-byte PNG whose header declares 60000×60000 RGB pixels (10 GiB decoded).
    let mut huge = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = 60_000u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&60_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    huge.extend(png_chunk(b"IHDR", &ihdr));
    huge.extend(png_chunk(
        b"IDAT",
        &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    ));
    huge.extend(png_chunk(b"IEND", &[]));
    std::fs::write(d.path().join("huge.png"), &huge).unwrap();
    // A 300 MiB file (sparse: no disk used).
    std::fs::File::create(d.path().join("big.jpg"))
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    std::fs::create_dir(d.path().join("sub.png")).unwrap();
    let mut rows = vec![
        "coffee.png,espresso",
        "/dev/zero,espresso",
        "huge.png,",
        "big.jpg,",
        "sub.png,",
    ];
    let fifo = std::process::Command::new("mkfifo")
        .arg(d.path().join("pipe.png"))
        .status()
        .is_ok_and(|s| s.success());
    if fifo {
        rows.push("pipe.png,");
    }
    let src = manifest(d.path(), &rows);
    let out = d.path().join("run");
    let o = run_on(&src, &out, &[]);
    no_panic(&o);
    assert!(o.status.success());
    let err = text(&o.stderr);
    assert!(
        err.lines().all(|l| l.starts_with("warning: skipped ")),
        "{err}"
    );
    let mut wants = vec![
        "/dev/zero: is a character device, not an image file; give the path of an image file",
        "huge.png: the image is too large to decode: its header declares 60000×60000 pixels \
         (10.1 GiB decoded; robustream decodes at most 65535 pixels a side and 512 MiB); shrink \
         the image",
        "big.jpg: the image file is larger than 256 MiB (the most robustream reads of one file); \
         shrink or re-encode it",
        "sub.png: is a directory, not an image file; give the path of an image file",
    ];
    if fifo {
        wants.push(
            "pipe.png: is a FIFO (named pipe), not an image file; give the path of an image file",
        );
    }
    for want in &wants {
        let (name, _) = want.split_once(": ").unwrap();
        let lines = lines_with(&err, name);
        assert_eq!(lines.len(), 1, "{name}:\n{err}");
        assert!(lines[0].ends_with(want), "{want}\n{err}");
    }
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 1);
    assert_eq!(s["frames"]["skipped"], wants.len());
    assert_eq!(records(&out).len(), 2);
}

#[test]
fn a_huge_header_or_label_gives_a_short_line_naming_the_file_and_the_column() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(photo("coffee.png"), d.path().join("coffee.png")).unwrap();
    // 2,000 columns: `path`, `label` and 1,998 unknown ones (about 17,000 characters).
    let extra: Vec<String> = (2..2000).map(|i| format!("column{i}")).collect();
    let p = d.path().join("wide.csv");
    std::fs::write(
        &p,
        format!(
            "path,label,{}\ncoffee.png,espresso{}\n",
            extra.join(","),
            ",".repeat(1998)
        ),
    )
    .unwrap();
    let o = run_on(&p, &d.path().join("run"), &[]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.len() < 300, "{} characters: {err}", err.len());
    assert!(
        err.contains("wide.csv") && err.contains("`column2`") && err.contains("more"),
        "{err}"
    );

    // A 100,000-character label in a row: skipped with a bounded warning that still names it.
    let p = d.path().join("long_label.csv");
    let label = "x".repeat(100_000);
    std::fs::write(
        &p,
        format!("path,label\ncoffee.png,{label}\ncoffee.png,espresso\n"),
    )
    .unwrap();
    let out = d.path().join("run2");
    let o = run_on(&p, &out, &[]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    let warning = err
        .lines()
        .find(|l| l.contains("is not a class"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(
        warning.len() < 400,
        "{} characters: {warning}",
        warning.len()
    );
    assert!(
        warning.contains("coffee.png") && warning.contains("characters cut"),
        "{warning}"
    );
    assert_eq!(summary(&out)["frames"]["skipped"], 1);
}

/// A manifest of `n` rows of coffee.png in `dir`.
fn coffee_manifest(dir: &Path, n: usize) -> std::path::PathBuf {
    std::fs::copy(photo("coffee.png"), dir.join("coffee.png")).unwrap();
    let p = dir.join("coffee.csv");
    std::fs::write(
        &p,
        format!("path,label\n{}", "coffee.png,espresso\n".repeat(n)),
    )
    .unwrap();
    p
}

/// The `error:` line of a run's stderr.
fn error_line(o: &std::process::Output) -> String {
    let err = text(&o.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "one error line: {err}");
    lines[0].to_string()
}

#[test]
fn a_failed_records_write_is_named_and_fails_the_run() {
    let d = tempfile::tempdir().unwrap();
    let src = coffee_manifest(d.path(), 3);
    let out = d.path().join("run");
    std::fs::create_dir(&out).unwrap();
    // Every write to /dev/full fails with ENOSPC, as on a full disk.
    std::os::unix::fs::symlink("/dev/full", out.join("records.jsonl")).unwrap();
    let o = run_on(&src, &out, &[]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let e = error_line(&o);
    assert!(
        e.contains("cannot write the records of frame `coffee.png` to ")
            && e.contains("records.jsonl: ")
            && e.contains("free disk space"),
        "{e}"
    );
    assert!(!e.contains("summary"), "the summary was written: {e}");
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "failed", "{s}");
    assert!(
        s["run"]["error"]
            .as_str()
            .is_some_and(|m| m.contains("records.jsonl")),
        "{s}"
    );
}

#[test]
fn a_full_disk_mid_frame_leaves_whole_frames_and_names_both_failures() {
    use std::os::unix::process::CommandExt;
    // Files of this process may not grow past LIMIT bytes (RLIMIT_FSIZE): a write crossing it
    // writes up to the limit and fails (EFBIG), as a filling disk does. records.jsonl reaches it
    // within a few frames, in the middle of a line; summary.json is larger than LIMIT.
    const LIMIT: u64 = 2000;
    let d = tempfile::tempdir().unwrap();
    let src = coffee_manifest(d.path(), 20);
    let out = d.path().join("run");
    let mut cmd = robustream();
    cmd.args(["run", "--quiet", "--scenarios", "corruption/contrast/1"])
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out);
    // SAFETY: between fork and exec the closure only calls `setrlimit` and `signal`, both
    // async-signal-safe, on memory it owns; SIGXFSZ is ignored so the write fails with EFBIG
    // instead of killing the process.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    // The run must end (a fatal error while the source waited for room once hung it).
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            panic!("the run did not end after its records write failed");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = child.wait_with_output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let e = error_line(&o);
    assert!(
        e.contains("cannot write the records of frame `coffee.png` to ")
            && e.contains("records.jsonl: ")
            && e.contains("cut off again"),
        "{e}"
    );
    assert!(
        e.contains("the summary was not written")
            && e.contains("summary.json")
            && e.contains("robustream report"),
        "{e}"
    );
    assert!(!out.join("summary.json.tmp").exists());
    // The records end with the last whole frame: every line parses, two per frame.
    let written = std::fs::read_to_string(out.join("records.jsonl")).unwrap();
    assert!(written.ends_with('\n'), "{written}");
    let lines = records(&out);
    assert!(
        !lines.is_empty() && lines.len().is_multiple_of(2),
        "{}",
        lines.len()
    );
    assert!(lines.len() < 40);
    assert!(written.len() as u64 <= LIMIT);
    // `report` rebuilds the summary from them, with no torn line to skip.
    let o = run(robustream().arg("report").arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        !text(&o.stderr).contains("truncated"),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stdout).contains("clean"), "{}", text(&o.stdout));
}

#[test]
fn annotations_that_are_devices_fifos_or_huge_are_refused_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    std::fs::copy(photo("coffee.png"), d.path().join("coffee.png")).unwrap();
    // A 300 MiB annotation (sparse: no disk used), over the bounded reader's 256 MiB.
    std::fs::File::create(d.path().join("big.xml"))
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let mut rows = vec![
        "path,label,annotation",
        "coffee.png,espresso,",
        "coffee.png,espresso,/dev/zero",
        "coffee.png,espresso,big.xml",
    ];
    let fifo = std::process::Command::new("mkfifo")
        .arg(d.path().join("pipe.xml"))
        .status()
        .is_ok_and(|s| s.success());
    if fifo {
        rows.push("coffee.png,espresso,pipe.xml");
    }
    let src = d.path().join("boxes.csv");
    std::fs::write(&src, rows.join("\n") + "\n").unwrap();
    let out = d.path().join("run");
    let t0 = std::time::Instant::now();
    let o = run_on(&src, &out, &[]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Neither /dev/zero read to its (missing) end nor the FIFO opened with no writer.
    assert!(t0.elapsed() < std::time::Duration::from_secs(60));
    let err = text(&o.stderr);
    assert!(
        err.lines().all(|l| l.starts_with("warning: skipped ")),
        "{err}"
    );
    let mut wants = vec![
        (
            "/dev/zero",
            "coffee.png: annotation /dev/zero: is a character device, not an annotation file; \
             give the path of an annotation file",
        ),
        (
            "big.xml",
            "big.xml: the annotation file is larger than 256 MiB (the most robustream reads of \
             one file); shrink or re-encode it",
        ),
    ];
    if fifo {
        wants.push((
            "pipe.xml",
            "pipe.xml: is a FIFO (named pipe), not an annotation file; give the path of an \
             annotation file",
        ));
    }
    for (name, want) in &wants {
        let lines = lines_with(&err, name);
        assert_eq!(lines.len(), 1, "{name}:\n{err}");
        assert!(lines[0].ends_with(want), "{want}\n{err}");
    }
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 1);
    assert_eq!(s["frames"]["skipped"], wants.len());

    // Fatal under --strict, naming the first one.
    let o = run_on(&src, &d.path().join("strict"), &["--strict"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let e = error_line(&o);
    assert!(
        e.contains("annotation /dev/zero: is a character device") && e.contains("--strict"),
        "{e}"
    );
}

#[test]
fn heic_and_avif_files_in_a_folder_are_named_and_counted_as_skipped() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("photos");
    std::fs::create_dir(&root).unwrap();
    std::fs::copy(photo("coffee.png"), root.join("coffee.png")).unwrap();
    // Named by extension before anything is read (a phone's HEIC, an AVIF from the web).
    std::fs::write(root.join("IMG_0001.HEIC"), b"\0\0\0\x18ftypheic").unwrap();
    std::fs::write(root.join("web.avif"), b"\0\0\0\x1cftypavif").unwrap();
    std::fs::write(root.join("notes.txt"), b"not an image, passed over").unwrap();
    let out = d.path().join("run");
    let o = run_on(&root, &out, &[]);
    no_panic(&o);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.lines().all(|l| l.starts_with("warning: skipped ")),
        "{err}"
    );
    for (name, ext) in [("IMG_0001.HEIC", "HEIC"), ("web.avif", "avif")] {
        let lines = lines_with(&err, name);
        assert_eq!(lines.len(), 1, "{name}:\n{err}");
        assert!(
            lines[0].contains(&format!(
                "{name}: cannot decode image (.{ext} files are not decoded by this robustream, \
                 which reads .jpg .jpeg .png"
            )) && lines[0].ends_with("convert the file to PNG or JPEG"),
            "{err}"
        );
    }
    assert!(!err.contains("notes.txt"), "{err}");
    let s = summary(&out);
    assert_eq!(s["frames"]["read"], 1);
    assert_eq!(s["frames"]["skipped"], 2);

    let o = run_on(&root, &d.path().join("strict"), &["--strict"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    let e = error_line(&o);
    assert!(
        e.contains("IMG_0001.HEIC: cannot decode image") && e.contains("--strict"),
        "{e}"
    );
}

#[test]
fn nan_scores_in_the_challenge_are_counted_not_scored() {
    // Flat frames with a centred mask: on a bright background the fixture's scores are NaN
    // (the composite's mean is above 127), on a dark one they are scores.
    let d = tempfile::tempdir().unwrap();
    let mut rows = vec!["path,label,mask".to_string()];
    image::GrayImage::from_fn(64, 48, |x, y| {
        image::Luma([u8::from((16..48).contains(&x) && (12..36).contains(&y)) * 255])
    })
    .save(d.path().join("mask.png"))
    .unwrap();
    for (name, level, class) in [
        ("dark0.png", 20, 0),
        ("dark1.png", 20, 1),
        ("bright0.png", 230, 0),
        ("bright1.png", 230, 1),
    ] {
        flat(d.path(), name, level);
        rows.push(format!("{name},class{class},mask.png"));
    }
    let src = d.path().join("m.csv");
    std::fs::write(&src, rows.join("\n") + "\n").unwrap();
    let out = d.path().join("run");
    let o = run(robustream()
        .args(["run", "--quiet", "--challenge", "--batch", "8"])
        .args(["--scenarios", "clean", "--model"])
        .arg(bad_model("nan_when_bright.toml"))
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out));
    no_panic(&o);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let s = summary(&out);
    let c = &s["run"]["challenge"];
    assert_eq!(c["applicable"], true, "{c}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("challenge.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{c}");
    let sum = |key: &str| lines.iter().map(|l| l[key].as_u64().unwrap()).sum::<u64>();
    // One batch holds every background, so each foreground meets the bright ones: not scored.
    let failed = c["failed"].as_u64().unwrap();
    assert!(failed > 0 && failed == sum("failed"), "{c}");
    assert!(
        lines.iter().all(|l| l["failed"].as_u64() > Some(0)),
        "{lines:?}"
    );
    assert_eq!(c["composites"].as_u64(), Some(sum("composites")));
    // A foreground no scored composite fooled is undecided, out of the accuracy.
    for l in &lines {
        assert_eq!(l["undecided"], l["vulnerable"] == false, "{l}");
    }
    let (fgs, vulnerable, undecided) = (
        c["foregrounds"].as_u64().unwrap(),
        c["vulnerable"].as_u64().unwrap(),
        c["undecided"].as_u64().unwrap(),
    );
    assert_eq!(fgs + undecided, 4, "{c}");
    assert_eq!(vulnerable, fgs, "{c}");
    assert_eq!(
        s["metrics"]["in9"]["challenge"]["failed"].as_u64(),
        Some(failed)
    );
    // One warning line per foreground, naming it, a background and the cause.
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warning: challenge: frame "))
        .collect();
    assert_eq!(warnings.len(), 4, "{err}");
    assert!(
        warnings.iter().all(|w| w.contains("on background bright")
            && w.contains("the model's output holds NaN/inf (NaN)")
            && w.contains("composites of this foreground not scored")),
        "{err}"
    );
}

#[test]
fn full_disk_for_resources_challenge_and_saliency_outputs_is_named_and_fails_the_run() {
    let d = tempfile::tempdir().unwrap();
    // resources.csv on a full disk: every write to /dev/full fails with ENOSPC.
    let src = coffee_manifest(d.path(), 3);
    let out = d.path().join("resources");
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink("/dev/full", out.join("resources.csv")).unwrap();
    let o = run_on(&src, &out, &[]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let e = error_line(&o);
    assert!(
        e.contains("cannot write the header to ")
            && e.contains("resources.csv: No space left on device")
            && e.ends_with("free disk space or write the run elsewhere (--out)"),
        "{e}"
    );
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "failed", "{s}");
    assert!(
        s["run"]["error"]
            .as_str()
            .is_some_and(|m| m.contains("resources.csv")),
        "{s}"
    );

    // challenge.jsonl and saliency.jsonl: dark flat frames with masks (scored by the fixture).
    image::GrayImage::from_fn(64, 48, |x, y| {
        image::Luma([u8::from((16..48).contains(&x) && (12..36).contains(&y)) * 255])
    })
    .save(d.path().join("mask.png"))
    .unwrap();
    flat(d.path(), "dark0.png", 20);
    flat(d.path(), "dark1.png", 30);
    let src = d.path().join("masked.csv");
    std::fs::write(
        &src,
        "path,label,mask\ndark0.png,class0,mask.png\ndark1.png,class1,mask.png\n",
    )
    .unwrap();
    for (pass, file) in [
        ("--challenge", "challenge.jsonl"),
        ("--saliency", "saliency.jsonl"),
    ] {
        let out = d.path().join(file);
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink("/dev/full", out.join(file)).unwrap();
        let o = run(robustream()
            .args(["run", "--quiet", pass, "--scenarios", "clean", "--model"])
            .arg(bad_model("nan_when_bright.toml"))
            .arg("--source")
            .arg(&src)
            .arg("--out")
            .arg(&out));
        no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "{file}: {}", text(&o.stderr));
        let e = error_line(&o);
        assert!(
            e.contains("cannot write the line of frame `dark0.png` to ")
                && e.contains(&format!("{file}: No space left on device"))
                && e.ends_with("free disk space or write the run elsewhere (--out)"),
            "{e}"
        );
        // The main pass's measurements are kept; the run failed.
        let s = summary(&out);
        assert_eq!(s["run"]["end"], "failed", "{s}");
        assert_eq!(records(&out).len(), 2, "{file}");
    }
}

/// A FIFO at `path` (`mkfifo`), or `None` where there is no `mkfifo`.
fn fifo(path: &Path) -> Option<std::path::PathBuf> {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    made.is_ok_and(|s| s.success()).then(|| path.to_path_buf())
}

/// A sparse file of `len` bytes at `path` (no disk used).
fn sparse(path: &Path, len: u64) -> std::path::PathBuf {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
    path.to_path_buf()
}

#[test]
fn config_and_model_description_that_are_devices_fifos_or_huge_are_one_line_each() {
    let d = tempfile::tempdir().unwrap();
    let mut bad = vec![std::path::PathBuf::from("/dev/zero")];
    bad.extend(fifo(&d.path().join("pipe.toml")));
    bad.push(sparse(&d.path().join("huge.toml"), (16 << 20) + 1));
    for path in &bad {
        let why = match path.file_name().and_then(|n| n.to_str()) {
            Some("zero") => "it is a character device, not a regular file",
            Some("pipe.toml") => "it is a FIFO (named pipe), not a regular file",
            _ => "the file is larger than 16 MiB",
        };
        // As the run config: refused before anything else (a FIFO without blocking).
        let o = run(robustream().args(["run", "--config"]).arg(path));
        no_panic(&o);
        let line = one_error_line(&o);
        assert!(
            line.contains(&format!("cannot read config {}: {why}", path.display()))
                && line.contains("check the --config path"),
            "{line}"
        );
        // As the model description.
        let o = run(robustream()
            .args(["run", "--quiet", "--model"])
            .arg(path)
            .arg("--source")
            .arg(photo("coffee.png"))
            .arg("--out")
            .arg(d.path().join("run")));
        no_panic(&o);
        let line = one_error_line(&o);
        assert!(
            line.contains(&format!(
                "cannot read model description {}: {why}",
                path.display()
            )) && line.contains("check --model"),
            "{line}"
        );
    }
}
