//! The stand-ins the pipeline's unit tests run on: an engine that scores without a model and a
//! source the test feeds frame by frame, both of which tell the test what they are doing so that
//! no test has to guess from the clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::GUARD;
use crate::engine::{BatchShapes, Engine, EngineError, RunTiming};
use crate::frame::Frame;
use crate::source::{Source, SourceError};

/// The classes of the tests' model ([`super::tiny_model`]).
pub(crate) const CLASSES: usize = 3;

/// The pixel value of a frame of class `class`: the stub engine reads it back from the row
/// ([`StubEngine`]'s scores), so a record's `pred` says which frame's row it was made from.
pub(crate) fn class_value(class: usize) -> u8 {
    (class * 64 + 32) as u8
}

/// An [`Engine`] without a model: row `i`'s scores are logits peaked at the class its first value
/// encodes ([`class_value`]; finite, so [`crate::engine::check_row`] accepts them). It counts its
/// calls, reports each batch's runtime calls as a real engine does (`shapes.runs`, one call per
/// shape, padding included), and can be held, slowed down or made to fail:
///
/// - `gate`: each batch waits for one permit (a `()` sent by the test); a gate whose sender is
///   dropped lets every batch through. [`GUARD`] without a permit fails the batch, so a test that
///   forgot to open the gate fails instead of hanging;
/// - `entered`: the index of each batch is sent as it starts (before the gate);
/// - `delay`: each batch sleeps this long (an engine slower than the source, no assertion on it);
/// - `fail_on`: batch `n` (from 0) fails with [`StubEngine::failure`];
/// - `fail_warm_up`: [`Engine::warm_up`] fails.
pub(crate) struct StubEngine {
    pub(crate) shapes: Option<BatchShapes>,
    pub(crate) gate: Option<Receiver<()>>,
    pub(crate) entered: Option<Sender<usize>>,
    pub(crate) delay: Option<Duration>,
    pub(crate) fail_on: Option<usize>,
    pub(crate) fail_warm_up: bool,
    /// Batches run (failed ones included); shared with the test.
    pub(crate) calls: Arc<AtomicUsize>,
    /// Warm-up rounds run; shared with the test.
    pub(crate) warm_ups: Arc<AtomicUsize>,
    /// The calls of the last batch, until taken.
    runs: Vec<RunTiming>,
}

impl StubEngine {
    /// Any batch size as given, never held, never failing.
    pub(crate) fn new() -> Self {
        Self {
            shapes: None,
            gate: None,
            entered: None,
            delay: None,
            fail_on: None,
            fail_warm_up: false,
            calls: Arc::new(AtomicUsize::new(0)),
            warm_ups: Arc::new(AtomicUsize::new(0)),
            runs: Vec::new(),
        }
    }

    /// The error of batch `n` under `fail_on`.
    pub(crate) fn failure(n: usize) -> String {
        format!("stub engine: batch {n} failed")
    }

    /// The logits of one input row.
    fn scores(row: &[f32]) -> [f32; CLASSES] {
        let class = ((row[0].max(0.0) / 64.0) as usize).min(CLASSES - 1);
        let mut logits = [0.0; CLASSES];
        logits[class] = 4.0;
        logits
    }

    /// Waits for the test's permit; an error after [`GUARD`].
    fn pass_gate(&self, n: usize) -> Result<(), EngineError> {
        let Some(gate) = &self.gate else {
            return Ok(());
        };
        match gate.recv_timeout(GUARD) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => Ok(()),
            Err(RecvTimeoutError::Timeout) => Err(EngineError::Run(format!(
                "stub engine: batch {n} was never let through (a test that forgot its gate)"
            ))),
        }
    }
}

impl Engine for StubEngine {
    fn describe(&self) -> String {
        "stub engine".into()
    }

    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(entered) = &self.entered {
            let _ = entered.send(n);
        }
        self.pass_gate(n)?;
        if let Some(d) = self.delay {
            std::thread::sleep(d);
        }
        if self.fail_on == Some(n) {
            return Err(EngineError::Run(Self::failure(n)));
        }
        self.runs = match &self.shapes {
            Some(shapes) => shapes
                .runs(batch)
                .into_iter()
                .map(|r| RunTiming {
                    shape: r.shape,
                    rows: r.rows,
                    ms: 0.0,
                })
                .collect(),
            None => Vec::new(),
        };
        let per = input.len() / batch.max(1);
        Ok(input
            .chunks_exact(per.max(1))
            .take(batch)
            .flat_map(Self::scores)
            .collect())
    }

    fn shapes(&self) -> Option<BatchShapes> {
        self.shapes.clone()
    }

    fn warm_up(&mut self) -> Result<Vec<(usize, f64)>, EngineError> {
        self.warm_ups.fetch_add(1, Ordering::SeqCst);
        if self.fail_warm_up {
            return Err(EngineError::Run("stub engine: warm-up failed".into()));
        }
        Ok(self.shapes.as_ref().map_or(Vec::new(), |s| {
            s.sizes().iter().map(|&n| (n, 0.0)).collect()
        }))
    }

    fn take_runs(&mut self) -> Vec<RunTiming> {
        std::mem::take(&mut self.runs)
    }
}

/// A source the test feeds: each frame sent on `frames` is the next item, the end of the source
/// is the sender dropped. Before each item it says which one it is asked for on `asked` (from 0;
/// the source is asked for item `k + 1` only after item `k` was handed over, the reader reads
/// nothing ahead), and it returns `None` soon after the pipeline's stop ([`Source::set_stop`]).
pub(crate) struct GatedSource {
    frames: Receiver<Frame>,
    asked: Sender<u64>,
    live: bool,
    stop: Option<Arc<AtomicBool>>,
    next: u64,
}

/// The test's ends of a [`GatedSource`]: frames in, "asked for item k" out.
pub(crate) struct Feed {
    pub(crate) frames: Sender<Frame>,
    pub(crate) asked: Receiver<u64>,
}

impl Feed {
    /// Waits until the source is asked for item `k` (so every item before it was handed over).
    pub(crate) fn wait_asked(&self, k: u64) {
        loop {
            match self.asked.recv_timeout(GUARD) {
                Ok(i) if i >= k => return,
                Ok(_) => {}
                Err(e) => panic!("the source was never asked for item {k}: {e}"),
            }
        }
    }
}

impl GatedSource {
    /// A source (live or not) and the test's ends of it.
    pub(crate) fn new(live: bool) -> (Self, Feed) {
        let (frames_tx, frames) = crossbeam_channel::unbounded();
        let (asked, asked_rx) = crossbeam_channel::unbounded();
        let source = Self {
            frames,
            asked,
            live,
            stop: None,
            next: 0,
        };
        let feed = Feed {
            frames: frames_tx,
            asked: asked_rx,
        };
        (source, feed)
    }
}

impl Source for GatedSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let _ = self.asked.send(self.next);
        loop {
            match self.frames.recv_timeout(Duration::from_millis(5)) {
                Ok(frame) => {
                    self.next += 1;
                    return Some(Ok(frame));
                }
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {
                    if self
                        .stop
                        .as_ref()
                        .is_some_and(|s| s.load(Ordering::Relaxed))
                    {
                        return None;
                    }
                }
            }
        }
    }

    fn len_hint(&self) -> Option<usize> {
        None
    }

    fn describe(&self) -> String {
        format!(
            "gated test source ({})",
            if self.live { "live" } else { "offline" }
        )
    }

    fn is_live(&self) -> bool {
        self.live
    }

    fn set_stop(&mut self, stop: Arc<AtomicBool>) {
        self.stop = Some(stop);
    }
}
