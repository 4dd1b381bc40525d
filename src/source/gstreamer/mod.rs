//! GStreamer pipelines as a source (feature `gstreamer`, on by default): any element chain in
//! `gst-launch-1.0` syntax, `--source "gst:videotestsrc ! …"` or `kind = "gstreamer"` with
//! `[source.gstreamer] pipeline = "…"` (docs/sources.md#gstreamer-pipelines).
//!
//! robustream appends `! videoconvert n-threads=1 ! video/x-raw,format=RGB ! appsink` to the chain
//! (a chain that already ends in a sink is refused, naming the sink), so `nvarguscamerasrc !
//! nvvidconv`, `aravissrc`, `v4l2src`, `rtspsrc ! … ! decodebin` and `filesrc ! decodebin` all work
//! the same. Whether the pipeline is live comes from its state change to PAUSED: NO_PREROLL (a
//! camera, `is-live=true`) makes the appsink keep only the newest buffer (`drop=true
//! max-buffers=1`, the dropped ones counted as lost, cause `appsink_dropped`) and the source live
//! ([`Source::is_live`]); otherwise every buffer is read in order (the appsink holds two, then
//! upstream waits), and end-of-stream ends the run.
//!
//! Frames: ids `gst/<n:08>` counting the frames handed out (offline: the same on every run);
//! `timestamp` is the buffer PTS as running time, seconds (over a rebuild the new pipeline's
//! running time plus the seconds from the source's opening to its start); `captured` of a live
//! frame is its PTS mapped to the host clock through the pipeline clock and base time (both
//! monotonic), so the frame's latency includes its way through the pipeline; offline frames are
//! `captured` when pulled. `decode_ms` is the copy out of the appsink's buffer (the conversion runs
//! in GStreamer's streaming thread, before it).
//!
//! Errors: a chain that does not parse says where (the part with the syntax error, or the missing
//! element with the package that provides it); an element's ERROR message names the element, its
//! object path and GStreamer's debug line, and the fix. A live pipeline that fails or stalls
//! (`timeout`) is rebuilt with back-off (0.1 s doubling to `backoff_max`) like a lost network
//! stream, the outage in `run.source_report.outages`; an offline pipeline that fails ends the run
//! with that line ([`Source::end_error`]).
//!
//! Without the `gstreamer` feature, [`open`] fails with a line naming the feature. The files:
//! [`config`] (`[source.gstreamer]`), and with the feature `pipeline` (building, pulling, errors in
//! words) and `source` (the [`Source`]).

mod config;
#[cfg(feature = "gstreamer")]
mod pipeline;
#[cfg(feature = "gstreamer")]
mod source;

pub use config::GstConfig;
pub(crate) use config::PREFIX;

use crate::source::{RawSourceConfig, Source, SourceError, SourceErrorKind, SourceKind};

/// Whether `config` is a GStreamer source: `kind = "gstreamer"`, or no kind and a path spelled
/// `gst:…` or a `[source.gstreamer]` table with a `pipeline`.
pub(crate) fn is_gst_source(config: &RawSourceConfig) -> bool {
    match config.kind {
        Some(kind) => kind == SourceKind::Gstreamer,
        None => {
            config.path.to_str().is_some_and(|p| p.starts_with(PREFIX))
                || config
                    .gstreamer
                    .as_ref()
                    .is_some_and(|g| g.pipeline.is_some())
        }
    }
}

/// The settled pipeline text of a GStreamer source: `[source.gstreamer]` checked, the chain from
/// its `pipeline` or the path (see [`GstConfig::pipeline_text`]).
pub(crate) fn settle(config: &RawSourceConfig) -> Result<(String, GstConfig), SourceError> {
    let spec = config.path.to_str().unwrap_or_default();
    let table = config.gstreamer.clone().unwrap_or_default();
    let err = |e: config::GstConfigError| {
        SourceError::new(SourceErrorKind::Settings, spec, e.to_string()).caused_by(e)
    };
    table.check().map_err(err)?;
    let text = table.pipeline_text(spec).map_err(err)?;
    Ok((text, table))
}

/// Opens the pipeline `text` with `config` (see the module docs). Errors: GStreamer that does not
/// start, a chain that does not parse, ends in a sink or fails before its first frame (within
/// `timeout`), or a build without the `gstreamer` feature.
pub(crate) fn open(text: &str, config: &GstConfig) -> Result<Box<dyn Source>, SourceError> {
    open_pipeline(text, config)
}

#[cfg(feature = "gstreamer")]
fn open_pipeline(text: &str, config: &GstConfig) -> Result<Box<dyn Source>, SourceError> {
    Ok(Box::new(source::GstSource::open(text, config.clone())?))
}

#[cfg(not(feature = "gstreamer"))]
fn open_pipeline(text: &str, _config: &GstConfig) -> Result<Box<dyn Source>, SourceError> {
    Err(SourceError::new(
        SourceErrorKind::Feature,
        format!("{PREFIX}{text}"),
        "is a GStreamer pipeline but this robustream was built without the `gstreamer` feature; \
         rebuild with default features (`cargo build --release`, GStreamer -dev packages from \
         `bash scripts/setup.sh`)",
    ))
}

#[cfg(all(test, feature = "gstreamer"))]
mod tests;

#[cfg(all(test, not(feature = "gstreamer")))]
mod feature_off {
    #[test]
    fn a_build_without_the_feature_names_it() {
        let e = super::open("videotestsrc", &super::GstConfig::default())
            .err()
            .unwrap();
        assert_eq!(e.kind, crate::source::SourceErrorKind::Feature);
        assert!(
            e.to_string().starts_with(
                "gst:videotestsrc: is a GStreamer pipeline but this robustream was built without \
                 the `gstreamer` feature"
            ),
            "{e}"
        );
    }
}
