//! The source's calls on a thread of their own, so that a read blocked in the kernel cannot hold
//! the run after a stop.
//!
//! Most sources return soon after the stop flag ([`Source::set_stop`]), but a read of a file that
//! never answers (a FIFO nobody writes to, a stalled network mount) blocks in the kernel, where no
//! flag reaches it. [`Reader`] runs the source on a plain (not scoped) thread and asks it for one
//! frame at a time, so nothing is read ahead and the source sees the same calls in the same order as
//! before. While waiting for an answer it watches the stop flag; once the flag has been up for
//! [`GRACE`] without an answer, it leaves that thread behind (it ends with the process, or when its
//! read returns and finds nobody listening) and tells the pipeline the source has ended, so the
//! frames in flight finish and the summary of what was done is written.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded};

use crate::frame::Frame;
use crate::source::{ItemFilter, LostCauses, Source, SourceError};

/// How long a source may take to answer after the stop flag rose before it is left behind.
pub const GRACE: Duration = Duration::from_millis(500);

/// How often a waiting [`Reader`] looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

/// What the reader thread is asked.
enum Request {
    Next,
    PassOver(ItemFilter, u64),
    Report,
    EndError,
}

/// Its answers, one per request, in order.
enum Reply {
    /// The next item and the source's [`Source::lost`] count and causes after it.
    Item(Option<Result<Frame, SourceError>>, u64, LostCauses),
    Passed(u64),
    Report(Option<serde_json::Value>),
    EndError(Option<SourceError>),
}

/// A [`Source`] whose calls run on the reader thread (see the module docs).
pub(crate) struct Reader {
    requests: Option<Sender<Request>>,
    replies: Receiver<Reply>,
    thread: Option<JoinHandle<()>>,
    stop: Arc<AtomicBool>,
    describe: String,
    len_hint: Option<usize>,
    live: bool,
    fps: Option<f64>,
    lost: u64,
    lost_causes: LostCauses,
    /// When a read was left behind, the source's state is unknown: no more calls.
    left_behind: bool,
}

impl Reader {
    /// Hands `source` the stop flag ([`Source::set_stop`]) and moves it onto a reader thread.
    /// Errors when the OS refuses the thread.
    pub(crate) fn spawn(
        mut source: Box<dyn Source>,
        stop: Arc<AtomicBool>,
    ) -> std::io::Result<Self> {
        source.set_stop(stop.clone());
        let (describe, len_hint, live, fps) = (
            source.describe(),
            source.len_hint(),
            source.is_live(),
            source.fps(),
        );
        // One request at a time: neither channel ever holds more than one message.
        let (req_tx, req_rx) = bounded::<Request>(1);
        let (reply_tx, reply_rx) = bounded::<Reply>(1);
        let thread = std::thread::Builder::new()
            .name("rs-read".into())
            .spawn(move || {
                for request in req_rx {
                    let reply = match request {
                        Request::Next => {
                            let item = source.next_frame();
                            Reply::Item(item, source.lost(), source.lost_causes())
                        }
                        Request::PassOver(wanted, max) => {
                            Reply::Passed(source.pass_over(&wanted, max))
                        }
                        Request::Report => Reply::Report(source.report()),
                        Request::EndError => Reply::EndError(source.end_error()),
                    };
                    if reply_tx.send(reply).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Self {
            requests: Some(req_tx),
            replies: reply_rx,
            thread: Some(thread),
            stop,
            describe,
            len_hint,
            live,
            fps,
            lost: 0,
            lost_causes: Vec::new(),
            left_behind: false,
        })
    }

    /// Asks the reader thread and waits for its answer, giving up [`GRACE`] after the stop flag
    /// rose (then `None`, and the thread is left behind). A reader thread that died of a panic
    /// passes the panic on, as the source's panic on the pipeline's own thread would.
    fn ask(&mut self, request: Request) -> Option<Reply> {
        if self.left_behind {
            return None;
        }
        let sent = self.requests.as_ref().map(|r| r.send(request));
        if !matches!(sent, Some(Ok(()))) {
            self.reader_died();
            return None;
        }
        let mut stopped_at: Option<Instant> = None;
        loop {
            match self.replies.recv_timeout(POLL) {
                Ok(reply) => return Some(reply),
                Err(RecvTimeoutError::Disconnected) => {
                    self.reader_died();
                    return None;
                }
                Err(RecvTimeoutError::Timeout) => {
                    if !self.stop.load(Ordering::Relaxed) {
                        continue;
                    }
                    let since = *stopped_at.get_or_insert_with(Instant::now);
                    if since.elapsed() >= GRACE {
                        self.left_behind = true;
                        eprintln!(
                            "warning: {}: a read has not returned {:.1} s after the stop (blocked \
                             in the system: a FIFO nobody writes to, a stalled network mount?); \
                             left behind, the run ends with the frames read before it",
                            self.describe,
                            GRACE.as_secs_f64()
                        );
                        return None;
                    }
                }
            }
        }
    }

    /// The reader thread ended without answering: the source panicked. The panic goes on here.
    fn reader_died(&mut self) {
        self.requests = None;
        if let Some(Err(panic)) = self.thread.take().map(JoinHandle::join) {
            std::panic::resume_unwind(panic);
        }
    }
}

impl Drop for Reader {
    /// Closes the request channel (the reader thread drops the source and ends) and waits for the
    /// thread, unless it was left behind in a read.
    fn drop(&mut self) {
        self.requests = None;
        if let Some(thread) = self.thread.take()
            && !self.left_behind
        {
            let _ = thread.join();
        }
    }
}

impl Source for Reader {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        match self.ask(Request::Next)? {
            Reply::Item(item, lost, causes) => {
                self.lost = lost;
                self.lost_causes = causes;
                item
            }
            _ => None,
        }
    }

    fn len_hint(&self) -> Option<usize> {
        self.len_hint
    }

    fn pass_over(&mut self, wanted: &ItemFilter, max: u64) -> u64 {
        match self.ask(Request::PassOver(wanted.clone(), max)) {
            Some(Reply::Passed(n)) => n,
            _ => 0,
        }
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn is_live(&self) -> bool {
        self.live
    }

    /// The flag was handed over in [`Reader::spawn`].
    fn set_stop(&mut self, _stop: Arc<AtomicBool>) {}

    fn fps(&self) -> Option<f64> {
        self.fps
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    fn lost_causes(&self) -> LostCauses {
        self.lost_causes.clone()
    }

    /// The source's report; after a read was left behind, only that.
    fn report(&self) -> Option<serde_json::Value> {
        // `report` takes `&self`; the channels need no `&mut`.
        if self.left_behind {
            return Some(serde_json::json!({
                "left_behind": format!(
                    "a read had not returned {:.1} s after the stop; the source's own report is \
                     lost with it",
                    GRACE.as_secs_f64()
                ),
            }));
        }
        match self.ask_ref(Request::Report)? {
            Reply::Report(r) => r,
            _ => None,
        }
    }

    fn end_error(&self) -> Option<SourceError> {
        match self.ask_ref(Request::EndError)? {
            Reply::EndError(e) => e,
            _ => None,
        }
    }
}

impl Reader {
    /// [`Reader::ask`] for the `&self` methods, asked only after the source ended on its own or
    /// was stopped: the reader thread is idle then and answers at once. `None` once left behind.
    fn ask_ref(&self, request: Request) -> Option<Reply> {
        if self.left_behind {
            return None;
        }
        self.requests.as_ref()?.send(request).ok()?;
        self.replies.recv().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::memory::MemorySource;

    /// A source whose every read blocks for good, as a FIFO nobody writes to does.
    struct Stuck;

    impl Source for Stuck {
        fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
            loop {
                std::thread::park();
            }
        }

        fn len_hint(&self) -> Option<usize> {
            None
        }

        fn describe(&self) -> String {
            "stuck".into()
        }
    }

    fn frame(i: u64) -> Frame {
        Frame::new(format!("f{i}"), i, image::RgbImage::new(2, 2))
    }

    #[test]
    fn frames_come_through_one_request_at_a_time() {
        let stop = Arc::new(AtomicBool::new(false));
        let source = MemorySource::new((0..3).map(frame).collect());
        let mut r = Reader::spawn(Box::new(source), stop).unwrap();
        assert_eq!(r.describe(), "memory (3 frames)");
        assert_eq!(r.len_hint(), Some(3));
        let ids: Vec<String> = std::iter::from_fn(|| r.next_frame())
            .map(|f| f.unwrap().id)
            .collect();
        assert_eq!(ids, ["f0", "f1", "f2"]);
        assert!(r.next_frame().is_none());
        assert!(r.report().is_none());
        assert!(r.end_error().is_none());
    }

    #[test]
    fn a_read_that_never_returns_is_left_behind_after_the_grace() {
        let stop = Arc::new(AtomicBool::new(false));
        let mut r = Reader::spawn(Box::new(Stuck), stop.clone()).unwrap();
        let raiser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            stop.store(true, Ordering::Relaxed);
        });
        let t = Instant::now();
        assert!(r.next_frame().is_none());
        let waited = t.elapsed();
        assert!(
            waited >= GRACE && waited < GRACE + Duration::from_secs(2),
            "{waited:?}"
        );
        raiser.join().unwrap();
        // No more calls reach the source; its report says why it is missing; dropping returns.
        assert!(r.next_frame().is_none());
        assert!(r.end_error().is_none());
        assert!(r.report().unwrap()["left_behind"].is_string());
        drop(r);
    }

    #[test]
    fn a_panicking_source_panics_the_caller() {
        struct Panics;
        impl Source for Panics {
            fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
                panic!("source bug")
            }
            fn len_hint(&self) -> Option<usize> {
                None
            }
            fn describe(&self) -> String {
                "panics".into()
            }
        }
        let mut r = Reader::spawn(Box::new(Panics), Arc::new(AtomicBool::new(false))).unwrap();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.next_frame()));
        assert!(caught.is_err());
    }
}
