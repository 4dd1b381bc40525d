//! Bad input never panics: one clear line naming the file/key/frame and what to do; skipped and counted
//! by default, fatal with --strict.

mod common;

use std::path::Path;

use common::*;

fn run_on(source: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    run(robustream()
        .args(["run", "--quiet", "--scenarios", "corruption/contrast/1"])
        .args(extra)
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out))
}

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
