//! The GStreamer side of the source: the pipeline built from the user's chain with robustream's
//! converter and appsink appended ([`Running::build`]), live or not from its state change, samples
//! pulled with a timeout ([`Running::pull`]), and every way it can fail said in one line
//! ([`GstError`]): a chain that does not parse (where), a missing element (which plugin package),
//! an element that fails while running (which element, and what to do).
//! docs/sources.md#gstreamer-pipelines.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gst::prelude::*;
use gstreamer as gst;
use gstreamer_app as gst_app;

/// The appended converter's and appsink's names (a user's element of the same name is refused by
/// GStreamer's parser as a duplicate: an unlikely clash, reported like any parse error).
pub(super) const CONVERT_NAME: &str = "robustream_convert";
pub(super) const SINK_NAME: &str = "robustream_sink";

/// Buffers an offline pipeline's appsink holds before upstream waits (bounded memory, no drop).
const OFFLINE_MAX_BUFFERS: u32 = 2;

/// `gst::init()` once per process; its error (GStreamer missing or broken) kept as text.
fn init() -> Result<(), GstError> {
    static INIT: OnceLock<Result<(), String>> = OnceLock::new();
    INIT.get_or_init(|| gst::init().map_err(|e| e.to_string()))
        .clone()
        .map_err(GstError::Init)
}

/// Why a pipeline cannot be built or stopped working. Display = the message after the item (the
/// pipeline) of a [`crate::source::SourceError`] line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum GstError {
    /// `gst::init()` failed.
    #[error(
        "GStreamer cannot start ({0}); check the GStreamer install (`gst-inspect-1.0 --version`, \
         `bash scripts/setup.sh`)"
    )]
    Init(String),
    /// The chain does not parse or link: GStreamer's words, where, and the fix.
    #[error("the pipeline does not parse: {message}{at}; {fix}")]
    Parse {
        /// GStreamer's message (`syntax error`, `could not link a0 to b0`).
        message: String,
        /// Where (` at `…` (part 3 of 4)`), when it could be found; else empty.
        at: String,
        /// What to do.
        fix: String,
    },
    /// The chain ends in a sink of its own.
    #[error(
        "the pipeline ends in `{element}`, a sink, but robustream appends its own converter and \
         appsink; remove `! {element}…` from the end"
    )]
    EndsInSink {
        /// The sink's factory name.
        element: String,
    },
    /// An element posted an error on the bus (at the start or while running).
    #[error("element `{element}` failed: {message}{detail}; {fix}")]
    Element {
        /// The element's name (`videotestsrc0`, `identity0`), its object path in `detail`.
        element: String,
        /// GStreamer's error message.
        message: String,
        /// ` (<object path>: <debug text>)`, clipped to one line.
        detail: String,
        /// What to do.
        fix: String,
    },
    /// The state change failed with no error on the bus.
    #[error("the pipeline cannot start (state change to {state} failed); {fix}")]
    State {
        /// `PAUSED` or `PLAYING`.
        state: &'static str,
        /// What to do.
        fix: String,
    },
    /// No buffer within the timeout.
    #[error(
        "no frame within {seconds} s; check that the pipeline's source produces buffers \
         (`[source.gstreamer] timeout` waits longer)"
    )]
    NoBuffer {
        /// `[source.gstreamer] timeout`.
        seconds: f64,
    },
}

/// The fix shown for a pipeline tried by hand: the same chain into `fakesink` with `-v`.
fn try_by_hand(text: &str) -> String {
    format!(
        "try it by hand: gst-launch-1.0 -v {} ! videoconvert ! fakesink",
        crate::quote::clip(text)
    )
}

/// The Debian / L4T package that provides an element robustream's docs name, for a missing one.
fn package_of(element: &str) -> Option<&'static str> {
    Some(match element {
        "nvarguscamerasrc" | "nvvidconv" | "nvv4l2decoder" | "nvv4l2h264enc" | "nvvideoconvert" => {
            "NVIDIA's L4T GStreamer plugins (`nvidia-l4t-gstreamer`, on a Jetson only)"
        }
        "aravissrc" => "`libaravis-0.8-0` (Aravis's GStreamer plugin)",
        "videotestsrc" | "videoconvert" | "videoscale" | "videorate" | "decodebin"
        | "uridecodebin" | "appsink" | "appsrc" | "playbin" | "audioconvert" | "tcpclientsrc" => {
            "`gstreamer1.0-plugins-base`"
        }
        "v4l2src" | "rtspsrc" | "rtph264depay" | "rtph265depay" | "qtdemux" | "matroskademux"
        | "souphttpsrc" | "udpsrc" | "jpegdec" | "avimux" | "flvdemux" | "imagefreeze" => {
            "`gstreamer1.0-plugins-good`"
        }
        "h264parse" | "h265parse" | "nvh264dec" | "nvh265dec" | "vah264dec" | "srtsrc"
        | "rtmpsrc" | "mpegtsmux" | "tsdemux" => "`gstreamer1.0-plugins-bad`",
        "x264enc" | "mpeg2dec" => "`gstreamer1.0-plugins-ugly`",
        "avdec_h264" | "avdec_h265" | "avdec_mjpeg" => "`gstreamer1.0-libav`",
        "vaapih264dec" | "vaapipostproc" => "`gstreamer1.0-vaapi`",
        _ => return None,
    })
}

/// The chain's top-level parts, split at `!` outside quotes, trimmed.
pub(super) fn parts(text: &str) -> Vec<&str> {
    let (mut out, mut start, mut quote) = (Vec::new(), 0, None);
    for (i, c) in text.char_indices() {
        match (c, quote) {
            ('"' | '\'', None) => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            ('!', None) => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out
}

/// The first word of a part: an element's factory name (or caps, a `name.` pad reference).
fn first_word(part: &str) -> &str {
    part.split_whitespace().next().unwrap_or_default()
}

/// The element the chain starts with, for the `camera` label (its first part, as written).
pub(super) fn first_part(text: &str) -> String {
    crate::quote::clip(parts(text).first().copied().unwrap_or_default()).into_owned()
}

/// A chain whose last part is a sink element is refused (robustream appends its own).
fn check_no_sink(text: &str) -> Result<(), GstError> {
    let last = parts(text)
        .last()
        .map(|p| first_word(p))
        .unwrap_or_default();
    let is_sink = gst::ElementFactory::find(last)
        .is_some_and(|f| f.metadata("klass").is_some_and(|k| k.contains("Sink")));
    match is_sink {
        true => Err(GstError::EndsInSink {
            element: last.to_string(),
        }),
        false => Ok(()),
    }
}

/// Where a chain that does not parse goes wrong: the first prefix of its parts that gives a
/// syntax error names the part (GStreamer's own message says only `syntax error`).
fn syntax_error_at(text: &str) -> String {
    let parts = parts(text);
    for k in 0..parts.len() {
        let prefix = parts[..=k].join(" ! ");
        if let Err(e) = gst::parse::launch_full(&prefix, None, gst::ParseFlags::FATAL_ERRORS)
            && matches!(e.kind::<gst::ParseError>(), Some(gst::ParseError::Syntax))
        {
            let part = match parts[k] {
                "" => "(nothing)".to_string(),
                p => format!("`{}`", crate::quote::clip(p)),
            };
            return format!(" at {part} (part {} of {})", k + 1, parts.len());
        }
    }
    String::new()
}

/// A parse error of the whole chain in words: the missing elements with their packages, the
/// place of a syntax error, or GStreamer's message with the way to try it by hand.
fn parse_error(text: &str, error: &gst::glib::Error, missing: &[String]) -> GstError {
    let message = error.message().to_string();
    if !missing.is_empty() {
        let fix = missing
            .iter()
            .map(|m| match package_of(m) {
                Some(p) => format!("`{m}` comes with {p}"),
                None => format!(
                    "install the GStreamer plugin that provides `{m}` (`gst-inspect-1.0 {m}` \
                     finds it once installed) or check its spelling"
                ),
            })
            .collect::<Vec<_>>()
            .join("; ");
        return GstError::Parse {
            message,
            at: String::new(),
            fix,
        };
    }
    match error.kind::<gst::ParseError>() {
        Some(gst::ParseError::Syntax | gst::ParseError::EmptyBin) => GstError::Parse {
            message,
            at: syntax_error_at(text),
            fix: "write it in gst-launch-1.0 syntax: elements with `name=value` properties \
                  joined by ` ! `"
                .into(),
        },
        Some(gst::ParseError::Link) => GstError::Parse {
            message,
            at: String::new(),
            fix: format!(
                "the elements' formats do not fit (robustream appends `! videoconvert ! \
                 video/x-raw,format=RGB ! appsink`, so the chain must end in raw video: add \
                 `decodebin` or a decoder); {}",
                try_by_hand(text)
            ),
        },
        _ => GstError::Parse {
            message,
            at: String::new(),
            fix: try_by_hand(text),
        },
    }
}

/// An ERROR message from the bus in words: the element, GStreamer's message and debug text, the
/// fix.
fn element_error(text: &str, err: &gst::message::Error) -> GstError {
    let src = err.src();
    let element = src.map_or_else(|| "?".to_string(), |s| s.name().to_string());
    let path = src.map(|s| s.path_string().to_string()).unwrap_or_default();
    // GStreamer's debug text is `file(line): function (): object path` and, on the lines after,
    // the reason (`streaming stopped, reason not-negotiated (-4)`): only the reason is kept.
    let debug = err
        .debug()
        .map(|d| d.lines().skip(1).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let factory = src
        .and_then(|s| s.downcast_ref::<gst::Element>())
        .and_then(|e| e.factory())
        .map(|f| f.name().to_string())
        .unwrap_or_default();
    let ours = element == CONVERT_NAME || element == SINK_NAME;
    let message = err.error().message().to_string();
    let fix = if ours || message.contains("not-negotiated") || debug.contains("not-negotiated") {
        format!(
            "the chain's output cannot be converted to RGB (robustream appends `! videoconvert \
             ! video/x-raw,format=RGB ! appsink`): end the chain in raw video, e.g. add \
             `decodebin`; {}",
            try_by_hand(text)
        )
    } else {
        let what = match factory.as_str() {
            "" => String::new(),
            f => format!("`{f}`'s "),
        };
        format!(
            "check {what}properties and the device or stream it reads; {}",
            try_by_hand(text)
        )
    };
    let detail = match (path.is_empty(), debug.is_empty()) {
        (true, true) => String::new(),
        (false, true) => format!(" ({path})"),
        (true, false) => format!(" ({})", crate::quote::clip(&debug)),
        (false, false) => format!(" ({path}: {})", crate::quote::clip(&debug)),
    };
    GstError::Element {
        element,
        message,
        detail,
        fix,
    }
}

/// One pull's outcome.
pub(super) enum Pulled {
    /// A sample.
    Sample(gst::Sample),
    /// Nothing within the wait.
    Nothing,
    /// The end of stream, every sample pulled.
    Eos,
    /// An element failed.
    Failed(GstError),
}

/// A built, playing pipeline with robustream's appsink at its end.
pub(super) struct Running {
    pub(super) pipeline: gst::Pipeline,
    sink: gst_app::AppSink,
    bus: gst::Bus,
    /// The state change to PAUSED said NO_PREROLL: a live source.
    pub(super) live: bool,
    /// Buffers that reached the appsink (a pad probe counts them): those not pulled were
    /// dropped by it (live: newest wins).
    arrived: Arc<AtomicU64>,
    text: String,
}

impl Running {
    /// Builds `text ! videoconvert ! video/x-raw,format=RGB ! appsink` and sets it playing (see
    /// the module docs); `threads` is the converter's `n-threads`.
    pub(super) fn build(text: &str, threads: u32) -> Result<Self, GstError> {
        init()?;
        check_no_sink(text)?;
        let full = format!(
            "{text} ! videoconvert name={CONVERT_NAME} n-threads={threads} ! \
             video/x-raw,format=RGB ! appsink name={SINK_NAME} sync=false \
             max-buffers={OFFLINE_MAX_BUFFERS} drop=false"
        );
        let mut context = gst::ParseContext::new();
        let element =
            gst::parse::launch_full(&full, Some(&mut context), gst::ParseFlags::FATAL_ERRORS)
                .map_err(|e| parse_error(text, &e, &context.missing_elements()))?;
        let not_a_pipeline = || GstError::Parse {
            message: "it does not make a pipeline".into(),
            at: String::new(),
            fix: try_by_hand(text),
        };
        let pipeline = element
            .downcast::<gst::Pipeline>()
            .map_err(|_| not_a_pipeline())?;
        let sink = pipeline
            .by_name(SINK_NAME)
            .and_then(|e| e.downcast::<gst_app::AppSink>().ok())
            .ok_or_else(not_a_pipeline)?;
        let bus = pipeline.bus().ok_or_else(not_a_pipeline)?;
        let arrived = Arc::new(AtomicU64::new(0));
        if let Some(pad) = sink.static_pad("sink") {
            let count = Arc::clone(&arrived);
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                count.fetch_add(1, Ordering::Relaxed);
                gst::PadProbeReturn::Ok
            });
        }
        let mut running = Self {
            pipeline,
            sink,
            bus,
            live: false,
            arrived,
            text: text.to_string(),
        };
        let fix = || try_by_hand(text);
        match running.pipeline.set_state(gst::State::Paused) {
            Ok(gst::StateChangeSuccess::NoPreroll) => running.live = true,
            Ok(_) => {}
            Err(_) => {
                return Err(running.bus_error().unwrap_or(GstError::State {
                    state: "PAUSED",
                    fix: fix(),
                }));
            }
        }
        if running.live {
            // Newest wins: a frame not pulled in time is replaced by the next one.
            running.sink.set_drop(true);
            running.sink.set_max_buffers(1);
        }
        if running.pipeline.set_state(gst::State::Playing).is_err() {
            return Err(running.bus_error().unwrap_or(GstError::State {
                state: "PLAYING",
                fix: fix(),
            }));
        }
        Ok(running)
    }

    /// The first ERROR message waiting on the bus, in words.
    fn bus_error(&self) -> Option<GstError> {
        let msg = self.bus.pop_filtered(&[gst::MessageType::Error])?;
        match msg.view() {
            gst::MessageView::Error(err) => Some(element_error(&self.text, err)),
            _ => None,
        }
    }

    /// The next sample within `wait`, or why there is none.
    pub(super) fn pull(&self, wait: Duration) -> Pulled {
        if let Some(e) = self.bus_error() {
            return Pulled::Failed(e);
        }
        let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        match self
            .sink
            .try_pull_sample(gst::ClockTime::from_nseconds(nanos))
        {
            Some(sample) => Pulled::Sample(sample),
            // An element that fails posts its error before the EOS that follows it reaches
            // the appsink: an EOS with an error waiting is that error.
            None => match (self.bus_error(), self.sink.is_eos()) {
                (Some(e), _) => Pulled::Failed(e),
                (None, true) => Pulled::Eos,
                (None, false) => Pulled::Nothing,
            },
        }
    }

    /// The first sample within `timeout` seconds, pulled in slices of `slice` so `stopped` is
    /// looked at; `Ok(None)` when stopped first.
    pub(super) fn first_sample(
        &self,
        timeout: f64,
        slice: Duration,
        stopped: &dyn Fn() -> bool,
    ) -> Result<Option<gst::Sample>, GstError> {
        let start = Instant::now();
        loop {
            if stopped() {
                return Ok(None);
            }
            match self.pull(slice) {
                Pulled::Sample(s) => return Ok(Some(s)),
                Pulled::Failed(e) => return Err(e),
                Pulled::Eos => {
                    return Err(GstError::Element {
                        element: first_word(parts(&self.text).first().copied().unwrap_or("?"))
                            .to_string(),
                        message: "end of stream before the first frame".into(),
                        detail: String::new(),
                        fix: "give a pipeline that produces video (a `num-buffers` above 0, a \
                              file with frames)"
                            .into(),
                    });
                }
                Pulled::Nothing if start.elapsed().as_secs_f64() >= timeout => {
                    return Err(GstError::NoBuffer { seconds: timeout });
                }
                Pulled::Nothing => {}
            }
        }
    }

    /// Buffers that reached the appsink so far.
    pub(super) fn arrived(&self) -> u64 {
        self.arrived.load(Ordering::Relaxed)
    }

    /// The pipeline's clock time now and its base time, for mapping a running time to the host
    /// clock; `None` without a clock.
    pub(super) fn clock_now(&self) -> Option<(gst::ClockTime, gst::ClockTime)> {
        let now = self.pipeline.clock()?.time();
        Some((now, self.pipeline.base_time()?))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Stops the streaming threads and frees the devices; an error here has no one to go to.
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}
