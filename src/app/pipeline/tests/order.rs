//! The engine thread and the collector on batches built by hand, so that the frames complete out
//! of source order for certain: frame 1's rows run in the first batch, frame 0's in the next two
//! (one row of them given up by its writer, which the engine thread treats as padding).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::stub::{StubEngine, class_value};
use super::*;
use crate::app::pipeline::assembly::{Assembler, BUFFERS};
use crate::app::pipeline::work::RowMeta;
use crate::app::pipeline::{FrameMeta, Message, collect, infer};
use crate::engine::BatchBuffer;

fn meta(seq: u64, variants: usize) -> Arc<FrameMeta> {
    Arc::new(FrameMeta {
        seq,
        variants,
        id: format!("f{seq}"),
        truth: None,
        captured: Instant::now(),
        decode_ms: 0.0,
        mask_ms: None,
        wait_ms: 0.0,
        groups: Default::default(),
    })
}

/// Writes variant `scenario` of `meta`'s frame into the next row, every value `value`.
fn write(assembler: &Assembler<RowMeta>, meta: &Arc<FrameMeta>, scenario: usize, value: u8) {
    let mut slot = assembler.claim().unwrap();
    slot.values().fill(f32::from(value));
    slot.fill(RowMeta {
        meta: meta.clone(),
        scenario,
        scenario_ms: 0.0,
        preprocess_ms: 0.0,
        queued: Instant::now(),
        boxes: None,
    });
}

#[test]
fn frames_completing_out_of_source_order_are_released_in_source_order() {
    let model = tiny_model();
    let per = model.input_len();
    let buffers = (0..BUFFERS).map(|_| BatchBuffer::host(2, per)).collect();
    let assembler = Assembler::new(buffers, 2, Duration::from_secs(10));
    let (f0, f1) = (meta(0, 2), meta(1, 2));
    // Batch 0: frame 1 (class 1), both variants.
    write(&assembler, &f1, 0, class_value(1));
    write(&assembler, &f1, 1, class_value(1));
    // Batch 1: frame 0's clean variant and a row whose writer gave up (padding).
    write(&assembler, &f0, 0, class_value(2));
    drop(assembler.claim().unwrap());
    // Batch 2: frame 0's other variant, alone, flushed by the close.
    write(&assembler, &f0, 1, class_value(2));
    assembler.close();

    let (tx, rx) = crossbeam_channel::unbounded();
    let keys = ["clean".to_string(), "x".to_string()];
    let class_map = ClassMap::identity(&model.labels);
    let cx = infer::Context {
        msg: &tx,
        keys: &keys,
        class_map: &class_map,
        model: &model,
        clock: Instant::now(),
        warmup_rounds: 0,
    };
    let mut engine = StubEngine::new();
    infer::run(&mut engine, &assembler, &cx);
    drop(tx);

    // The engine thread sent frame 1's records first, each batch's record before its rows'.
    let messages: Vec<Message> = rx.try_iter().collect();
    let sent: Vec<String> = messages
        .iter()
        .map(|m| match m {
            Message::Batch(b) => format!("batch {} of {}", b.index, b.rows),
            Message::Done { seq, scenario, .. } => format!("{seq}/{scenario}"),
            _ => "other".into(),
        })
        .collect();
    assert_eq!(
        sent,
        [
            "batch 0 of 2",
            "1/0",
            "1/1",
            "batch 1 of 2",
            "0/0",
            "batch 2 of 1",
            "0/1"
        ]
    );

    // The collector holds frame 1 until frame 0 is complete.
    let (tx, rx) = crossbeam_channel::unbounded();
    for m in messages {
        tx.send(m).unwrap();
    }
    drop(tx);
    let mut events = Vec::new();
    let mut sink = |e: Event| -> Result<(), crate::app::pipeline::SinkError> {
        events.push(e);
        Ok(())
    };
    let collected = collect::run(&rx, 2, false, &AtomicBool::new(false), &mut sink);
    assert!(collected.end.is_none());
    assert_eq!((collected.failed, collected.dropped), (0, 0));
    assert_eq!(story(&events), ["f0", "f1"]);
    for (records, class) in events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(r) => Some(r),
            _ => None,
        })
        .zip([2, 1])
    {
        let got: Vec<(&str, i64)> = records
            .iter()
            .map(|r| (r.scenario.as_str(), r.pred))
            .collect();
        assert_eq!(got, [("clean", class), ("x", class)]);
    }
}
