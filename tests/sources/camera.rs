//! The V4L2 camera source and `robustream devices` driven as a user would. This machine
//! may have no camera at all, so capture itself is covered by the unit tests of the reconnect state
//! machine (src/source/camera.rs); here: listing devices, a missing device as one clear line, a
//! node that is not a camera, and `[source.camera]` checks.

use std::path::Path;

use crate::util::*;
use robustream::source::camera;

/// The first `/dev/videoN` (N ≥ 7) that does not exist.
fn absent_device() -> (u32, String) {
    (7..)
        .map(|n| (n, format!("/dev/video{n}")))
        .find(|(_, p)| !Path::new(p).exists())
        .unwrap()
}

#[test]
fn devices_lists_the_cameras_or_says_there_are_none() {
    let nodes = camera::video_nodes(Path::new("/dev"));
    let o = run(robustream().arg("devices"));
    let json = run(robustream().args(["devices", "--json"]));
    if !cfg!(feature = "camera") {
        for o in [&o, &json] {
            assert_eq!(o.status.code(), Some(2));
            assert!(
                text(&o.stderr).contains("`camera` feature"),
                "{}",
                text(&o.stderr)
            );
        }
        return;
    }
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(json.status.success(), "{}", text(&json.stderr));
    let list: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    // GenICam cameras (a simulator another test runs) follow the V4L2 nodes, marked by `kind`.
    let list: Vec<&serde_json::Value> = list
        .as_array()
        .expect("a JSON array")
        .iter()
        .filter(|d| d.get("kind").is_none())
        .collect();
    assert_eq!(list.len(), nodes.len(), "{list:?}");
    if nodes.is_empty() {
        assert!(
            text(&o.stdout).starts_with("no V4L2 cameras found (no /dev/video* devices)\n"),
            "{}",
            text(&o.stdout)
        );
    } else {
        // A machine with cameras: every node is listed, in the text and in the JSON.
        for (node, entry) in nodes.iter().zip(list) {
            let p = node.display().to_string();
            assert!(text(&o.stdout).contains(&p), "{}", text(&o.stdout));
            assert_eq!(entry["path"], p.as_str());
        }
    }
}

#[test]
fn a_missing_camera_is_one_clear_line() {
    let (n, device) = absent_device();
    let dir = tempfile::tempdir().unwrap();
    for source in [device.clone(), format!("camera:{n}")] {
        let o = run(robustream()
            .args(["run", "--quiet", "--model"])
            .arg(model())
            .args(["--source", &source, "--out"])
            .arg(dir.path().join("run")));
        assert!(!o.status.success(), "{source}");
        let err = text(&o.stderr);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(&device), "{err}");
        if cfg!(feature = "camera") {
            assert!(lines[0].contains("No such device"), "{err}");
            assert!(
                lines[0].contains("run `robustream devices` to list cameras"),
                "{err}"
            );
        } else {
            assert!(lines[0].contains("`camera` feature"), "{err}");
        }
    }
}

#[test]
#[cfg(feature = "camera")]
fn a_node_that_is_not_a_camera_is_named_so() {
    // /dev/null opens but answers no V4L2 ioctl.
    let dir = tempfile::tempdir().unwrap();
    let o = run(robustream()
        .args(["run", "--quiet", "--model"])
        .arg(model())
        .args(["--source", "/dev/null", "--source-kind", "camera", "--out"])
        .arg(dir.path().join("run")));
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("/dev/null") && err.contains("is not a V4L2 device"),
        "{err}"
    );
}

/// Runs `robustream run` on a config whose `[source]` table is `source` and returns stderr.
fn config_error(dir: &Path, source: &str) -> String {
    let config = dir.join("run.toml");
    std::fs::write(
        &config,
        format!("scenarios = [\"clean\"]\n[source]\n{source}"),
    )
    .unwrap();
    let o = run(quiet_run(&config).arg("--out").arg(dir.join("run")));
    assert!(!o.status.success(), "{source}");
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn camera_settings_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let photos = dir.path().join("photos");
    std::fs::create_dir(&photos).unwrap();
    std::fs::copy(photo("coffee.png"), photos.join("coffee.png")).unwrap();
    // `[source.camera]` on a folder source.
    let err = config_error(
        dir.path(),
        "path = \"photos\"\n[source.camera]\nwidth = 640\n",
    );
    assert!(
        err.contains("`[source.camera]` applies to camera sources only"),
        "{err}"
    );
    // An unknown key.
    let err = config_error(
        dir.path(),
        "path = \"camera:7\"\n[source.camera]\nwidht = 640\n",
    );
    assert!(err.contains("widht"), "{err}");
    // Values are checked before the device is opened; the line names the key.
    let (n, _) = absent_device();
    let err = config_error(
        dir.path(),
        &format!("path = \"camera:{n}\"\n[source.camera]\nbuffers = 1\n"),
    );
    assert!(err.contains("[source.camera] buffers = 1"), "{err}");
    let err = config_error(
        dir.path(),
        &format!("path = \"camera:{n}\"\n[source.camera]\nformat = [\"H264\"]\n"),
    );
    assert!(err.contains("format `H264`"), "{err}");
    // `camera:N` in a config names the device, not a file next to the config.
    let err = config_error(dir.path(), &format!("path = \"camera:{n}\"\n"));
    assert!(err.contains(&format!("error: /dev/video{n}: ")), "{err}");
}
