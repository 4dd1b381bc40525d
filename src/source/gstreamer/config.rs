//! `[source.gstreamer]` ([`GstConfig`]): the pipeline, the converter's threads and, for a live
//! pipeline, how long a stall may last and how it is rebuilt, checked ([`GstConfig::check`]).
//! docs/sources.md#gstreamer-pipelines documents every key.

/// The spelling of a GStreamer pipeline as a source path: `gst:<pipeline>`.
pub(crate) const PREFIX: &str = "gst:";

/// `[source.gstreamer]`: the element chain and how a live one survives errors.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GstConfig {
    /// The element chain in `gst-launch-1.0` syntax, without a sink (robustream appends its own
    /// converter and appsink). Absent = the text after `gst:` of `[source] path` / `--source`.
    #[serde(default)]
    pub(crate) pipeline: Option<String>,
    /// Threads of the appended `videoconvert` (`n-threads`; 0 = one per core). Default 1: the
    /// conversion then costs one core at most and its output is the same on every run.
    #[serde(default = "default_convert_threads")]
    pub(crate) convert_threads: u32,
    /// A live pipeline whose element fails (or stalls past `timeout`) is rebuilt with back-off
    /// (default true); false ends the stream at the first error.
    #[serde(default = "default_reconnect")]
    // Read by the source (feature `gstreamer`); a build without it only checks the table.
    #[cfg_attr(not(feature = "gstreamer"), allow(dead_code))]
    pub(crate) reconnect: bool,
    /// Longest wait between rebuild attempts, seconds (default 5; waits start at 0.1 s and double).
    #[serde(default = "default_backoff_max")]
    pub(crate) backoff_max: f64,
    /// Seconds without a buffer after which a live pipeline counts as lost (default 5; the first
    /// buffer after building it is awaited this long too, offline pipelines as well).
    #[serde(default = "default_timeout")]
    pub(crate) timeout: f64,
}

fn default_convert_threads() -> u32 {
    1
}
fn default_reconnect() -> bool {
    true
}
fn default_backoff_max() -> f64 {
    5.0
}
fn default_timeout() -> f64 {
    5.0
}

/// The first rebuild wait, seconds (then doubled up to `backoff_max`).
pub(crate) const BACKOFF_START: f64 = 0.1;

impl Default for GstConfig {
    fn default() -> Self {
        Self {
            pipeline: None,
            convert_threads: default_convert_threads(),
            reconnect: default_reconnect(),
            backoff_max: default_backoff_max(),
            timeout: default_timeout(),
        }
    }
}

/// A `[source.gstreamer]` setting that cannot be used. Display = the message, naming the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GstConfigError {
    /// `key = value` outside its range.
    #[error("[source.gstreamer] {key} = {value} must {must}")]
    OutOfRange {
        /// The key.
        key: &'static str,
        /// The value as written back.
        value: String,
        /// The rule it breaks.
        must: String,
    },
    /// No pipeline anywhere, or an empty one.
    #[error(
        "no GStreamer pipeline given; write `--source \"gst:videotestsrc ! …\"` or \
         `[source.gstreamer] pipeline = \"…\"`"
    )]
    NoPipeline,
    /// Both `gst:…` in the path and `pipeline` in the table.
    #[error(
        "the pipeline is given twice (`gst:…` in `[source] path` and `[source.gstreamer] \
         pipeline`); keep one"
    )]
    TwoPipelines,
}

impl GstConfig {
    /// Checks ranges; the message names the key.
    pub(crate) fn check(&self) -> Result<(), GstConfigError> {
        let out = |key, value: String, must: &str| {
            Err(GstConfigError::OutOfRange {
                key,
                value,
                must: must.to_string(),
            })
        };
        if self.convert_threads > 64 {
            return out(
                "convert_threads",
                self.convert_threads.to_string(),
                "be in 0..=64 (0 = one per core)",
            );
        }
        if !(self.backoff_max.is_finite() && (BACKOFF_START..=3600.0).contains(&self.backoff_max)) {
            return out(
                "backoff_max",
                self.backoff_max.to_string(),
                "be in 0.1..=3600 seconds",
            );
        }
        if !(self.timeout.is_finite() && (0.1..=600.0).contains(&self.timeout)) {
            return out(
                "timeout",
                self.timeout.to_string(),
                "be in 0.1..=600 seconds",
            );
        }
        if self
            .pipeline
            .as_deref()
            .is_some_and(|p| p.trim().is_empty())
        {
            return Err(GstConfigError::NoPipeline);
        }
        Ok(())
    }

    /// The pipeline text: the table's `pipeline`, else `spec` after [`PREFIX`], else `spec`
    /// itself when it is not a placeholder name (`kind = "gstreamer"` with the chain as path).
    pub(crate) fn pipeline_text(&self, spec: &str) -> Result<String, GstConfigError> {
        let from_path = spec.strip_prefix(PREFIX).map(str::trim);
        let text = match (&self.pipeline, from_path) {
            (Some(_), Some(p)) if !p.is_empty() => return Err(GstConfigError::TwoPipelines),
            (Some(p), _) => p.trim().to_string(),
            (None, Some(p)) => p.to_string(),
            (None, None) => spec.trim().to_string(),
        };
        if text.is_empty() {
            return Err(GstConfigError::NoPipeline);
        }
        Ok(text)
    }
}
