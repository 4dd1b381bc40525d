//! Video files and network streams decoded with FFmpeg (feature `video`, on by default).
//!
//! A video source is a file detected by its extension ([`VIDEO_EXTENSIONS`]: `mp4`, `mkv`, `avi`,
//! `mov`, `webm`, `ts`, `y4m`, …) or a URL whose scheme is one of [`URL_SCHEMES`] (`rtsp://`,
//! `http(s)://`, `udp://`, `srt://`, `rtmp://`, …), or anything with `kind = "video"`. The best video
//! stream is decoded (libavcodec, one decoder thread, so frames are the same bytes on every run)
//! and converted to RGB24 by libswscale straight into the frame's pixel buffer.
//!
//! Frame ids are `<file name>#<index>`: the index counts decoded frames from the start point
//! (`[source.video] start`), and a loop continues it, so ids are unique within a run and never depend
//! on timing (the keyed scenario RNG, docs/imagenet-c.md#randomness-and-external-inputs, is keyed
//! by them). `every = k` keeps the frames whose index is a multiple of k (ids keep the decoded
//! index, so they show the gaps). `Frame::timestamp` is the frame's presentation time (pts × time
//! base) minus the stream's start time, in seconds: the time within the file, the same on every
//! loop. For a network stream it is the connection's offset from the source's start plus the pts
//! since the connection's first frame.
//!
//! `realtime = true` (or `robustream run --realtime`) releases each frame of a file no earlier than
//! its presentation time after the first frame (loops continue the clock), like a camera: the
//! source is then live ([`Source::is_live`]) and a slow pipeline drops frames by `[pipeline] drop`.
//! Network streams are live whatever `realtime` says; they are never paced by us (the sender is).
//!
//! Damage: a packet the decoder rejects, or a decoded frame flagged corrupt, is counted as a decode
//! error and comes out as one skipped item naming the file and frame index (the run goes on; under
//! `--strict` it is fatal). A read error in the middle of a file ends that file's pass after the
//! frames decoded so far.
//!
//! Network streams are read live from where they are: `loop`, `start` and `stop` are refused for
//! a URL (they would need seeking in a stream that has no beginning; `--duration`/`--limit` bound
//! a run). Opening one must be answered within `[source.video] open_timeout` (default
//! [`OPEN_TIMEOUT`]; finding its streams may take a few seconds more while data flows, see
//! `open_format`). A stream whose read fails, ends, or stalls (no data for `timeout`, default
//! [`READ_TIMEOUT`]) gives the frames its decoder still holds and is reconnected with back-off
//! (0.5 s doubling to 8 s), watching the run's stop flag, for as long as `reconnect` allows
//! (default: until the run stops; a live sender that stops cannot be told from one that died);
//! when it runs out the source ends. A URL with a known duration (a clip on a web server) is a
//! file read over the network: its end is the end. Every outage is reported in
//! `run.source_report.outages`, with one warning line when lost and one when back (printed
//! directly, like the camera's: the source has no channel to the progress display's warning
//! grouping, and outages are rare, not per frame).
//!
//! Without the `video` feature, [`open`] fails with a line naming the feature.

use std::path::Path;

use super::{RawSourceConfig, Source, SourceError, SourceKind};

/// File extensions taken for video files when no `kind` is given (compared case-insensitively).
pub const VIDEO_EXTENSIONS: &[&str] = &[
    "mp4", "m4v", "mkv", "webm", "avi", "mov", "qt", "ts", "mts", "m2ts", "mpg", "mpeg", "m2v",
    "y4m", "flv", "wmv", "asf", "ogv", "3gp", "h264", "264", "h265", "265", "hevc", "ivf", "mjpeg",
    "mxf",
];

/// URL schemes read as network streams.
pub const URL_SCHEMES: &[&str] = &[
    "rtsp", "rtsps", "http", "https", "udp", "rtp", "srt", "rtmp", "rtmps", "tcp",
];

/// `[source.video]`: how a video file or stream is read.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoConfig {
    /// Play the file again from `start` when it ends: `true` = endlessly (until Ctrl-C,
    /// `--duration` or `--limit`), a count N = N passes in all (1 = once, the default).
    #[serde(default, rename = "loop")]
    pub looping: Option<Loop>,
    /// Where to begin: seconds (`12.5`) or a duration string (`"1m30s"`, `"90s"`, `"2m"`); frames
    /// before it are decoded and discarded (the file is seeked to the key frame before it).
    #[serde(default)]
    pub start: Option<TimeSpec>,
    /// Where to end (presentation time, same forms as `start`): frames at or after it end the pass.
    #[serde(default)]
    pub stop: Option<TimeSpec>,
    /// Release frames at the stream's native rate (from their pts), like a camera (default false:
    /// as fast as the pipeline takes them). `robustream run --realtime` sets it.
    #[serde(default)]
    pub realtime: bool,
    /// Keep every k-th decoded frame (index multiple of k); default 1 = all.
    #[serde(default)]
    pub every: Option<u64>,
    /// Network streams: how long a read may stall before the connection counts as lost and is
    /// reconnected (seconds or a duration string; default 10 s, [`READ_TIMEOUT`]).
    #[serde(default)]
    pub timeout: Option<TimeSpec>,
    /// Network streams: how long opening the stream may take (connecting, and reading enough of
    /// it to know its video), at the start and on every reconnect attempt; past it the attempt
    /// fails with `no answer within … s` (seconds or a duration string; default 15 s,
    /// [`OPEN_TIMEOUT`]).
    #[serde(default)]
    pub open_timeout: Option<TimeSpec>,
    /// Network streams: how long to keep reconnecting a lost stream. `true` (the default) = until
    /// the run is stopped (Ctrl-C, `--duration`, `--limit`); `false` = a lost stream ends the
    /// source at once; a time (`"30s"`) = the source ends when no connection came back within
    /// it (a sender that stopped for good ends the run).
    #[serde(default)]
    pub reconnect: Option<Reconnect>,
}

/// `reconnect = true | false | <time>` of `[source.video]`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(untagged)]
pub enum Reconnect {
    /// `true` = without end, `false` = never.
    Flag(bool),
    /// Give up when no connection came back within this time.
    Within(TimeSpec),
}

/// `loop = true | false | N` of `[source.video]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub enum Loop {
    /// `true` = endless, `false` = once.
    Flag(bool),
    /// This many passes over the file in all.
    Count(u64),
}

impl Loop {
    /// Passes over the file in all; `None` = endless.
    pub fn passes(self) -> Option<u64> {
        match self {
            Loop::Flag(true) => None,
            Loop::Flag(false) => Some(1),
            Loop::Count(n) => Some(n),
        }
    }
}

/// A point in a video: seconds, or a duration string.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(untagged)]
pub enum TimeSpec {
    /// Seconds (a TOML integer or float).
    Seconds(f64),
    /// `"1m30s"`, `"90"`, `"1.5m"`, `"1h2m3.5s"` (see [`parse_time`]).
    Text(String),
}

impl TimeSpec {
    /// The time in seconds, or what is wrong with it.
    pub fn seconds(&self) -> Result<f64, TimeError> {
        match self {
            TimeSpec::Seconds(s) if s.is_finite() && *s >= 0.0 => Ok(*s),
            TimeSpec::Seconds(s) => Err(TimeError::Negative(*s)),
            TimeSpec::Text(t) => parse_time(t),
        }
    }
}

/// A `[source.video]` time that is not a time ≥ 0. Display = the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimeError {
    /// A number of seconds below 0 (or not finite).
    #[error("{0} is not a time ≥ 0 s")]
    Negative(f64),
    /// Nothing written.
    #[error("empty time; write seconds or e.g. \"1m30s\"")]
    Empty,
    /// A part that is not a duration (the time as written, clipped).
    #[error("time `{written}`: {source}")]
    Part {
        /// The whole time as written (clipped).
        written: String,
        /// What is wrong with the part.
        source: crate::duration::DurationError,
    },
}

/// A `[source.video]` table whose settings cannot be used. Display = the message, naming the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VideoConfigError {
    /// A time setting that is not a time.
    #[error("`{key}`: {source}")]
    Time {
        /// The key ("start", "stop", "timeout", "open_timeout", "reconnect").
        key: &'static str,
        /// What is wrong with it.
        source: TimeError,
    },
    /// `stop` at or before `start`.
    #[error("`stop` ({stop} s) must come after `start` ({start} s)")]
    StopBeforeStart {
        /// `start`, seconds.
        start: f64,
        /// `stop`, seconds.
        stop: f64,
    },
    /// A time below its least value.
    #[error("`{key}` ({seconds} s) must be at least 0.1 s")]
    TooShort {
        /// The key ("timeout", "open_timeout").
        key: &'static str,
        /// The value, seconds.
        seconds: f64,
    },
    /// `loop = 0` or `every = 0`.
    #[error("{}", match *key {
        "loop" => "`loop` = 0 plays nothing; write a count ≥ 1, true or false",
        _ => "`every` must be at least 1 (1 = every frame)",
    })]
    Zero {
        /// "loop" or "every".
        key: &'static str,
    },
}

/// Why `--realtime` cannot pace a source. Display = the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RealtimeError {
    /// Neither a video nor the synthetic camera.
    #[error(
        "--realtime paces video files and the synthetic camera, but {} is neither; drop \
         --realtime",
        path.display()
    )]
    NotPaced {
        /// The source's path.
        path: std::path::PathBuf,
    },
    /// A `synthetic:…` spec that does not parse.
    #[error(transparent)]
    Synthetic(#[from] super::synthetic::SyntheticError),
}

/// Parses a time like `"90"`, `"90s"`, `"1.5m"` or a sum of such parts (`"1m30s"`, `"1h2m3.5s"`) into
/// seconds; every part goes through the `--duration` parser ([`crate::duration::parse_duration`]).
pub fn parse_time(text: &str) -> Result<f64, TimeError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(TimeError::Empty);
    }
    let mut total = 0.0;
    let mut rest = t;
    while !rest.is_empty() {
        // One part: a number, then its unit letters (none = seconds, only for the last part).
        let num_end = rest
            .find(|c: char| c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit_end = rest[num_end..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .map_or(rest.len(), |i| num_end + i);
        let part = &rest[..unit_end];
        let d = crate::duration::parse_duration(part).map_err(|source| TimeError::Part {
            written: crate::quote::clip(text).into_owned(),
            source,
        })?;
        total += d.as_secs_f64();
        rest = &rest[unit_end..];
    }
    Ok(total)
}

/// The scheme of `path` when it is spelled as a URL (`scheme://…`, scheme letters, digits, `+-.`),
/// lowercased; `None` for ordinary paths. The scheme may be one we do not read (see
/// [`URL_SCHEMES`]).
pub fn url_scheme(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    let (scheme, _) = s.split_once("://")?;
    let ok = scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then(|| scheme.to_ascii_lowercase())
}

/// Whether `path` is spelled as a URL (see [`url_scheme`]); such paths are never made relative to
/// the config file.
pub fn is_url(path: &Path) -> bool {
    url_scheme(path).is_some()
}

/// Whether the extension of `path` is a video file's ([`VIDEO_EXTENSIONS`]).
pub fn has_video_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| VIDEO_EXTENSIONS.iter().any(|v| v.eq_ignore_ascii_case(e)))
}

/// Whether `config` names a video source: `kind = "video"`, or no kind and a URL or a video
/// extension. Decided from the spelling alone, before the path is looked at.
pub fn is_video_source(config: &RawSourceConfig) -> bool {
    match config.kind {
        Some(kind) => kind == SourceKind::Video,
        None => is_url(&config.path) || has_video_extension(&config.path),
    }
}

/// `robustream run --realtime`: paces the source in real time: a video source gets
/// `[source.video] realtime = true`, the synthetic camera `[source.synthetic] realtime = true` (a
/// `synthetic:…` spec is parsed first so its size, rate and length stay). Any other source is an
/// error naming its path.
pub fn set_realtime(source: &mut RawSourceConfig) -> Result<(), RealtimeError> {
    if is_video_source(source) {
        source
            .video
            .get_or_insert_with(VideoConfig::default)
            .realtime = true;
        return Ok(());
    }
    let spec = source.path.to_str().unwrap_or_default();
    let synthetic = match source.kind {
        Some(kind) => kind == SourceKind::Synthetic,
        None => spec.starts_with("synthetic"),
    };
    if !synthetic {
        return Err(RealtimeError::NotPaced {
            path: source.path.clone(),
        });
    }
    if source.synthetic.is_none() {
        let parsed = super::synthetic::SyntheticConfig::parse_spec(spec).transpose()?;
        source.synthetic = Some(parsed.unwrap_or_default());
    }
    if let Some(s) = source.synthetic.as_mut() {
        s.realtime = true;
    }
    source.kind = Some(SourceKind::Synthetic);
    Ok(())
}

/// `[source.video]` checked and in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Passes in all; `None` = endless.
    pub passes: Option<u64>,
    /// Start, seconds of presentation time (0 = the beginning).
    pub start: f64,
    /// End, seconds of presentation time (exclusive); `None` = the end of the file.
    pub stop: Option<f64>,
    /// Pace files at their native rate.
    pub realtime: bool,
    /// Keep every k-th decoded frame (≥ 1).
    pub every: u64,
    /// Network read stall timeout.
    pub timeout: std::time::Duration,
    /// Network open (and reconnect attempt) timeout.
    pub open_timeout: std::time::Duration,
    /// How long a lost network stream is reconnected: `None` = without end, zero = never.
    pub reconnect: Option<std::time::Duration>,
}

impl VideoConfig {
    /// The checked settings: times ≥ 0, `stop` after `start`, `every` and a loop count ≥ 1.
    pub fn settings(&self) -> Result<Settings, VideoConfigError> {
        let seconds = |key, t: &TimeSpec| {
            t.seconds()
                .map_err(|source| VideoConfigError::Time { key, source })
        };
        let start = match &self.start {
            Some(t) => seconds("start", t)?,
            None => 0.0,
        };
        let stop = match &self.stop {
            Some(t) => Some(seconds("stop", t)?),
            None => None,
        };
        if let Some(stop) = stop
            && stop <= start
        {
            return Err(VideoConfigError::StopBeforeStart { start, stop });
        }
        let passes = self.looping.map_or(Some(1), Loop::passes);
        if passes == Some(0) {
            return Err(VideoConfigError::Zero { key: "loop" });
        }
        let every = self.every.unwrap_or(1);
        if every == 0 {
            return Err(VideoConfigError::Zero { key: "every" });
        }
        let at_least_01 = |key: &'static str, t: &Option<TimeSpec>, default| match t {
            Some(t) => {
                let s = seconds(key, t)?;
                if s < 0.1 {
                    return Err(VideoConfigError::TooShort { key, seconds: s });
                }
                Ok(std::time::Duration::from_secs_f64(s))
            }
            None => Ok(default),
        };
        let timeout = at_least_01("timeout", &self.timeout, READ_TIMEOUT)?;
        let open_timeout = at_least_01("open_timeout", &self.open_timeout, OPEN_TIMEOUT)?;
        let reconnect = match &self.reconnect {
            None | Some(Reconnect::Flag(true)) => None,
            Some(Reconnect::Flag(false)) => Some(std::time::Duration::ZERO),
            Some(Reconnect::Within(t)) => {
                Some(std::time::Duration::from_secs_f64(seconds("reconnect", t)?))
            }
        };
        Ok(Settings {
            passes,
            start,
            stop,
            realtime: self.realtime,
            every,
            timeout,
            open_timeout,
            reconnect,
        })
    }
}

/// The name frame ids start with: a file's name, or a URL's last path segment (its host when the
/// path is empty), without any query.
pub fn id_name(target: &str) -> String {
    if let Some((_, rest)) = target.split_once("://") {
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let mut parts = rest.split('/').filter(|p| !p.is_empty());
        let host = parts.next().unwrap_or("stream");
        return parts.next_back().unwrap_or(host).to_string();
    }
    Path::new(target)
        .file_name()
        .map_or_else(|| target.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Opens the video file or stream at `path` with the `[source.video]` settings `config` (see the
/// module docs). Errors: a bad `[source.video]` (`loop`/`start`/`stop` on a network stream included), an unsupported URL
/// scheme, a missing or unreadable file, a stream with no video, an unreachable URL (refused, or
/// no answer within `open_timeout`, default [`OPEN_TIMEOUT`]), or a build without the `video`
/// feature.
pub fn open(path: &Path, config: &VideoConfig) -> Result<Box<dyn Source>, SourceError> {
    let item = path.display().to_string();
    let settings = config
        .settings()
        .map_err(|e| SourceError::new(&item, format!("[source.video]: {e}")).caused_by(e))?;
    let network = match url_scheme(path) {
        Some(scheme) if URL_SCHEMES.contains(&scheme.as_str()) => true,
        Some(scheme) => {
            return Err(SourceError::new(
                &item,
                format!(
                    "unsupported URL scheme `{scheme}://`; video streams are read from {}",
                    URL_SCHEMES
                        .iter()
                        .map(|s| format!("{s}://"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        None => false,
    };
    if network && (settings.passes != Some(1) || settings.start > 0.0 || settings.stop.is_some()) {
        return Err(SourceError::new(
            &item,
            "[source.video] `loop`, `start` and `stop` apply to video files; a network stream is \
             read live from where it is (drop them; `--duration` or `--limit` bound a run)",
        ));
    }
    if !network && let Some(why) = file_problem(path) {
        // What the file system says, before FFmpeg's vaguer words.
        return Err(SourceError::new(&item, why));
    }
    open_video(&item, network, settings)
}

/// What keeps the file at `path` from being read as a video, as far as the file system tells
///: a missing path, a folder, a file this user may not read, an empty file. `None`
/// when FFmpeg may try (it then tells a file that is no video, a stream-less or video-less file
/// and a codec it cannot decode apart, `imp::open_error`).
pub fn file_problem(path: &Path) -> Option<String> {
    use std::io::ErrorKind;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Some("no such file; check `[source] path` or --source".into());
        }
        Err(e) => {
            return Some(format!(
                "cannot look at it ({e}); check `[source] path` or --source"
            ));
        }
    };
    if meta.is_dir() {
        return Some(
            "is a folder, not a video file; give a video file, or read the images in it with \
             `kind = \"folder\"` (--source-kind folder)"
                .into(),
        );
    }
    if let Err(e) = std::fs::File::open(path) {
        return Some(match e.kind() {
            ErrorKind::PermissionDenied => PERMISSION_DENIED.into(),
            _ => format!("cannot be read ({e}); check the file"),
        });
    }
    (meta.is_file() && meta.len() == 0)
        .then(|| "is empty (0 bytes); give a complete video file".into())
}

/// The message for a video file this user may not read.
const PERMISSION_DENIED: &str = "cannot be read: permission denied; make it readable (`chmod a+r`) \
                                 or run robustream as a user who may read it";

#[cfg(not(feature = "video"))]
fn open_video(
    item: &str,
    _network: bool,
    _settings: Settings,
) -> Result<Box<dyn Source>, SourceError> {
    Err(SourceError::new(
        item,
        "is a video source but this robustream was built without the `video` feature; rebuild \
         with default features (`cargo build --release`, FFmpeg -dev packages from \
         `bash scripts/setup.sh`)",
    ))
}

#[cfg(feature = "video")]
fn open_video(
    item: &str,
    network: bool,
    settings: Settings,
) -> Result<Box<dyn Source>, SourceError> {
    Ok(Box::new(imp::VideoSource::open(item, network, settings)?))
}

/// How long opening a network stream may take before it counts as unreachable.
pub const OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);
/// How long a network read may stall before the connection counts as lost.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(feature = "video")]
mod imp {
    //! The FFmpeg side of the video source.

    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::{Arc, OnceLock};
    use std::time::{Duration, Instant};

    use ffmpeg::format::Pixel;
    use ffmpeg::software::scaling;
    use ffmpeg_next as ffmpeg;
    use image::RgbImage;

    use super::Settings;
    use crate::frame::Frame;
    use crate::source::{Source, SourceError};

    /// Bytes of slack after the last row of a conversion buffer (SIMD converters may store a
    /// whole vector past a row's last pixel).
    const SLACK: usize = 64;
    /// Longest sleep between looks at the stop flag.
    const STOP_POLL: Duration = Duration::from_millis(50);
    /// Frames a whole pass may fall short of the container's count without a warning: a valid
    /// file can list a few frames the decoder never outputs (edit lists, open-GOP leading frames).
    const LISTED_SLACK: u64 = 2;
    /// Outages kept in the report (the count and total time cover all of them).
    const MAX_OUTAGES_LISTED: usize = 100;

    /// State the FFmpeg interrupt callback reads: the run's stop flag once it is handed over, and
    /// a deadline for the current blocking call.
    struct Interrupt {
        stop: OnceLock<Arc<AtomicBool>>,
        /// Milliseconds after `epoch` when the current call is abandoned; `u64::MAX` = never.
        deadline_ms: AtomicU64,
        epoch: Instant,
    }

    impl Interrupt {
        fn stopped(&self) -> bool {
            self.stop.get().is_some_and(|s| s.load(Ordering::Relaxed))
        }

        fn expired(&self) -> bool {
            let d = self.deadline_ms.load(Ordering::Relaxed);
            d != u64::MAX && self.epoch.elapsed().as_millis() as u64 >= d
        }

        fn arm(&self, timeout: Option<Duration>) {
            let d = timeout.map_or(u64::MAX, |t| {
                (self.epoch.elapsed() + t)
                    .as_millis()
                    .min(u128::from(u64::MAX - 1)) as u64
            });
            self.deadline_ms.store(d, Ordering::Relaxed);
        }
    }

    /// An open input and its decoder (dropped during a network outage, so a UDP port is free to
    /// bind again).
    struct Io {
        input: ffmpeg::format::context::Input,
        decoder: ffmpeg::decoder::Video,
    }

    /// What is known about the opened stream.
    struct Opened {
        stream: usize,
        /// Coded frame size, pixels.
        width: u32,
        height: u32,
        /// Seconds per pts unit.
        time_base: f64,
        /// The stream's start time, seconds (0 when unknown).
        start_s: f64,
        /// Frames per second (average rate, else the nominal rate); 0 when unknown.
        fps: f64,
        codec: String,
        /// Frames the container says the stream has (0 = unknown).
        frames: i64,
        /// The input has a known duration: a file, or a finite resource behind a URL (a clip on
        /// a web server), whose end is the end; a live stream has none.
        finite: bool,
    }

    /// Opens the container of `target` in two steps, the interrupt callback watching `intr`
    /// (stop flag, deadline): connecting and reading its header (`avformat_open_input`) within
    /// `open_timeout` when given (a network stream), then finding its streams
    /// (`avformat_find_stream_info`) within [`PROBE_SLACK`] more: for a live stream that step
    /// reads up to FFmpeg's `analyzeduration` of it in real time (5 s of an RTMP/FLV stream,
    /// whose streams are only known from its packets), so one deadline for both would cut a
    /// healthy probe short. (ffmpeg-next's `input_with_interrupt` runs both under one callback
    /// with no way to re-arm in between.) Errors are one line.
    fn open_format(
        target: &str,
        intr: &Arc<Interrupt>,
        open_timeout: Option<Duration>,
    ) -> Result<ffmpeg::format::context::Input, StreamError> {
        use ffmpeg::ffi;
        let why = |e: ffmpeg::Error| match e {
            _ if intr.stopped() => StreamError::open("stopped while opening".to_string(), None),
            // Some demuxers (RTSP) turn the interrupt into an error of their own.
            _ if intr.expired() => StreamError::open(
                match open_timeout {
                    Some(t) => format!(
                        "no answer within {} s (`[source.video] open_timeout`)",
                        t.as_secs_f64()
                    ),
                    None => "no answer".to_string(),
                },
                None,
            ),
            e => StreamError::open(open_error(e, open_timeout.is_some()), Some(e)),
        };
        let path = std::ffi::CString::new(target).map_err(|_| {
            StreamError::open("a path with a NUL byte cannot be opened".to_string(), None)
        })?;
        let cb = intr.clone();
        let interrupt =
            ffmpeg::util::interrupt::new(Box::new(move || cb.stopped() || cb.expired()));
        intr.arm(open_timeout);
        // SAFETY: `ps` is a fresh context from `avformat_alloc_context` (checked non-null) whose
        // interrupt callback points at the closure owned by `interrupt.guard`, which lives to
        // the end of this function or, on success, moves into the returned `Input`, which drops
        // it after closing the context (ffmpeg-next's `wrap_with_interrupt` contract). On
        // failure `avformat_open_input` frees the context and nulls `ps`; after it succeeded,
        // a failed `avformat_find_stream_info` is followed by `avformat_close_input`, so the
        // context is freed exactly once and never used after. `path` outlives both calls.
        unsafe {
            let mut ps = ffi::avformat_alloc_context();
            if ps.is_null() {
                return Err(StreamError::open(
                    "out of memory opening the input".into(),
                    None,
                ));
            }
            (*ps).interrupt_callback = interrupt.interrupt;
            let r = ffi::avformat_open_input(
                &mut ps,
                path.as_ptr(),
                std::ptr::null(),
                std::ptr::null_mut(),
            );
            if r < 0 {
                return Err(why(ffmpeg::Error::from(r)));
            }
            intr.arm(open_timeout.map(|t| t + PROBE_SLACK));
            let r = ffi::avformat_find_stream_info(ps, std::ptr::null_mut());
            if r < 0 {
                ffi::avformat_close_input(&mut ps);
                return Err(why(ffmpeg::Error::from(r)));
            }
            Ok(ffmpeg::format::context::Input::wrap_with_interrupt(
                ps,
                interrupt.guard,
            ))
        }
    }

    /// Why a video input gives no frames, by kind. Display = the message (what FFmpeg's error
    /// means and what to do); `source` is FFmpeg's error where the message quotes it.
    #[derive(Debug, thiserror::Error)]
    pub(super) enum StreamError {
        /// The input could not be opened: missing, refused, no answer, not a container, stopped.
        #[error("{message}")]
        Open {
            /// What went wrong and what to do.
            message: String,
            /// FFmpeg's error.
            #[source]
            source: Option<ffmpeg::Error>,
        },
        /// The input holds no video stream this FFmpeg build can decode.
        #[error("{message}")]
        NoVideo {
            /// What it holds instead, and what to do.
            message: String,
            /// FFmpeg's error.
            #[source]
            source: Option<ffmpeg::Error>,
        },
        /// A decoded frame could not be made RGB.
        #[error("{message}")]
        Convert {
            /// What went wrong.
            message: String,
            /// FFmpeg's error.
            #[source]
            source: Option<ffmpeg::Error>,
        },
    }

    impl StreamError {
        /// An [`StreamError::Open`] whose message is `message`; FFmpeg's error `e` is its source
        /// when the message quotes it (a message in its own words stands alone).
        fn open(message: String, e: Option<ffmpeg::Error>) -> Self {
            let source = e.filter(|e| message.contains(&e.to_string()));
            Self::Open { message, source }
        }
    }

    /// How much longer than `open_timeout` finding a network stream's streams may take (see
    /// [`open_format`]): FFmpeg's default `analyzeduration` (5 s) and a second of slack.
    const PROBE_SLACK: Duration = Duration::from_secs(6);

    /// What an FFmpeg error opening a file (`network` false) or a stream means, and what to do
    /// (instead of FFmpeg's "Invalid data found when processing input" whatever the cause). The file-system causes of a file are found before FFmpeg tries ([`super::file_problem`]);
    /// they are here too for a file that changed in between or a path only FFmpeg can open.
    pub(super) fn open_error(e: ffmpeg::Error, network: bool) -> String {
        use ffmpeg::Error as E;
        let errno = match e {
            E::Other { errno } => errno,
            _ => 0,
        };
        match e {
            _ if errno == libc::EACCES || errno == libc::EPERM => {
                super::PERMISSION_DENIED.to_string()
            }
            _ if !network && errno == libc::ENOENT => {
                "no such file; check `[source] path` or --source".to_string()
            }
            E::InvalidData | E::DemuxerNotFound if !network => {
                "is not a video FFmpeg can read: no container format it knows matches the content; \
                 check what the file is (`ffprobe`, `file`): another kind of file under a video's \
                 name, or a damaged or unfinished one"
                    .to_string()
            }
            _ if !network => format!("cannot open as video ({e}); check it with `ffprobe`"),
            _ if errno == libc::ECONNREFUSED => "connection refused: nothing serves a stream at \
                 this address and port; check the URL and that the sender is running"
                .to_string(),
            _ if [libc::EHOSTUNREACH, libc::ENETUNREACH, libc::ENETDOWN].contains(&errno) => {
                format!("cannot reach the host ({e}); check the address and this machine's network")
            }
            _ if errno == libc::ETIMEDOUT => {
                format!("no answer ({e}); check the address and that the sender is running")
            }
            E::HttpNotFound => "the server has no stream at this path (HTTP 404 Not Found); check \
                 the URL's path"
                .to_string(),
            E::HttpUnauthorized | E::HttpForbidden => format!(
                "the server refused access ({e}); put the right credentials in the URL \
                 (`rtsp://user:password@host/…`)"
            ),
            E::HttpBadRequest | E::HttpOther4xx | E::HttpServerError => {
                format!("the server answered with an error ({e}); check the URL")
            }
            E::ProtocolNotFound => "this FFmpeg build cannot read this protocol; use another \
                 scheme or an FFmpeg built with it"
                .to_string(),
            E::InvalidData | E::DemuxerNotFound => format!(
                "what the server sends is no video FFmpeg can read ({e}); check that the URL \
                 points at a video stream"
            ),
            // FFmpeg reports a host name that does not resolve as an I/O error.
            _ if errno == libc::EIO => format!(
                "cannot connect ({e}: a host name that does not resolve, or a server that closed \
                 the connection); check the host name and that the stream is up"
            ),
            e => format!("cannot open the stream ({e}); check the URL and that the stream is up"),
        }
    }

    /// The message for an input without a video stream, listing what it holds.
    fn no_video_stream(input: &ffmpeg::format::context::Input) -> String {
        let held: Vec<String> = input
            .streams()
            .map(|s| {
                let p = s.parameters();
                format!(
                    "{} ({})",
                    format!("{:?}", p.medium()).to_lowercase(),
                    p.id().name()
                )
            })
            .collect();
        match held.is_empty() {
            true => "has no streams at all; give a file with a video stream".to_string(),
            false => format!(
                "has no video stream (it holds {}); give a file or stream with video",
                crate::quote::clip(&held.join(", "))
            ),
        }
    }

    /// The message for a video stream whose codec this FFmpeg build cannot decode: the codec's
    /// name, or the container's tag for it when FFmpeg does not know it at all.
    fn no_decoder(parameters: &ffmpeg::codec::Parameters) -> String {
        let id = parameters.id();
        if id != ffmpeg::codec::Id::None {
            return format!(
                "its video codec is {0}, which this FFmpeg build cannot decode; use FFmpeg \
                 libraries with a {0} decoder (`ffmpeg -decoders` lists them), or convert the \
                 file to H.264 where there is one",
                id.name()
            );
        }
        // SAFETY: `parameters` wraps the AVCodecParameters of a stream of the open input, valid
        // for as long as `parameters` is borrowed; only a plain integer field is read.
        let tag = unsafe { (*parameters.as_ptr()).codec_tag };
        let shown: String = match tag.to_le_bytes() {
            b if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') => {
                format!(" (tag `{}`)", String::from_utf8_lossy(&b))
            }
            _ if tag != 0 => format!(" (tag 0x{tag:08x})"),
            _ => String::new(),
        };
        format!(
            "its video codec is unknown to FFmpeg{shown}; convert it to H.264 with the software \
             that made it, or give another file"
        )
    }

    /// Opens `target` and a decoder for its best video stream (see [`open_format`] for
    /// `open_timeout`, given for network streams).
    fn open_input(
        target: &str,
        intr: &Arc<Interrupt>,
        open_timeout: Option<Duration>,
    ) -> Result<(Opened, Io), StreamError> {
        let input = open_format(target, intr, open_timeout);
        intr.arm(None);
        let input = input?;
        let finite = input.duration() > 0;
        let stream = input
            .streams()
            .best(ffmpeg::media::Type::Video)
            .ok_or_else(|| StreamError::NoVideo {
                message: no_video_stream(&input),
                source: None,
            })?;
        let index = stream.index();
        let time_base = f64::from(stream.time_base());
        let start_s = match stream.start_time() {
            t if t == ffmpeg::ffi::AV_NOPTS_VALUE => 0.0,
            t => t as f64 * time_base,
        };
        let rate = |r: ffmpeg::Rational| {
            let v = f64::from(r);
            (r.denominator() != 0 && v.is_finite() && v > 0.0).then_some(v)
        };
        let fps = rate(stream.avg_frame_rate())
            .or_else(|| rate(stream.rate()))
            .unwrap_or(0.0);
        let frames = stream.frames();
        let context = ffmpeg::codec::context::Context::from_parameters(stream.parameters())
            .map_err(|e| StreamError::NoVideo {
                message: format!("cannot read the video stream's parameters ({e})"),
                source: Some(e),
            })?;
        let codec = context.id().name().to_string();
        if ffmpeg::decoder::find(context.id()).is_none() {
            return Err(StreamError::NoVideo {
                message: no_decoder(&stream.parameters()),
                source: None,
            });
        }
        let mut decoder = context.decoder();
        decoder.set_packet_time_base(stream.time_base());
        let decoder = decoder.video().map_err(|e| StreamError::NoVideo {
            message: format!("cannot decode its {codec} video ({e})"),
            source: Some(e),
        })?;
        let info = Opened {
            stream: index,
            width: decoder.width(),
            height: decoder.height(),
            time_base,
            start_s,
            fps,
            codec,
            frames,
            finite,
        };
        Ok((info, Io { input, decoder }))
    }

    /// A libswscale context converting one input format and size to RGB24 of the same size.
    struct Converter {
        key: (Pixel, u32, u32),
        ctx: scaling::Context,
    }

    // SAFETY: a `Converter` owns its SwsContext alone (never shared or cloned) and the source that
    // holds it is used by one thread at a time (`Source: Send`, not `Sync`). libswscale contexts
    // keep no thread-local state or thread affinity; they only must not be used concurrently,
    // which exclusive ownership rules out. (ffmpeg-next leaves `scaling::Context` !Send only
    // because it wraps a raw pointer.)
    unsafe impl Send for Converter {}

    /// One network outage.
    #[derive(Debug, Clone, serde::Serialize)]
    struct Outage {
        /// When the connection was lost, seconds since the source opened.
        at_s: f64,
        /// How long until frames came again (or until the run stopped), seconds.
        duration_s: f64,
        /// Connection attempts made.
        attempts: u64,
        /// What went wrong.
        error: String,
        /// Whether the stream came back (false: the run stopped during the outage).
        recovered: bool,
    }

    /// What happened to one packet or frame read.
    enum Step {
        Frame(Frame),
        Error(SourceError),
        Again,
        End,
    }

    /// A video file or network stream (see the module docs).
    pub struct VideoSource {
        target: String,
        name: String,
        network: bool,
        settings: Settings,
        intr: Arc<Interrupt>,
        opened: Opened,
        /// The open input; `None` only during a network outage.
        io: Option<Io>,
        decoded: ffmpeg::frame::Video,
        converter: Option<Converter>,
        /// Decoded frames from the start point (loops continue it).
        index: u64,
        /// EOF sent to the decoder; draining.
        draining: bool,
        done: bool,
        /// Passes finished.
        passes_done: u64,
        /// Times the file was started again from `start`.
        loops: u64,
        /// `frames_decoded` when the current pass began.
        pass_start_decoded: u64,
        /// Presentation time of the first and last frame of the current pass (seconds in the
        /// file), for the real-time clock across loops.
        pass_first: Option<f64>,
        pass_last: f64,
        /// Real-time clock: media seconds of earlier passes, and the instant of media time 0.
        clock_offset: f64,
        pace_start: Option<Instant>,
        /// Network: the connection's offset from `opened_at` and its first pts (seconds).
        conn_offset: f64,
        conn_first: Option<f64>,
        opened_at: Instant,
        /// When the current `next_frame` call began (shifted past any pacing sleep): a frame's
        /// `decode_ms` covers reading, decoding (including frames `every` passes over) and
        /// conversion; for a network stream also waiting for data.
        work_start: Instant,
        // Report.
        frames_decoded: u64,
        frames_out: u64,
        decode_errors: u64,
        seeks: u64,
        reopens: u64,
        reconnects: u64,
        outages: Vec<Outage>,
        outage_count: u64,
        outage_s: f64,
        /// The frame index the last damaged packet was reported at.
        last_packet_error: Option<u64>,
        /// Network: the connection was lost (why); the decoder is drained of the frames it
        /// holds, then the stream is reconnected.
        lost: Option<String>,
    }

    impl VideoSource {
        /// Opens the file or URL `target` (see [`super::open`]).
        pub(super) fn open(
            target: &str,
            network: bool,
            settings: Settings,
        ) -> Result<Self, SourceError> {
            init();
            let intr = Arc::new(Interrupt {
                stop: OnceLock::new(),
                deadline_ms: AtomicU64::new(u64::MAX),
                epoch: Instant::now(),
            });
            let (opened, io) = open_input(target, &intr, network.then_some(settings.open_timeout))
                .map_err(|e| SourceError::new(target, e.to_string()).caused_by(e))?;
            let mut source = Self {
                target: target.to_string(),
                name: super::id_name(target),
                network,
                settings,
                intr,
                opened,
                io: Some(io),
                decoded: ffmpeg::frame::Video::empty(),
                converter: None,
                index: 0,
                draining: false,
                done: false,
                passes_done: 0,
                loops: 0,
                pass_start_decoded: 0,
                pass_first: None,
                pass_last: 0.0,
                clock_offset: 0.0,
                pace_start: None,
                conn_offset: 0.0,
                conn_first: None,
                opened_at: Instant::now(),
                work_start: Instant::now(),
                frames_decoded: 0,
                frames_out: 0,
                decode_errors: 0,
                seeks: 0,
                reopens: 0,
                reconnects: 0,
                outages: Vec::new(),
                outage_count: 0,
                outage_s: 0.0,
                last_packet_error: None,
                lost: None,
            };
            if settings.start > 0.0 && !network {
                source.rewind().map_err(|e| {
                    SourceError::new(target, format!("cannot seek to `start` ({e})")).caused_by(e)
                })?;
            }
            Ok(source)
        }

        fn stopped(&self) -> bool {
            self.intr.stopped()
        }

        /// Seconds of presentation time of the decoded frame: within the file, or for a network
        /// stream since the source opened (connection offset + pts since its first frame).
        fn frame_time(&mut self) -> f64 {
            let o = &self.opened;
            let pts = self.decoded.timestamp().or_else(|| self.decoded.pts());
            let raw = match pts {
                Some(p) => p as f64 * o.time_base - o.start_s,
                None if o.fps > 0.0 => self.index as f64 / o.fps,
                None => 0.0,
            };
            if self.network {
                let first = *self.conn_first.get_or_insert(raw);
                self.conn_offset + (raw - first).max(0.0)
            } else {
                raw
            }
        }

        /// Back to `start` (or the beginning) for the next pass: a seek, or reopening the file
        /// when the format cannot seek. The decoder is flushed.
        fn rewind(&mut self) -> Result<(), StreamError> {
            // AV_TIME_BASE (µs) of the container; the key frame at or before `start`.
            let ts = ((self.settings.start + self.opened.start_s.max(0.0)) * 1e6) as i64;
            let seek = match self.io.as_mut() {
                Some(io) => io.input.seek(ts, ..ts).is_ok(),
                None => false,
            };
            self.seeks += 1;
            if !seek {
                self.io = None;
                let (opened, io) = open_input(&self.target, &self.intr, None)?;
                (self.opened, self.io) = (opened, Some(io));
                self.reopens += 1;
                self.converter = None;
            }
            if let Some(io) = self.io.as_mut() {
                io.decoder.flush();
            }
            self.draining = false;
            Ok(())
        }

        /// The end of one pass: another (seek back) or the end.
        /// A whole pass of a file (no `start`/`stop`) that decoded more than [`LISTED_SLACK`]
        /// frames fewer than its container lists is reported once as a decode error: the file is
        /// likely truncated or damaged.
        fn end_of_pass(&mut self) -> Step {
            if let Some(why) = self.lost.take() {
                // A lost network connection, its decoder drained: reconnect (or end).
                return if self.reconnect(why) {
                    Step::Again
                } else {
                    Step::End
                };
            }
            self.passes_done += 1;
            let listed = u64::try_from(self.opened.frames).unwrap_or(0);
            let whole = self.settings.start == 0.0 && self.settings.stop.is_none();
            let short = (!self.network && whole && self.passes_done == 1)
                .then_some(self.frames_decoded)
                .filter(|&n| n + LISTED_SLACK < listed);
            self.end_or_rewind();
            match short {
                Some(n) => self.decode_error(
                    self.index,
                    format!(
                        "decoded {n} of the {listed} frames the container lists (damaged or \
                         truncated file)"
                    ),
                ),
                None => Step::Again,
            }
        }

        fn end_or_rewind(&mut self) {
            let more = self.settings.passes.is_none_or(|p| self.passes_done < p);
            // A pass that decoded nothing would repeat forever: end instead.
            if !more || self.network || self.frames_decoded == self.pass_start_decoded {
                self.done = true;
                return;
            }
            self.pass_start_decoded = self.frames_decoded;
            self.loops += 1;
            // The real-time clock goes on: the next pass starts one frame after this one ended.
            if let Some(first) = self.pass_first.take() {
                let step = if self.opened.fps > 0.0 {
                    1.0 / self.opened.fps
                } else {
                    0.0
                };
                self.clock_offset += (self.pass_last - first).max(0.0) + step;
            }
            if let Err(e) = self.rewind() {
                eprintln!("warning: {}: cannot loop ({e}); ending", self.target);
                self.done = true;
            }
        }

        /// Sleeps until `due`, in slices, returning false when the stop flag rose meanwhile.
        fn sleep_until(&self, due: Instant) -> bool {
            loop {
                if self.stopped() {
                    return false;
                }
                let now = Instant::now();
                if now >= due {
                    return true;
                }
                std::thread::sleep((due - now).min(STOP_POLL));
            }
        }

        /// Converts `self.decoded` to RGB24 straight into a new image buffer.
        fn convert(&mut self) -> Result<RgbImage, StreamError> {
            let failed = |message: String, source| StreamError::Convert { message, source };
            let (fmt, w, h) = (
                self.decoded.format(),
                self.decoded.width(),
                self.decoded.height(),
            );
            if w == 0 || h == 0 {
                return Err(failed("decoded an empty frame".into(), None));
            }
            let key = (fmt, w, h);
            if self.converter.as_ref().is_none_or(|c| c.key != key) {
                let ctx =
                    scaling::Context::get(fmt, w, h, Pixel::RGB24, w, h, scaling::Flags::BILINEAR)
                        .map_err(|e| {
                            failed(
                                format!("cannot convert {fmt:?} {w}x{h} to RGB ({e})"),
                                Some(e),
                            )
                        })?;
                self.converter = Some(Converter { key, ctx });
            }
            let Some(conv) = self.converter.as_mut() else {
                return Err(failed("no converter".into(), None));
            };
            let (wu, hu) = (w as usize, h as usize);
            // Rows padded to 16 pixels (48 bytes): the SIMD YUV → RGB converters store 8 pixels at
            // a time and skip a row's tail when the stride has no room for it. Sizes that are a
            // multiple of 16 (320, 640, 1280, 1920…) are written in place with no padding.
            let stride = 3 * wu.div_ceil(16) * 16;
            let mut buf = vec![0u8; stride * hu + SLACK];
            let dst = [
                buf.as_mut_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            ];
            let dst_stride = [stride as i32, 0, 0, 0];
            // SAFETY: `conv.ctx` was made for exactly this input format and size (checked by `key`)
            // and RGB24 output of the same size. The source pointers and line sizes are those of
            // the decoder's valid, referenced frame `self.decoded`, which outlives the call. The
            // destination is one packed plane of `stride * h + SLACK` bytes with `stride ≥ 3w`,
            // so every row libswscale writes (≤ `stride` bytes, plus at most one vector past the
            // last row, within SLACK) lies inside `buf`; the other destination planes are unused
            // for a packed format. Nothing else aliases `buf` during the call.
            let lines = unsafe {
                let src = &*self.decoded.as_ptr();
                ffmpeg::ffi::sws_scale(
                    conv.ctx.as_mut_ptr(),
                    src.data.as_ptr() as *const *const u8,
                    src.linesize.as_ptr(),
                    0,
                    h as i32,
                    dst.as_ptr(),
                    dst_stride.as_ptr(),
                )
            };
            if lines != h as i32 {
                return Err(failed(
                    format!("RGB conversion wrote {lines} of {h} rows"),
                    None,
                ));
            }
            let row = 3 * wu;
            if stride != row {
                for y in 1..hu {
                    buf.copy_within(y * stride..y * stride + row, y * row);
                }
            }
            buf.truncate(row * hu);
            RgbImage::from_raw(w, h, buf).ok_or_else(|| failed("RGB buffer size".into(), None))
        }

        /// A decode error at frame `index`: counted, one skipped item.
        fn decode_error(&mut self, index: u64, what: String) -> Step {
            self.decode_errors += 1;
            Step::Error(SourceError::new(
                format!("{}#{index}", self.name),
                format!("{what} ({})", self.target),
            ))
        }

        /// A damaged packet before frame `self.index`: counted; only the first of a run of them
        /// before the same frame comes out as a skipped item (one warning per damaged spot).
        fn packet_error(&mut self, what: String) -> Step {
            if self.last_packet_error == Some(self.index) {
                self.decode_errors += 1;
                return Step::Again;
            }
            self.last_packet_error = Some(self.index);
            self.decode_error(
                self.index,
                format!("{what} near this frame; its frame is lost"),
            )
        }

        /// Takes the decoder's next frame through start/stop/every, conversion and pacing.
        fn on_decoded(&mut self) -> Step {
            let t = self.frame_time();
            if !self.network && t + 1e-9 < self.settings.start {
                return Step::Again;
            }
            if !self.network && self.settings.stop.is_some_and(|s| t + 1e-9 >= s) {
                // Past the end point: this pass is over (whatever the decoder still holds).
                return self.end_of_pass();
            }
            let index = self.index;
            self.index += 1;
            self.frames_decoded += 1;
            if self.pass_first.is_none() {
                self.pass_first = Some(t);
            }
            self.pass_last = t;
            let flags = self.decoded.decode_error_flags();
            if self.decoded.is_corrupt() || !flags.is_empty() {
                return self.decode_error(
                    index,
                    format!("corrupt frame skipped (decode errors {flags:?})"),
                );
            }
            if !index.is_multiple_of(self.settings.every) {
                return Step::Again;
            }
            if self.settings.realtime && !self.network {
                let media = self.clock_offset + (t - self.pass_first.unwrap_or(t));
                let start = *self.pace_start.get_or_insert_with(Instant::now);
                let before = Instant::now();
                if !self.sleep_until(start + Duration::from_secs_f64(media.max(0.0))) {
                    self.done = true;
                    return Step::End;
                }
                // Waiting for the frame's time is not decoding.
                self.work_start += before.elapsed();
            }
            let captured = Instant::now();
            let image = match self.convert() {
                Ok(img) => img,
                Err(e) => return self.decode_error(index, e.to_string()),
            };
            self.frames_out += 1;
            Step::Frame(Frame {
                captured,
                decode_ms: self.work_start.elapsed().as_secs_f64() * 1e3,
                timestamp: Some(t),
                ..Frame::new(format!("{}#{index}", self.name), self.frames_out - 1, image)
            })
        }

        /// One step: a frame from the decoder, or one packet fed to it.
        fn step(&mut self) -> Step {
            let Some(io) = self.io.as_mut() else {
                self.done = true;
                return Step::End;
            };
            match io.decoder.receive_frame(&mut self.decoded) {
                Ok(()) => return self.on_decoded(),
                Err(ffmpeg::Error::Eof) => {
                    return self.end_of_pass();
                }
                Err(ffmpeg::Error::Other { errno }) if errno == ffmpeg::util::error::EAGAIN => {}
                Err(e) => return self.decode_error(self.index, format!("decoder error ({e})")),
            }
            if self.draining {
                // The decoder said it wants input while draining: it has nothing more.
                return self.end_of_pass();
            }
            let mut packet = ffmpeg::Packet::empty();
            self.intr.arm(self.network.then_some(self.settings.timeout));
            let Some(io) = self.io.as_mut() else {
                self.done = true;
                return Step::End;
            };
            let read = packet.read(&mut io.input);
            self.intr.arm(None);
            match read {
                Ok(()) => {
                    if packet.stream() != self.opened.stream {
                        return Step::Again;
                    }
                    match io.decoder.send_packet(&packet) {
                        Ok(()) => Step::Again,
                        Err(ffmpeg::Error::Other { errno })
                            if errno == ffmpeg::util::error::EAGAIN =>
                        {
                            // Cannot happen with receive-before-send; treat as a lost packet.
                            self.packet_error("decoder refused a packet".into())
                        }
                        Err(e) => self.packet_error(format!("corrupt packet ({e})")),
                    }
                }
                Err(_) if self.stopped() => {
                    self.done = true;
                    Step::End
                }
                Err(ffmpeg::Error::Eof) if !self.network || self.opened.finite => {
                    if let Some(io) = self.io.as_mut() {
                        let _ = io.decoder.send_eof();
                    }
                    self.draining = true;
                    Step::Again
                }
                Err(ffmpeg::Error::InvalidData) if !self.network => {
                    self.packet_error("unreadable data in the file".into())
                }
                Err(e) if !self.network => {
                    // A read error inside a file: keep what was decoded, end this pass.
                    let step = self.decode_error(
                        self.index,
                        format!("read error ({e}); rest of the pass lost"),
                    );
                    if let Some(io) = self.io.as_mut() {
                        let _ = io.decoder.send_eof();
                    }
                    self.draining = true;
                    step
                }
                Err(e) => {
                    let why = match e {
                        ffmpeg::Error::Exit => {
                            format!("no data for {:.1} s", self.settings.timeout.as_secs_f64())
                        }
                        ffmpeg::Error::Eof => "stream ended".to_string(),
                        e => e.to_string(),
                    };
                    // Drain the frames the decoder still holds, then reconnect (`end_of_pass`).
                    if let Some(io) = self.io.as_mut() {
                        let _ = io.decoder.send_eof();
                    }
                    self.draining = true;
                    self.lost = Some(why);
                    Step::Again
                }
            }
        }

        /// A lost connection: reconnects with back-off until it comes back (true), or the stop
        /// flag rises or `reconnect` runs out (false). The outage is recorded either way.
        fn reconnect(&mut self, error: String) -> bool {
            let lost = Instant::now();
            let window = self.settings.reconnect;
            let plan = match window {
                None => "reconnecting".to_string(),
                Some(w) if w.is_zero() => "not reconnecting (`reconnect = false`)".to_string(),
                Some(w) => format!("reconnecting for up to {} s", w.as_secs_f64()),
            };
            eprintln!(
                "warning: {}: connection lost after frame {} ({error}); {plan}",
                self.target,
                self.index.saturating_sub(1)
            );
            // Close first: a UDP listener must free its port before it can bind it again.
            self.io = None;
            let give_up = window.map(|w| lost + w);
            let open_timeout = self.settings.open_timeout;
            let mut wait = Duration::from_millis(500);
            let mut attempts = 0u64;
            let recovered = loop {
                let mut due = Instant::now() + wait;
                if let Some(end) = give_up {
                    if Instant::now() >= end {
                        break false;
                    }
                    due = due.min(end);
                }
                if !self.sleep_until(due) {
                    break false;
                }
                attempts += 1;
                // An attempt ends by the end of the window (but gets at least 0.1 s).
                let budget = give_up.map_or(open_timeout, |end| {
                    open_timeout.min(
                        end.saturating_duration_since(Instant::now())
                            .max(Duration::from_millis(100)),
                    )
                });
                let result = open_input(&self.target, &self.intr, Some(budget));
                match result {
                    Ok((opened, io)) => {
                        (self.opened, self.io) = (opened, Some(io));
                        self.draining = false;
                        self.conn_first = None;
                        self.conn_offset = self.opened_at.elapsed().as_secs_f64();
                        self.reconnects += 1;
                        break true;
                    }
                    Err(_) if self.stopped() => break false,
                    Err(_) => wait = (wait * 2).min(Duration::from_secs(8)),
                }
            };
            let duration_s = lost.elapsed().as_secs_f64();
            self.outage_count += 1;
            self.outage_s += duration_s;
            if self.outages.len() < MAX_OUTAGES_LISTED {
                self.outages.push(Outage {
                    at_s: (lost - self.opened_at).as_secs_f64(),
                    duration_s,
                    attempts,
                    error,
                    recovered,
                });
            }
            if recovered {
                eprintln!(
                    "warning: {}: reconnected after {duration_s:.1} s ({attempts} attempt(s))",
                    self.target
                );
            } else {
                self.done = true;
                if let Some(w) = window.filter(|w| !w.is_zero() && !self.stopped()) {
                    eprintln!(
                        "warning: {}: no connection within {} s ({attempts} attempt(s)); the \
                         stream is over",
                        self.target,
                        w.as_secs_f64()
                    );
                }
            }
            recovered
        }
    }

    impl Source for VideoSource {
        fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
            self.work_start = Instant::now();
            loop {
                if self.done || self.stopped() {
                    return None;
                }
                match self.step() {
                    Step::Frame(f) => return Some(Ok(f)),
                    Step::Error(e) => return Some(Err(e)),
                    Step::Again => {}
                    Step::End => return None,
                }
            }
        }

        fn len_hint(&self) -> Option<usize> {
            let s = &self.settings;
            if self.network || s.start > 0.0 || s.stop.is_some() || self.opened.frames <= 0 {
                return None;
            }
            let per_pass = (self.opened.frames as u64).div_ceil(s.every);
            usize::try_from(per_pass * s.passes?).ok()
        }

        fn is_live(&self) -> bool {
            self.network || self.settings.realtime
        }

        fn fps(&self) -> Option<f64> {
            (self.opened.fps > 0.0).then_some(self.opened.fps)
        }

        fn set_stop(&mut self, stop: Arc<AtomicBool>) {
            let _ = self.intr.stop.set(stop);
        }

        /// A video that ended without decoding a single frame (in the `start`–`stop` window) is
        /// an error, not an empty run: damaged past decoding, empty, or a window past its end.
        fn end_error(&self) -> Option<SourceError> {
            if self.frames_decoded > 0 || self.stopped() {
                return None;
            }
            let s = &self.settings;
            let what = if self.decode_errors > 0 {
                format!(
                    "no decodable video frame ({} decode errors); the file is damaged or its codec \
                     data unreadable: check it with ffprobe, re-encode it, or give another file",
                    self.decode_errors
                )
            } else if self.network {
                "no video frame received before the stream ended; check that the sender sends \
                 video"
                    .to_string()
            } else if s.start > 0.0 || s.stop.is_some() {
                let stop = s
                    .stop
                    .map_or_else(|| "the end".to_string(), |t| format!("{t} s"));
                format!(
                    "no video frame from `start` = {} s to {stop} (the file ends before, or the \
                     window holds no frame); change `[source.video] start`/`stop`",
                    s.start
                )
            } else {
                "no video frame in it (its video stream is empty); give a file with frames"
                    .to_string()
            };
            Some(SourceError::new(self.target.clone(), what))
        }

        fn describe(&self) -> String {
            let o = &self.opened;
            let (w, h) = (o.width, o.height);
            let s = &self.settings;
            let mut d = format!(
                "video {} ({} {w}x{h} @ {:.3} fps",
                self.target, o.codec, o.fps
            );
            if self.network {
                d.push_str(", network stream");
            } else if s.realtime {
                d.push_str(", real time");
            }
            match s.passes {
                None => d.push_str(", looped"),
                Some(p) if p > 1 => d.push_str(&format!(", {p} passes")),
                _ => {}
            }
            if s.start > 0.0 || s.stop.is_some() {
                let stop = s
                    .stop
                    .map_or_else(|| "end".to_string(), |t| format!("{t} s"));
                d.push_str(&format!(", {} s to {stop}", s.start));
            }
            if s.every > 1 {
                d.push_str(&format!(", every {}th frame", s.every));
            }
            d.push(')');
            d
        }

        /// A network stream's URL; a video file is no camera.
        fn camera(&self) -> Option<String> {
            self.network.then(|| self.target.clone())
        }

        fn report(&self) -> Option<serde_json::Value> {
            let o = &self.opened;
            let mut r = serde_json::json!({
                "kind": "video",
                "codec": o.codec,
                "width": o.width,
                "height": o.height,
                "fps": o.fps,
                "frames_decoded": self.frames_decoded,
                "frames_out": self.frames_out,
                "decode_errors": self.decode_errors,
                "loops": self.loops,
                "seeks": self.seeks,
                "realtime": self.settings.realtime && !self.network,
            });
            if let Some(map) = r.as_object_mut() {
                let what = if self.network { "url" } else { "file" };
                map.insert(what.into(), self.target.clone().into());
                if self.reopens > 0 {
                    map.insert("reopens".into(), self.reopens.into());
                }
                if self.network {
                    map.insert("reconnects".into(), self.reconnects.into());
                    map.insert("outage_count".into(), self.outage_count.into());
                    map.insert("outage_s".into(), self.outage_s.into());
                    map.insert(
                        "outages".into(),
                        serde_json::to_value(&self.outages).unwrap_or_default(),
                    );
                }
            }
            Some(r)
        }
    }

    /// FFmpeg's one-time set-up: network protocols, and its own log silenced entirely: decode
    /// errors are counted and reported by the source itself, one line per damaged frame, while
    /// FFmpeg's log lines (some decoders log damaged data at its *fatal* level, e.g. mjpeg's "No
    /// JPEG data found in image") came from its own threads and landed in the middle of ours.
    fn init() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let _ = ffmpeg::init();
            ffmpeg::format::network::init();
            ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Quiet);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}

#[cfg(all(test, feature = "video"))]
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
        let file = |e| imp::open_error(e, false);
        let url = |e| imp::open_error(e, true);
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

#[cfg(all(test, not(feature = "video")))]
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
