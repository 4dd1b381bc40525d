//! Sources with nothing to evaluate are one error line naming the path and what was expected, never
//! an empty summary with exit 0: an empty folder, a manifest without rows, ImageNet-C and IN-9
//! layouts without images, a synthetic camera of 0 frames, a video with no decodable frame. A source
//! whose items are all unreadable is different: those are counted skips (exit 0).

use std::path::Path;
use std::process::Output;
use std::sync::atomic::AtomicBool;

use crate::util::*;
use robustream::app::pipeline::{self, EndReason, PipelineConfig, PipelineInputs};
use robustream::classmap::ClassMap;
use robustream::engine::EngineConfig;
use robustream::engine::onnx::OnnxEngine;
use robustream::model::ModelDesc;
use robustream::scenario::ScenarioStage;
use robustream::scenario::schedule::Spread;
use robustream::scenario::{Catalog, Plan};
use robustream::source::memory::MemorySource;

/// `robustream run --quiet` on the real model from `source` into `out`, with `extra` arguments
/// (the scenarios among them; the default plan otherwise).
fn run_on(source: &Path, out: &Path, extra: &[&str]) -> Output {
    robustream()
        .args(["run", "--quiet", "--model"])
        .arg(model())
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

/// The run failed with exit 1 and one `error:` line on stderr containing every one of `want`;
/// returns it. Besides it only the warnings of skipped items may appear (FFmpeg's own log is
/// silenced: its lines used to land in the middle of ours).
fn one_error_line(o: &Output, want: &[&str]) -> String {
    let all = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{all}");
    let err: String = all
        .lines()
        .filter(|l| !l.starts_with("warning: skipped "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(err.lines().count(), 1, "one line: {all}");
    assert!(err.starts_with("error: "), "{all}");
    for w in want {
        assert!(err.contains(w), "`{w}` missing from: {err}");
    }
    err
}

#[test]
fn empty_inputs_fail_at_open_with_one_line() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let out = r.join("run");

    // A folder with files that are not images (and a hidden one) is an empty folder.
    let photos = r.join("photos");
    std::fs::create_dir_all(photos.join("espresso")).unwrap();
    std::fs::write(photos.join("notes.txt"), "x").unwrap();
    std::fs::write(photos.join(".hidden.png"), "x").unwrap();
    let o = run_on(&photos, &out, &["--source-kind", "folder"]);
    one_error_line(
        &o,
        &[
            &photos.display().to_string(),
            "no images (.jpg .jpeg .png",
            "in it or below it",
            "point --source",
        ],
    );

    // A manifest with its header and no rows.
    let csv = r.join("list.csv");
    std::fs::write(&csv, "path,label\n\n").unwrap();
    one_error_line(
        &run_on(&csv, &out, &[]),
        &[
            &csv.display().to_string(),
            "header but no rows",
            "add one row",
        ],
    );

    // An ImageNet-C layout whose folders hold no image.
    let ic = r.join("ImageNet-C");
    std::fs::create_dir_all(ic.join("fog/3/n01440764")).unwrap();
    one_error_line(
        &run_on(
            &ic,
            &out,
            &[
                "--source-kind",
                "imagenet-c",
                "--scenarios",
                "corruption/fog/3",
            ],
        ),
        &[
            &ic.display().to_string(),
            "no images (.jpg",
            "fog/3",
            "wnid folders",
        ],
    );

    // An IN-9 release whose class folders are empty.
    let in9 = r.join("in9");
    std::fs::create_dir_all(in9.join("original/val/00_dog")).unwrap();
    one_error_line(
        &run_on(&in9, &out, &[]),
        &[&in9.display().to_string(), "no images (.jpg", "<NN_class>"],
    );

    // A synthetic camera of no frames.
    one_error_line(
        &run_on(Path::new("synthetic:32x32@30/0"), &out, &[]),
        &["synthetic:32x32@30/0", "frame count of 0", "endless"],
    );

    // None of them began a run.
    assert!(!out.join("records.jsonl").exists());
}

#[test]
fn a_video_without_a_decodable_frame_fails_the_run() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let clip = r.join("clip.avi");
    ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        "testsrc=size=64x48:rate=10:duration=1",
        "-c:v",
        "mjpeg",
        clip.to_str().unwrap(),
    ]);

    // Every JPEG's frame header (SOF0) wiped: the container is intact, no frame decodes.
    let bytes = std::fs::read(&clip).unwrap();
    let mut wiped = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(&[0xff, 0xc0]) {
            wiped.extend_from_slice(&[0, 0]);
            i += 2;
        } else {
            wiped.push(bytes[i]);
            i += 1;
        }
    }
    let broken = r.join("broken.avi");
    std::fs::write(&broken, wiped).unwrap();
    let out = r.join("broken");
    one_error_line(
        &run_on(&broken, &out, &[]),
        &[
            &broken.display().to_string(),
            "no decodable video frame",
            "ffprobe",
        ],
    );
    // The run began: its summary says how it ended and counts the damage it met.
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "failed");
    assert_eq!(s["frames"]["read"], 0);
    assert!(
        s["frames"]["skipped"].as_u64().unwrap() >= 1,
        "{}",
        s["frames"]
    );
    assert!(
        s["run"]["error"]
            .as_str()
            .unwrap()
            .contains("no decodable video frame")
    );

    // A window past the end of the file.
    let config = r.join("late.toml");
    std::fs::write(
        &config,
        format!(
            "out = {:?}\nscenarios = [\"clean\"]\n[source]\npath = {:?}\n[source.video]\nstart = 5\n",
            r.join("late"),
            clip
        ),
    )
    .unwrap();
    let o = quiet_run(&config).output().unwrap();
    one_error_line(
        &o,
        &[
            &clip.display().to_string(),
            "no video frame from `start` = 5 s",
            "[source.video]",
        ],
    );
    assert_eq!(summary(&r.join("late"))["run"]["end"], "failed");

    // The intact clip runs: the checks above are about emptiness, not about video.
    let out = r.join("ok");
    let o = run_on(&clip, &out, &["--scenarios", "clean"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(summary(&out)["frames"]["read"], 10);
}

#[test]
fn a_source_whose_items_are_all_unreadable_is_counted_skips() {
    let d = tempfile::tempdir().unwrap();
    let photos = d.path().join("photos");
    std::fs::create_dir_all(&photos).unwrap();
    for name in ["a.png", "b.jpg"] {
        std::fs::write(photos.join(name), b"not an image").unwrap();
    }
    let out = d.path().join("run");
    let o = run_on(&photos, &out, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = summary(&out);
    assert_eq!(s["run"]["end"], "completed");
    assert_eq!(
        (
            s["frames"]["read"].as_u64(),
            s["frames"]["skipped"].as_u64()
        ),
        (Some(0), Some(2))
    );
}

#[test]
fn any_source_that_gives_nothing_at_all_fails_the_run() {
    // The pipeline's own net under every kind: a source with no item (here frames in memory, none).
    let model = ModelDesc::load(&model()).unwrap();
    let config = EngineConfig {
        library: Some(ort_lib()),
        ..EngineConfig::default()
    };
    let plan = Plan::from_items::<&str>(&[], &Catalog::builtin()).unwrap();
    let schedule = Spread::default().schedule(plan.len(), 0);
    let inputs = PipelineInputs {
        source: Box::new(MemorySource::new(Vec::new())),
        plan,
        schedule,
        model: model.clone(),
        engine: Box::new(OnnxEngine::new(&model, &config).unwrap()),
        class_map: ClassMap::identity(&model.labels),
        seed: 0,
        stage: ScenarioStage::ModelInput,
        config: PipelineConfig::default(),
        strict: false,
        limit: None,
        flips: None,
        gpu: None,
        select: None,
        engine_thread_warmup: 0,
    };
    let outcome = pipeline::run(inputs, &AtomicBool::new(false), &mut |_| Ok(()));
    match &outcome.end {
        EndReason::Failed(e) => assert!(
            e.starts_with("memory (0 frames): the source ended without giving a single frame"),
            "{e}"
        ),
        other => panic!("ended {other:?}"),
    }
}
