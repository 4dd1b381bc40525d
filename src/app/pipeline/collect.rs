//! The collector, on the caller's thread: completions are re-ordered into source order and each
//! frame is handed to the sink as soon as it and every frame before it are complete, its records
//! stamped with their `age` (capture → written). Under `--strict` the first skipped item or failed
//! variant ends the run; a fatal message or a sink error ends it too (the collector then drains
//! the other stages' messages so they can finish).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::{EndReason, Event, Message, SinkError, TICK};
use crate::metrics::{Record, Stage};

/// What the collector counted, and the end it decided (if any).
pub(super) struct Collected {
    pub(crate) end: Option<EndReason>,
    pub(crate) skipped: u64,
    pub(crate) dropped: u64,
    pub(crate) failed: u64,
}

/// Receives until every other stage has hung up, calling `sink` for every event in source order.
pub(super) fn run(
    msg_rx: &Receiver<Message>,
    plan_len: usize,
    strict: bool,
    fatal: &AtomicBool,
    sink: &mut dyn FnMut(Event) -> Result<(), SinkError>,
) -> Collected {
    let mut collector = Collector::new(plan_len);
    let mut c = Collected {
        end: None,
        skipped: 0,
        dropped: 0,
        failed: 0,
    };
    let fail = |c: &mut Collected, reason: String| {
        c.end = Some(EndReason::Failed(reason));
        fatal.store(true, Ordering::Relaxed);
    };
    loop {
        let msg = match msg_rx.recv_timeout(TICK) {
            Ok(msg) => msg,
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                if c.end.is_none()
                    && let Err(e) = sink(Event::Tick)
                {
                    fail(&mut c, e.to_string());
                }
                continue;
            }
        };
        if c.end.is_some() {
            continue; // draining after a fatal error so the other threads can finish
        }
        let events = match msg {
            Message::Fatal(e) => {
                fail(&mut c, e);
                continue;
            }
            Message::Skipped { seq, reason } => {
                c.skipped += 1;
                if strict {
                    fail(&mut c, format!("{reason} (--strict)"));
                    continue;
                }
                collector.skip(seq, reason)
            }
            Message::Dropped { seq } => {
                c.dropped += 1;
                collector.dropped(seq)
            }
            Message::Lost(n, causes) => vec![Event::Lost(n, causes)],
            Message::Batch(b) => vec![Event::Batch(b)],
            Message::Passed { seq, n } => collector.passed(seq, n),
            Message::Failed {
                seq,
                scenario,
                variants,
                reason,
            } => {
                c.failed += 1;
                if strict {
                    fail(&mut c, format!("{reason} (--strict)"));
                    continue;
                }
                collector.fail(seq, scenario, variants, reason)
            }
            Message::Done {
                seq,
                scenario,
                variants,
                captured,
                record,
            } => collector.done(seq, scenario, variants, record, captured),
        };
        for ev in events {
            if let Err(e) = sink(ev) {
                fail(&mut c, e.to_string());
                break;
            }
        }
    }
    c
}

/// Re-orders per-variant completions into whole frames in source order.
pub(super) struct Collector {
    /// Slots per frame (the plan's length).
    variants: usize,
    next: u64,
    pending: BTreeMap<u64, Pending>,
}

enum Pending {
    Passed,
    Skipped(String),
    Dropped,
    Frame {
        slots: Vec<Option<Option<Record>>>,
        filled: usize,
        /// Variants this frame has (the plan's length, 1 for a stored variant).
        expected: usize,
        problems: Vec<String>,
        /// When the frame was captured (each record's `age` is taken from it on release).
        captured: Option<Instant>,
    },
}

impl Collector {
    fn new(variants: usize) -> Self {
        Self {
            variants,
            next: 0,
            pending: BTreeMap::new(),
        }
    }

    fn skip(&mut self, seq: u64, reason: String) -> Vec<Event> {
        self.pending.insert(seq, Pending::Skipped(reason));
        self.release()
    }

    /// Items `seq..seq + n` are not this run's to evaluate (another shard's, or finished before
    /// a resume).
    fn passed(&mut self, seq: u64, n: u64) -> Vec<Event> {
        for s in seq..seq.saturating_add(n) {
            self.pending.insert(s, Pending::Passed);
        }
        self.release()
    }

    /// Frame `seq` was dropped before any variant was made.
    fn dropped(&mut self, seq: u64) -> Vec<Event> {
        self.pending.insert(seq, Pending::Dropped);
        self.release()
    }

    /// Variant `scenario` of frame `seq` (which has `expected` variants) failed.
    fn fail(&mut self, seq: u64, scenario: usize, expected: usize, reason: String) -> Vec<Event> {
        self.fill(seq, scenario, expected, None, Some(reason), None)
    }

    /// Variant `scenario` of frame `seq` (which has `expected` variants), captured at `captured`,
    /// is done.
    fn done(
        &mut self,
        seq: u64,
        scenario: usize,
        expected: usize,
        record: Record,
        captured: Instant,
    ) -> Vec<Event> {
        self.fill(seq, scenario, expected, Some(record), None, Some(captured))
    }

    fn fill(
        &mut self,
        seq: u64,
        scenario: usize,
        expected: usize,
        record: Option<Record>,
        problem: Option<String>,
        at: Option<Instant>,
    ) -> Vec<Event> {
        let n = self.variants;
        let entry = self.pending.entry(seq).or_insert_with(|| Pending::Frame {
            slots: (0..n).map(|_| None).collect(),
            filled: 0,
            expected,
            problems: Vec::new(),
            captured: None,
        });
        if let Pending::Frame {
            slots,
            filled,
            problems,
            captured,
            ..
        } = entry
            && slots[scenario].is_none()
        {
            slots[scenario] = Some(record);
            *filled += 1;
            problems.extend(problem);
            *captured = captured.or(at);
        }
        self.release()
    }

    /// Emits every complete frame at the head of the order.
    fn release(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(p) = self.pending.get(&self.next) {
            match p {
                Pending::Frame {
                    filled, expected, ..
                } if filled < expected => break,
                _ => {}
            }
            match self.pending.remove(&self.next).expect("present") {
                Pending::Passed => match out.last_mut() {
                    Some(Event::Passed(n)) => *n += 1,
                    _ => out.push(Event::Passed(1)),
                },
                Pending::Skipped(reason) => out.push(Event::Skipped(reason)),
                Pending::Dropped => out.push(Event::Dropped),
                Pending::Frame {
                    slots,
                    problems,
                    captured,
                    ..
                } => {
                    out.extend(problems.into_iter().map(Event::VariantFailed));
                    let mut records: Vec<Record> = slots.into_iter().flatten().flatten().collect();
                    // Capture → written: the sink writes the records as it gets them.
                    if let Some(captured) = captured {
                        let age = super::ms(captured);
                        for r in &mut records {
                            r.ms.set(Stage::Age, age);
                        }
                    }
                    out.push(Event::Frame(records));
                }
            }
            self.next += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Timings;

    fn rec(frame: &str, scenario: &str) -> Record {
        Record {
            format: crate::contract::Format,
            frame: frame.into(),
            seq: None,
            scenario: scenario.into(),
            truth: None,
            pred: 0,
            top5: vec![0],
            prob: vec![1.0],
            hit5: None,
            ms: Timings::new(),
            boxes: None,
            groups: Default::default(),
        }
    }

    #[test]
    fn a_sink_error_ends_the_run_as_failed_with_its_line() {
        use crate::report::ReportError;
        let (tx, rx) = crossbeam_channel::unbounded::<Message>();
        // Hung up after a tick's wait: the collector hands the sink a Tick, which fails.
        let hang_up = std::thread::spawn(move || {
            std::thread::sleep(TICK * 2);
            drop(tx);
        });
        let fatal = AtomicBool::new(false);
        let mut kinds = Vec::new();
        let mut sink = |_: Event| -> Result<(), SinkError> {
            let e = SinkError::from(ReportError::NotARun {
                dir: "runs/x".into(),
                why: "no records.jsonl",
            });
            kinds.push(matches!(e, SinkError::Report(ReportError::NotARun { .. })));
            Err(e)
        };
        let c = run(&rx, 1, false, &fatal, &mut sink);
        hang_up.join().unwrap();
        assert_eq!(kinds, [true], "the sink is not called after it failed");
        assert!(fatal.load(Ordering::Relaxed));
        let Some(EndReason::Failed(line)) = c.end else {
            panic!("{:?}", c.end)
        };
        assert!(
            line.starts_with("runs/x: no records.jsonl; give `robustream report`"),
            "{line}"
        );
    }

    #[test]
    fn collector_releases_frames_in_source_order() {
        let mut c = Collector::new(2);
        assert!(
            c.done(1, 0, 2, rec("b", "clean"), Instant::now())
                .is_empty()
        );
        assert!(c.done(1, 1, 2, rec("b", "x"), Instant::now()).is_empty()); // frame 1 complete but frame 0 pending
        assert!(c.done(0, 1, 2, rec("a", "x"), Instant::now()).is_empty());
        let ev = c.done(0, 0, 2, rec("a", "clean"), Instant::now());
        assert_eq!(ev.len(), 2);
        match (&ev[0], &ev[1]) {
            (Event::Frame(a), Event::Frame(b)) => {
                assert_eq!(
                    (a[0].frame.as_str(), a[0].scenario.as_str()),
                    ("a", "clean")
                );
                assert_eq!(a[1].scenario, "x");
                assert_eq!(b[0].frame, "b");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn collector_passes_skips_and_failures_in_order() {
        let mut c = Collector::new(2);
        assert!(c.fail(1, 1, 2, "bad".into()).is_empty());
        let ev = c.skip(0, "corrupt".into());
        assert!(matches!(&ev[..], [Event::Skipped(r)] if r == "corrupt"));
        let ev = c.done(1, 0, 2, rec("b", "clean"), Instant::now());
        assert!(matches!(&ev[..], [Event::VariantFailed(_), Event::Frame(r)] if r.len() == 1));
    }

    #[test]
    fn collector_releases_a_stored_variant_on_its_one_record() {
        // Stored variants (`Frame::variant`) have one record each, in any slot of the plan.
        let mut c = Collector::new(3);
        assert!(c.done(1, 2, 1, rec("b", "y"), Instant::now()).is_empty());
        let ev = c.done(0, 1, 1, rec("a", "x"), Instant::now());
        let frames: Vec<&str> = ev
            .iter()
            .map(|e| match e {
                Event::Frame(r) if r.len() == 1 => r[0].frame.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(frames, ["a", "b"]);
        // A full frame after them still waits for all three.
        assert!(
            c.done(2, 0, 3, rec("c", "clean"), Instant::now())
                .is_empty()
        );
    }
}
