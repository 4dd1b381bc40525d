//! How a run ends early: an engine failure (on a batch, or in the warm-up on the engine thread)
//! and the stop flag. `Running::finish` returning at all shows every stage has wound down.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::stub::StubEngine;
use super::*;
use crate::app::pipeline::EndReason;
use crate::source::memory::MemorySource;

/// `clean` and one corruption: two variants per frame.
fn plan2() -> Plan {
    Plan::from_items(&["corruption/brightness/1"], &Catalog::builtin()).unwrap()
}

fn many_frames(n: usize) -> Box<MemorySource> {
    Box::new(MemorySource::new((0..n).map(frame).collect()))
}

#[test]
fn an_engine_failing_on_a_batch_fails_the_run_with_its_line_and_stops_every_stage() {
    let mut engine = StubEngine::new();
    engine.fail_on = Some(3);
    let calls = engine.calls.clone();
    let ran = run(inputs(many_frames(50), engine, plan2(), config(2, 2)));
    let o = &ran.outcome;
    let line = format!("inference failed: {}", StubEngine::failure(3));
    assert_eq!(o.end, EndReason::Failed(line));
    // The engine thread ran no batch after the failing one, and the source stopped reading.
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert!(o.frames_read < 50, "{o:?}");
    // What was released before it is whole frames in source order: batches 0..2 held 6 rows.
    let told = story(&ran.events);
    assert!(told.len() <= 3, "{told:?}");
    let want: Vec<String> = (0..told.len()).map(|k| format!("f{k}")).collect();
    assert_eq!(told, want);
}

#[test]
fn an_engine_failing_in_its_warm_up_on_the_engine_thread_fails_the_run_before_any_batch() {
    let mut engine = StubEngine::new();
    engine.fail_warm_up = true;
    let (calls, warm_ups) = (engine.calls.clone(), engine.warm_ups.clone());
    let mut inputs = inputs(many_frames(20), engine, plan2(), config(2, 2));
    inputs.engine_thread_warmup = 2;
    let ran = run(inputs);
    assert_eq!(
        ran.outcome.end,
        EndReason::Failed(
            "the engine failed on its warm-up batches on the engine thread: inference failed: \
             stub engine: warm-up failed"
                .into()
        )
    );
    assert_eq!(warm_ups.load(Ordering::SeqCst), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert!(story(&ran.events).is_empty(), "{:?}", story(&ran.events));
}

#[test]
fn the_stop_flag_ends_an_offline_run_as_interrupted_with_every_frame_read_finished() {
    let stop = Arc::new(AtomicBool::new(false));
    let raise = stop.clone();
    // Raised as the first frame's records come out.
    let ran = start(
        inputs(many_frames(1000), StubEngine::new(), plan2(), config(2, 2)),
        stop,
        move |e| {
            if matches!(e, Event::Frame(_)) {
                raise.store(true, Ordering::Relaxed);
            }
        },
    )
    .finish();
    let o = &ran.outcome;
    assert_eq!(o.end, EndReason::Interrupted);
    // An offline source's frames read ahead are finished, not dropped, and the source stopped.
    assert_eq!(o.frames_dropped, 0);
    assert!(o.frames_read < 1000, "{o:?}");
    let want: Vec<String> = (0..o.frames_read).map(|k| format!("f{k}")).collect();
    assert_eq!(story(&ran.events), want);
}
