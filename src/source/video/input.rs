//! Opening a video input with FFmpeg: the container (with an interrupt callback that watches the
//! stop flag and a deadline, [`Interrupt`]), its best video stream and a decoder for it
//! ([`open_input`]), and what FFmpeg's errors mean in words a user can act on ([`open_error`],
//! [`StreamError`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ffmpeg_next as ffmpeg;

/// State the FFmpeg interrupt callback reads: the run's stop flag once it is handed over, and
/// a deadline for the current blocking call.
pub(super) struct Interrupt {
    stop: OnceLock<Arc<AtomicBool>>,
    /// Milliseconds after `epoch` when the current call is abandoned; `u64::MAX` = never.
    deadline_ms: AtomicU64,
    epoch: Instant,
}

impl Interrupt {
    /// No stop flag yet, no deadline.
    pub(super) fn new() -> Self {
        Self {
            stop: OnceLock::new(),
            deadline_ms: AtomicU64::new(u64::MAX),
            epoch: Instant::now(),
        }
    }

    /// Watches the run's stop flag from now on (the first one handed over stays).
    pub(super) fn set_stop(&self, stop: Arc<AtomicBool>) {
        let _ = self.stop.set(stop);
    }

    pub(super) fn stopped(&self) -> bool {
        self.stop.get().is_some_and(|s| s.load(Ordering::Relaxed))
    }

    pub(super) fn expired(&self) -> bool {
        let d = self.deadline_ms.load(Ordering::Relaxed);
        d != u64::MAX && self.epoch.elapsed().as_millis() as u64 >= d
    }

    pub(super) fn arm(&self, timeout: Option<Duration>) {
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
pub(super) struct Io {
    pub(super) input: ffmpeg::format::context::Input,
    pub(super) decoder: ffmpeg::decoder::Video,
}

/// What is known about the opened stream.
pub(super) struct Opened {
    pub(super) stream: usize,
    /// Coded frame size, pixels.
    pub(super) width: u32,
    pub(super) height: u32,
    /// Seconds per pts unit.
    pub(super) time_base: f64,
    /// The stream's start time, seconds (0 when unknown).
    pub(super) start_s: f64,
    /// Frames per second (average rate, else the nominal rate); 0 when unknown.
    pub(super) fps: f64,
    pub(super) codec: String,
    /// Frames the container says the stream has (0 = unknown).
    pub(super) frames: i64,
    /// The input has a known duration: a file, or a finite resource behind a URL (a clip on
    /// a web server), whose end is the end; a live stream has none.
    pub(super) finite: bool,
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
    let interrupt = ffmpeg::util::interrupt::new(Box::new(move || cb.stopped() || cb.expired()));
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
/// (instead of FFmpeg's "Invalid data found when processing input" whatever the cause). The
/// file-system causes of a file are found before FFmpeg tries ([`super::file_problem`]);
/// they are here too for a file that changed in between or a path only FFmpeg can open.
pub(super) fn open_error(e: ffmpeg::Error, network: bool) -> String {
    use ffmpeg::Error as E;
    let errno = match e {
        E::Other { errno } => errno,
        _ => 0,
    };
    match e {
        _ if errno == libc::EACCES || errno == libc::EPERM => {
            super::target::PERMISSION_DENIED.to_string()
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
pub(super) fn open_input(
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
    let context =
        ffmpeg::codec::context::Context::from_parameters(stream.parameters()).map_err(|e| {
            StreamError::NoVideo {
                message: format!("cannot read the video stream's parameters ({e})"),
                source: Some(e),
            }
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

/// FFmpeg's one-time set-up: network protocols, and its own log silenced entirely: decode
/// errors are counted and reported by the source itself, one line per damaged frame, while
/// FFmpeg's log lines (some decoders log damaged data at its *fatal* level, e.g. mjpeg's "No
/// JPEG data found in image") came from its own threads and landed in the middle of ours.
pub(super) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = ffmpeg::init();
        ffmpeg::format::network::init();
        ffmpeg::util::log::set_level(ffmpeg::util::log::Level::Quiet);
    });
}
