//! Video files and network streams decoded with FFmpeg (feature `video`, on by default).
//!
//! A video source is a file detected by its extension (`VIDEO_EXTENSIONS`: `mp4`, `mkv`, `avi`,
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

//!
//! The files: [`config`] (`[source.video]` and `--realtime`), [`target`] (what a path names: URL,
//! video file, frame id names), and with the feature `input` (opening with FFmpeg, its errors in
//! words), `source` (the [`Source`] and its report), `decode` (the decode loop, passes, damage, a
//! lost connection) and `convert` (libswscale to RGB). Reconnecting uses the back-off and outage
//! record the camera uses too ([`super::reconnect`]).

mod config;
#[cfg(feature = "video")]
mod convert;
#[cfg(feature = "video")]
mod decode;
#[cfg(feature = "video")]
mod input;
#[cfg(feature = "video")]
mod source;
mod target;

use std::path::Path;

pub use config::{
    Loop, OPEN_TIMEOUT, READ_TIMEOUT, RealtimeError, Reconnect, Settings, TimeError, TimeSpec,
    VideoConfig, VideoConfigError, parse_time, set_realtime,
};
pub(crate) use target::{URL_SCHEMES, file_problem, is_url, is_video_source, url_scheme};
#[cfg(test)]
pub(crate) use target::{has_video_extension, id_name};

use super::{Source, SourceError, SourceErrorKind};

/// Opens the video file or stream at `path` with the `[source.video]` settings `config` (see the
/// module docs). Errors: a bad `[source.video]` (`loop`/`start`/`stop` on a network stream included), an unsupported URL
/// scheme, a missing or unreadable file, a stream with no video, an unreachable URL (refused, or
/// no answer within `open_timeout`, default [`OPEN_TIMEOUT`]), or a build without the `video`
/// feature.
pub(crate) fn open(path: &Path, config: &VideoConfig) -> Result<Box<dyn Source>, SourceError> {
    let item = path.display().to_string();
    let settings = config.settings().map_err(|e| {
        SourceError::new(
            SourceErrorKind::Settings,
            &item,
            format!("[source.video]: {e}"),
        )
        .caused_by(e)
    })?;
    let network = match url_scheme(path) {
        Some(scheme) if URL_SCHEMES.contains(&scheme.as_str()) => true,
        Some(scheme) => {
            return Err(SourceError::new(
                SourceErrorKind::Settings,
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
            SourceErrorKind::Settings,
            &item,
            "[source.video] `loop`, `start` and `stop` apply to video files; a network stream is \
             read live from where it is (drop them; `--duration` or `--limit` bound a run)",
        ));
    }
    if !network && let Some(why) = file_problem(path) {
        // What the file system says, before FFmpeg's vaguer words.
        return Err(SourceError::new(SourceErrorKind::Open, &item, why));
    }
    open_video(&item, network, settings)
}

#[cfg(not(feature = "video"))]
fn open_video(
    item: &str,
    _network: bool,
    _settings: Settings,
) -> Result<Box<dyn Source>, SourceError> {
    Err(SourceError::new(
        SourceErrorKind::Feature,
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
    Ok(Box::new(source::VideoSource::open(
        item, network, settings,
    )?))
}

#[cfg(test)]
mod tests;
