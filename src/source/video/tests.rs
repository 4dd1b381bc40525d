//! The video source's tests that need no stream: settings, spellings, open errors.

use super::*;
use crate::source::{RawSourceConfig, SourceKind};

#[test]
fn times_parse_as_seconds_or_sums_of_parts() {
    assert_eq!(parse_time("90"), Ok(90.0));
    assert_eq!(parse_time("1m30s"), Ok(90.0));
    assert_eq!(parse_time("1.5m"), Ok(90.0));
    assert_eq!(parse_time(" 1h2m3.5s "), Ok(3723.5));
    assert_eq!(parse_time("2.25"), Ok(2.25));
    assert!(parse_time("").is_err());
    assert!(
        parse_time("1d")
            .unwrap_err()
            .to_string()
            .contains("unit `d`")
    );
    assert!(parse_time("abc").is_err());
    assert!(parse_time("-3s").is_err());
    assert!(TimeSpec::Seconds(-1.0).seconds().is_err());
    assert!(TimeSpec::Seconds(f64::NAN).seconds().is_err());
}

#[test]
fn config_reads_loop_start_stop_every() {
    let c: VideoConfig =
        toml::from_str("loop = 3\nstart = \"1m30s\"\nstop = 100\nevery = 2\nrealtime = true")
            .unwrap();
    let s = c.settings().unwrap();
    assert_eq!(
        s,
        Settings {
            passes: Some(3),
            start: 90.0,
            stop: Some(100.0),
            realtime: true,
            every: 2,
            timeout: READ_TIMEOUT,
            open_timeout: OPEN_TIMEOUT,
            reconnect: None,
        }
    );
    let net = |t: &str| toml::from_str::<VideoConfig>(t).unwrap().settings();
    let s = net("timeout = 2\nopen_timeout = \"1.5s\"\nreconnect = \"30s\"").unwrap();
    assert_eq!(
        (s.timeout, s.open_timeout, s.reconnect),
        (
            std::time::Duration::from_secs(2),
            std::time::Duration::from_millis(1500),
            Some(std::time::Duration::from_secs(30))
        )
    );
    assert_eq!(
        net("reconnect = false").unwrap().reconnect,
        Some(Default::default())
    );
    assert_eq!(net("reconnect = true").unwrap().reconnect, None);
    assert_eq!(
        net("reconnect = 4").unwrap().reconnect,
        Some(std::time::Duration::from_secs(4))
    );
    assert!(
        net("open_timeout = 0.01")
            .unwrap_err()
            .to_string()
            .contains("`open_timeout`")
    );
    assert!(
        net("reconnect = \"soon\"")
            .unwrap_err()
            .to_string()
            .contains("`reconnect`")
    );
    let c: VideoConfig = toml::from_str("loop = true\nstart = 1.5").unwrap();
    assert_eq!(c.settings().unwrap().passes, None);
    assert_eq!(c.settings().unwrap().start, 1.5);
    let c: VideoConfig = toml::from_str("loop = false").unwrap();
    assert_eq!(c.settings().unwrap().passes, Some(1));
    assert_eq!(VideoConfig::default().settings().unwrap().every, 1);
    assert!(toml::from_str::<VideoConfig>("loops = 2").is_err());
    assert!(toml::from_str::<VideoConfig>("loop = \"x\"").is_err());
    let bad = |t: &str| {
        toml::from_str::<VideoConfig>(t)
            .unwrap()
            .settings()
            .unwrap_err()
            .to_string()
    };
    assert!(bad("start = 5\nstop = 5").contains("after `start`"));
    assert!(bad("every = 0").contains("`every`"));
    assert!(bad("loop = 0").contains("`loop`"));
    assert!(bad("start = \"5x\"").contains("`start`"));
}

#[test]
fn urls_and_video_files_are_told_apart_by_spelling() {
    assert_eq!(
        url_scheme(Path::new("rtsp://cam.local:554/live")).as_deref(),
        Some("rtsp")
    );
    assert_eq!(
        url_scheme(Path::new("HTTPS://x/y.mp4")).as_deref(),
        Some("https")
    );
    assert_eq!(url_scheme(Path::new("ftp://x")).as_deref(), Some("ftp"));
    assert_eq!(url_scheme(Path::new("data/clip.mp4")), None);
    assert_eq!(url_scheme(Path::new("C:/x")), None);
    assert_eq!(url_scheme(Path::new("synthetic:640x480")), None);
    assert!(has_video_extension(Path::new("a/b.MKV")));
    assert!(has_video_extension(Path::new("clip.y4m")));
    assert!(!has_video_extension(Path::new("a.png")));
    assert!(!has_video_extension(Path::new("mp4")));
    let mut c = RawSourceConfig::new("x.mp4");
    assert!(is_video_source(&c));
    c.kind = Some(SourceKind::Image);
    assert!(!is_video_source(&c));
    let mut c = RawSourceConfig::new("frames");
    assert!(!is_video_source(&c));
    c.kind = Some(SourceKind::Video);
    assert!(is_video_source(&c));
    assert!(is_video_source(&RawSourceConfig::new("udp://0.0.0.0:5000")));
}

#[test]
fn ids_are_named_after_the_file_or_the_url_path() {
    assert_eq!(id_name("data/clips/a.mp4"), "a.mp4");
    assert_eq!(id_name("rtsp://cam:554/live/main?x=1"), "main");
    assert_eq!(id_name("udp://0.0.0.0:5000"), "0.0.0.0:5000");
    assert_eq!(id_name("http://host/"), "host");
}

#[test]
fn realtime_flag_reaches_video_and_synthetic_sources() {
    let mut c = RawSourceConfig::new("clip.mp4");
    set_realtime(&mut c).unwrap();
    assert!(c.video.as_ref().unwrap().realtime);

    let mut c = RawSourceConfig::new("synthetic:320x240@15/90");
    set_realtime(&mut c).unwrap();
    let s = c.synthetic.as_ref().unwrap();
    assert!(s.realtime);
    assert_eq!(
        (s.width, s.height, s.fps, s.frames),
        (320, 240, 15.0, Some(90))
    );
    assert_eq!(c.kind, Some(SourceKind::Synthetic));

    let err = set_realtime(&mut RawSourceConfig::new("photos/"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--realtime"), "{err}");
}

#[test]
fn bad_scheme_and_missing_file_are_open_errors() {
    let default = VideoConfig::default();
    let e = open(Path::new("ftp://host/clip.mp4"), &default)
        .err()
        .unwrap();
    assert!(e.message.contains("unsupported URL scheme `ftp://`"), "{e}");
    assert!(e.message.contains("rtsp://"), "{e}");
    let e = open(Path::new("/nonexistent/clip.mp4"), &default)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "/nonexistent/clip.mp4: no such file; check `[source] path` or --source"
    );
    let every_0 = VideoConfig {
        every: Some(0),
        ..VideoConfig::default()
    };
    let e = open(Path::new("/nonexistent/clip.mp4"), &every_0)
        .err()
        .unwrap();
    assert!(e.message.contains("[source.video]"), "{e}");
    // loop / start / stop mean nothing to a live stream: refused before connecting.
    for bad in ["loop = true", "start = 5", "stop = \"1m\"", "loop = 2"] {
        let c: VideoConfig = toml::from_str(bad).unwrap();
        let e = open(Path::new("udp://127.0.0.1:9"), &c).err().unwrap();
        assert!(e.message.contains("apply to video files"), "{bad}: {e}");
    }
}

#[cfg(feature = "video")]
mod open_error_tests {
    use super::*;

    #[test]
    fn file_problems_are_told_apart_before_ffmpeg() {
        let dir = tempfile::tempdir().unwrap();
        let missing = file_problem(&dir.path().join("nope.mp4")).unwrap();
        assert!(missing.starts_with("no such file"), "{missing}");
        let folder = file_problem(dir.path()).unwrap();
        assert!(folder.starts_with("is a folder") && folder.contains("kind = \"folder\""));
        let empty = dir.path().join("empty.mp4");
        std::fs::write(&empty, b"").unwrap();
        assert!(file_problem(&empty).unwrap().starts_with("is empty"));
        let text = dir.path().join("text.mp4");
        std::fs::write(&text, b"not a video").unwrap();
        assert_eq!(file_problem(&text), None, "FFmpeg's turn");
    }

    #[test]
    fn ffmpeg_errors_name_the_cause_and_the_fix() {
        use ffmpeg_next::Error as E;
        let errno = |errno| E::Other { errno };
        let file = |e| crate::source::video::input::open_error(e, false);
        let url = |e| crate::source::video::input::open_error(e, true);
        assert!(file(E::InvalidData).starts_with("is not a video FFmpeg can read"));
        assert!(file(errno(libc::EACCES)).contains("permission denied"));
        assert!(url(errno(libc::EACCES)).contains("permission denied"));
        assert!(file(errno(libc::ENOENT)).starts_with("no such file"));
        assert!(url(errno(libc::ECONNREFUSED)).starts_with("connection refused"));
        assert!(url(errno(libc::EHOSTUNREACH)).starts_with("cannot reach the host"));
        assert!(url(errno(libc::ETIMEDOUT)).starts_with("no answer"));
        assert!(url(E::HttpNotFound).contains("HTTP 404"));
        assert!(url(E::HttpUnauthorized).contains("credentials"));
        assert!(url(E::HttpForbidden).contains("credentials"));
        assert!(url(E::HttpServerError).starts_with("the server answered with an error"));
        assert!(url(E::ProtocolNotFound).contains("protocol"));
        assert!(url(E::InvalidData).contains("no video FFmpeg can read"));
        assert!(url(errno(libc::EIO)).contains("host name"));
        // Every message is one line with a fix after the cause.
        for m in [file(E::Bug), url(E::Bug), file(E::InvalidData), url(E::Eof)] {
            assert!(m.contains("; ") && !m.contains('\n'), "{m}");
        }
    }
}

#[cfg(not(feature = "video"))]
mod no_feature_tests {
    use super::*;

    #[test]
    fn without_the_feature_a_video_source_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.mp4");
        std::fs::write(&p, b"x").unwrap();
        let e = open(&p, &VideoConfig::default()).err().unwrap();
        assert!(e.message.contains("`video` feature"), "{e}");
    }
}
