//! Admission: what an offline and a live source lose (nothing, or the frames the policy drops
//! while every worker is held) and the order frames are released in.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_channel::unbounded;

use super::stub::{GatedSource, StubEngine};
use super::*;
use crate::app::pipeline::{DropPolicy, EndReason};
use crate::source::memory::MemorySource;

#[test]
fn an_offline_source_loses_nothing_and_its_frames_come_out_in_source_order() {
    // An engine far slower than the source, three workers sharing each frame's variants, and a
    // drop policy that an offline source must ignore.
    let mut engine = StubEngine::new();
    engine.delay = Some(Duration::from_millis(1));
    let mut config = config(3, 3);
    config.drop = DropPolicy::Newest;
    let frames: Vec<Frame> = (0..24).map(frame).collect();
    let plan = plan4();
    let keys: Vec<String> = plan.keys().iter().map(|k| k.to_string()).collect();
    let ran = run(inputs(
        Box::new(MemorySource::new(frames)),
        engine,
        plan,
        config,
    ));
    let o = &ran.outcome;
    assert_eq!(o.end, EndReason::Completed);
    assert_eq!((o.frames_read, o.frames_dropped), (24, 0));
    assert_eq!(dropped(&ran.events), 0);
    let want: Vec<String> = (0..24).map(|k| format!("f{k}")).collect();
    assert_eq!(story(&ran.events), want);
    for (k, records) in ran
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(r) => Some(r),
            _ => None,
        })
        .enumerate()
    {
        // Every variant, in plan order, numbered by its position in the source.
        let got: Vec<&str> = records.iter().map(|r| r.scenario.as_str()).collect();
        assert_eq!(got, keys, "frame {k}");
        assert!(records.iter().all(|r| r.seq == Some(k as u64)));
        // The clean record was scored from this frame's own row.
        assert_eq!(records[0].pred, (k % stub::CLASSES) as i64, "frame {k}");
    }
}

/// A live run on one worker with batches of one row: frame 0 is taken and its first row is held
/// in the engine, so its other three rows fill the other two buffers and leave the worker waiting
/// for a free one; frames 1, 2 and 3 then arrive while no worker can take them. Returns once
/// frame 3 was handed over (with `DropPolicy::Never` the source waits at frame 2 instead, so
/// the engine is let go first).
fn held_live_run(policy: DropPolicy) -> Ran {
    let (source, feed) = GatedSource::new(true);
    let (gate, gate_rx) = unbounded();
    let (entered_tx, entered) = unbounded();
    let mut engine = StubEngine::new();
    engine.gate = Some(gate_rx);
    engine.entered = Some(entered_tx);
    let mut config = config(1, 1);
    config.drop = policy;
    let stop = Arc::new(AtomicBool::new(false));
    let running = start(
        inputs(Box::new(source), engine, plan4(), config),
        stop,
        |_| {},
    );
    feed.frames.send(frame(0)).unwrap();
    // Frame 0's first row is in the engine: the worker took it.
    assert_eq!(entered.recv_timeout(GUARD), Ok(0));
    for k in 1..=3 {
        feed.frames.send(frame(k)).unwrap();
    }
    if policy != DropPolicy::Never {
        // Asked for item 4: frame 3 was handed over, with the engine still held.
        feed.wait_asked(4);
    }
    drop(feed); // the end of the source, after the frames sent
    drop(gate); // every batch goes through
    running.finish()
}

#[test]
fn a_live_source_keeps_the_newest_waiting_frame_and_counts_the_older_ones_dropped() {
    let ran = held_live_run(DropPolicy::Oldest);
    // Frame 1 waited, frame 2 replaced it, frame 3 replaced frame 2.
    assert_eq!(story(&ran.events), ["f0", "dropped", "dropped", "f3"]);
    let o = &ran.outcome;
    assert_eq!(o.end, EndReason::Completed);
    assert_eq!((o.frames_read, o.frames_dropped), (4, 2));
    assert_eq!(dropped(&ran.events), 2);
}

#[test]
fn a_live_source_under_drop_newest_keeps_the_first_waiting_frame() {
    let ran = held_live_run(DropPolicy::Newest);
    assert_eq!(story(&ran.events), ["f0", "f1", "dropped", "dropped"]);
    assert_eq!(ran.outcome.frames_dropped, 2);
    assert_eq!(dropped(&ran.events), 2);
}

#[test]
fn a_live_source_under_drop_never_waits_and_loses_nothing() {
    let ran = held_live_run(DropPolicy::Never);
    assert_eq!(story(&ran.events), ["f0", "f1", "f2", "f3"]);
    assert_eq!(ran.outcome.frames_dropped, 0);
    assert_eq!(ran.outcome.end, EndReason::Completed);
}

#[test]
fn a_stop_drops_the_live_frame_still_waiting_and_ends_the_run_as_interrupted() {
    let (source, feed) = GatedSource::new(true);
    let (gate, gate_rx) = unbounded();
    let (entered_tx, entered) = unbounded();
    let mut engine = StubEngine::new();
    engine.gate = Some(gate_rx);
    engine.entered = Some(entered_tx);
    let stop = Arc::new(AtomicBool::new(false));
    let running = start(
        inputs(Box::new(source), engine, plan4(), config(1, 1)),
        stop.clone(),
        |_| {},
    );
    feed.frames.send(frame(0)).unwrap();
    assert_eq!(entered.recv_timeout(GUARD), Ok(0));
    feed.frames.send(frame(1)).unwrap();
    feed.wait_asked(2); // frame 1 waits for the held worker
    stop.store(true, Ordering::Relaxed);
    drop(gate);
    // The source is left waiting for a frame that never comes: the stop ends it.
    let ran = running.finish();
    drop(feed);
    assert_eq!(story(&ran.events), ["f0", "dropped"]);
    let o = &ran.outcome;
    assert_eq!(o.end, EndReason::Interrupted);
    assert_eq!((o.frames_read, o.frames_dropped), (2, 1));
}
