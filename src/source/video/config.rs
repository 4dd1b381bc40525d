//! `[source.video]`: the table as written ([`VideoConfig`]), checked into [`Settings`], its time
//! values ([`TimeSpec`], [`parse_time`]) and `--realtime` ([`set_realtime`]).

use super::target::is_video_source;
use crate::source::{RawSourceConfig, SourceKind};

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
    fn passes(self) -> Option<u64> {
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
    pub(crate) fn seconds(&self) -> Result<f64, TimeError> {
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
    Synthetic(#[from] crate::source::synthetic::SyntheticError),
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
        let parsed = crate::source::synthetic::SyntheticConfig::parse_spec(spec).transpose()?;
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
    pub(crate) passes: Option<u64>,
    /// Start, seconds of presentation time (0 = the beginning).
    pub(crate) start: f64,
    /// End, seconds of presentation time (exclusive); `None` = the end of the file.
    pub(crate) stop: Option<f64>,
    /// Pace files at their native rate.
    pub(crate) realtime: bool,
    /// Keep every k-th decoded frame (≥ 1).
    pub(crate) every: u64,
    /// Network read stall timeout.
    pub(crate) timeout: std::time::Duration,
    /// Network open (and reconnect attempt) timeout.
    pub(crate) open_timeout: std::time::Duration,
    /// How long a lost network stream is reconnected: `None` = without end, zero = never.
    pub(crate) reconnect: Option<std::time::Duration>,
}

impl VideoConfig {
    /// The checked settings: times ≥ 0, `stop` after `start`, `every` and a loop count ≥ 1.
    pub(crate) fn settings(&self) -> Result<Settings, VideoConfigError> {
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

/// How long opening a network stream may take before it counts as unreachable.
pub const OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);
/// How long a network read may stall before the connection counts as lost.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
