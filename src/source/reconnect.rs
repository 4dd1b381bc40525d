//! Getting a live source back after it went away, shared by the camera ([`super::camera`]) and
//! network streams ([`super::video`]): the back-off between attempts ([`Backoff`]), the record of
//! one outage ([`Outage`]) and of all of them ([`Outages`], written to `run.source_report`), the
//! clock the waits run on ([`Clock`], a fake in tests) and the wait itself, which watches the run's
//! stop flag ([`sleep_until`]).
//!
//! Each source keeps its own policy values (a camera starts at 0.1 s and doubles to
//! `[source.camera] backoff_max`, a stream starts at 0.5 s and doubles to 8 s) and its own idea of
//! when an outage ends (a camera: its first frame after a reopen; a stream: a reopened
//! connection); the outage record and the report fields are the same for both
//! (docs/output.md#runsource_report).

// Dead code is allowed only in builds where `not(any(feature = "camera", feature = "video"))`: its
// users are the reconnecting sources (`video/`, `camera/`): a build without both features uses it
// only in the unit tests.
#![cfg_attr(
    not(any(feature = "camera", feature = "video", feature = "genicam")),
    allow(dead_code)
)]

use std::time::{Duration, Instant};

/// Longest single wait (back-off sleeps, a camera's poll) before the stop flag is looked at again.
pub(crate) const POLL_SLICE: Duration = Duration::from_millis(50);

/// Outages listed in the report (`outage_count` and `outage_s` cover all of them).
const MAX_OUTAGES_LISTED: usize = 100;

/// Time as a reconnecting source sees it (a fake in tests).
pub(crate) trait Clock: Send {
    /// Seconds since an arbitrary fixed start.
    fn now(&self) -> f64;
    /// Blocks for `d`.
    fn sleep(&self, d: Duration);
}

/// The host's monotonic clock; `now` counts from when it was made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SystemClock {
    start: Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self {
            start: Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Sleeps on `clock` until its time `until`, in slices of [`POLL_SLICE`]; false when `stopped`
/// said so first (it is asked before every slice).
pub(crate) fn sleep_until(clock: &dyn Clock, stopped: impl Fn() -> bool, until: f64) -> bool {
    loop {
        if stopped() {
            return false;
        }
        // Below a nanosecond the wait is over (a zero sleep would never get there).
        let left = Duration::try_from_secs_f64(until - clock.now()).unwrap_or_default();
        if left.is_zero() {
            return true;
        }
        clock.sleep(left.min(POLL_SLICE));
    }
}

/// Exponential back-off: the wait before the next attempt, doubled after each failure up to a
/// cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Backoff {
    /// The first wait, seconds.
    first: f64,
    /// The longest wait, seconds.
    max: f64,
    /// The wait before the next attempt, seconds.
    wait: f64,
}

impl Backoff {
    /// Waits from `first` seconds doubling to `max` (a `first` above `max` is `max`).
    pub(crate) fn new(first: f64, max: f64) -> Self {
        Self {
            first,
            max,
            wait: first.min(max),
        }
    }

    /// The wait before the next attempt, seconds.
    pub(crate) fn wait(&self) -> f64 {
        self.wait
    }

    /// An attempt failed: the next wait is twice as long, up to the cap.
    pub(crate) fn failed(&mut self) {
        self.wait = (self.wait * 2.0).min(self.max);
    }

    /// Back to the first wait (the source is up again).
    pub(crate) fn reset(&mut self) {
        self.wait = self.first.min(self.max);
    }
}

/// How [`retry`] ended.
#[derive(Debug)]
// The network stream's (feature `video`); the camera reconnects by its own loop.
#[cfg_attr(not(feature = "video"), allow(dead_code))]
pub(crate) enum Retried<T> {
    /// An attempt succeeded.
    Back(T),
    /// The stop flag rose first.
    Stopped,
    /// No attempt succeeded within the window.
    GaveUp,
}

/// Attempts `attempt` with `backoff` waits between (the first wait before the first attempt) until
/// one succeeds, `stopped` says so, or `window` seconds (from the clock's time now) ran out;
/// `attempt` is given the time it may take, seconds: `budget`, cut to what is left of the window
/// but never under 0.1 s. Returns how it ended and the attempts made. (A network stream's
/// reconnect; the camera interleaves its attempts with grabbing frames instead.)
#[cfg_attr(not(feature = "video"), allow(dead_code))]
pub(crate) fn retry<T, E>(
    clock: &dyn Clock,
    stopped: impl Fn() -> bool,
    mut backoff: Backoff,
    window: Option<f64>,
    budget: f64,
    mut attempt: impl FnMut(f64) -> Result<T, E>,
) -> (Retried<T>, u64) {
    let give_up = window.map(|w| clock.now() + w);
    let mut attempts = 0u64;
    loop {
        let mut due = clock.now() + backoff.wait();
        if let Some(end) = give_up {
            if clock.now() >= end {
                return (Retried::GaveUp, attempts);
            }
            due = due.min(end);
        }
        if !sleep_until(clock, &stopped, due) {
            return (Retried::Stopped, attempts);
        }
        attempts += 1;
        // An attempt ends by the end of the window (but gets at least 0.1 s).
        let budget = give_up.map_or(budget, |end| budget.min((end - clock.now()).max(0.1)));
        match attempt(budget) {
            Ok(back) => return (Retried::Back(back), attempts),
            Err(_) if stopped() => return (Retried::Stopped, attempts),
            Err(_) => backoff.failed(),
        }
    }
}

/// One time a live source was lost, as `run.source_report.outages` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Outage {
    /// When it was lost, seconds since the source opened (to the millisecond).
    #[serde(serialize_with = "millis")]
    pub(crate) at_s: f64,
    /// How long until the source was back, or until the run ended when it never came back,
    /// seconds (to the millisecond).
    #[serde(serialize_with = "millis")]
    pub(crate) duration_s: f64,
    /// Reopen attempts made.
    pub(crate) attempts: u64,
    /// Why it was lost (`no data for 10.0 s`, `capture failed (No such device)`).
    pub(crate) error: String,
    /// Whether it came back (false: the run or the source ended during the outage).
    pub(crate) recovered: bool,
}

/// A time in seconds written to the millisecond.
fn millis<S: serde::Serializer>(seconds: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(round_ms(*seconds))
}

/// `seconds` rounded to the millisecond.
fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// An outage still going on: since when (clock time), why, attempts so far.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ongoing {
    /// Clock time it began.
    pub(crate) since: f64,
    /// Why the source was lost.
    pub(crate) error: String,
    /// Reopen attempts so far.
    pub(crate) attempts: u64,
}

impl Ongoing {
    /// An outage that began at clock time `since` because of `error`.
    pub(crate) fn new(since: f64, error: impl Into<String>) -> Self {
        Self {
            since,
            error: error.into(),
            attempts: 0,
        }
    }

    /// The record of this outage, ending at clock time `now`; `opened_at` is the clock time the
    /// source opened.
    pub(crate) fn end(&self, opened_at: f64, now: f64, recovered: bool) -> Outage {
        Outage {
            at_s: self.since - opened_at,
            duration_s: now - self.since,
            attempts: self.attempts,
            error: self.error.clone(),
            recovered,
        }
    }
}

/// A source's outages: the first [`MAX_OUTAGES_LISTED`] listed, all of them counted and summed.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Outages {
    listed: Vec<Outage>,
    count: u64,
    total_s: f64,
    reconnects: u64,
}

impl Outages {
    /// One outage more.
    pub(crate) fn push(&mut self, outage: Outage) {
        self.count += 1;
        self.total_s += outage.duration_s;
        if self.listed.len() < MAX_OUTAGES_LISTED {
            self.listed.push(outage);
        }
    }

    /// The source was reopened (a camera reopened may still fail before its first frame, so
    /// there can be more reconnects than recovered outages).
    pub(crate) fn reconnected(&mut self) {
        self.reconnects += 1;
    }

    /// Times the source was reopened.
    pub(crate) fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// The report fields, in this order: `reconnects`, `outage_count`, `outage_s` (to the
    /// millisecond) and `outages`, added to `map`; `ongoing` (an outage the source is still in)
    /// is counted and listed after the others, unrecovered.
    pub(crate) fn report_into(
        &self,
        map: &mut serde_json::Map<String, serde_json::Value>,
        ongoing: Option<Outage>,
    ) {
        let mut all = self.clone();
        if let Some(o) = ongoing {
            all.push(o);
        }
        map.insert("reconnects".into(), all.reconnects.into());
        map.insert("outage_count".into(), all.count.into());
        map.insert("outage_s".into(), round_ms(all.total_s).into());
        map.insert(
            "outages".into(),
            serde_json::to_value(&all.listed).unwrap_or_default(),
        );
    }
}

#[cfg(test)]
mod tests;
