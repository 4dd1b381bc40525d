//! Masks on a fixed camera from a learned background plate, as a user runs it: the
//! synthetic camera with `[source.plate]`, a mask scenario, the real model. The learning frames are
//! evaluated without masks (mask scenarios skip them), later frames get the plate's masks.

use crate::util::*;

#[test]
fn background_scenarios_run_on_plate_masks_after_learning() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plate.toml");
    std::fs::write(
        &config,
        "scenarios = [\"background/only_fg\"]\n[source]\npath = \"synthetic\"\nkind = \"synthetic\"\n\
         [source.synthetic]\nwidth = 120\nheight = 90\nfps = 3\nframes = 24\nobjects = 2\nseed = 3\n\
         [source.plate]\nframes = 10\n",
    )
    .unwrap();
    let out = dir.path().join("run");
    let o = run(quiet_run(&config).arg("--out").arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = records(&out);
    let frames_of = |key: &str| -> Vec<u64> {
        recs.iter()
            .filter(|r| r["scenario"] == key)
            .map(|r| {
                r["frame"].as_str().unwrap()["synthetic/".len()..]
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(frames_of("clean"), (0..24).collect::<Vec<u64>>());
    let fg = frames_of("background/only_fg");
    assert!(
        fg.iter().all(|&n| n >= 10),
        "learning frames have no mask: {fg:?}"
    );
    assert!(
        fg.len() >= 12,
        "frames after learning get plate masks: {fg:?}"
    );
    // Foreground extraction is the `mask` latency stage of the frames after learning.
    let masked: Vec<u64> = recs
        .iter()
        .filter(|r| r["scenario"] == "clean" && r["ms"]["mask"].as_f64().is_some())
        .map(|r| {
            r["frame"].as_str().unwrap()["synthetic/".len()..]
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(masked, (10..24).collect::<Vec<u64>>());
    let s = summary(&out);
    assert!(
        s["run"]["source"]
            .as_str()
            .unwrap()
            .contains("background plate learned over 10 frames"),
        "{s}"
    );
    // The plate settings are checked before the run.
    std::fs::write(
        &config,
        "[source]\npath = \"synthetic\"\nkind = \"synthetic\"\n[source.plate]\nframes = 0\n",
    )
    .unwrap();
    let o = run(&mut quiet_run(&config));
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("[source.plate] frames = 0"),
        "{}",
        text(&o.stderr)
    );
}
