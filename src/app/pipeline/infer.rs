//! The engine thread: takes assembled batches, runs them in place
//! ([`crate::engine::Engine::infer_buffer`], at the engine's fixed batch sizes), hands the buffer
//! back at once so the workers can refill it while the rows are decoded, and sends one record per
//! row to the collector. A row the model's output cannot be scored from (NaN/inf, or "probabilities"
//! that are not: [`crate::engine::check_row`]) becomes a failed variant instead, counted and
//! skipped like a scenario that cannot apply (fatal under `--strict`).
//!
//! Before its first batch the thread runs `[engine] engine_thread_warmup` rounds of every batch
//! size (a GPU provider keeps its cuDNN / cuBLAS handles per calling thread: the load's warm-up ran
//! on another thread; docs/gpu.md#one-session-per-batch-size). Each batch and each warm-up run
//! becomes a [`BatchRecord`] (`batches.csv`): its runtime calls, shape changes, the idle gap
//! before it and how long its rows queued.

use std::time::Instant;

use crossbeam_channel::Sender;

use super::assembly::Assembler;
use super::work::RowMeta;
use super::{Message, ms};
use crate::classmap::ClassMap;
use crate::engine::{Engine, RunTiming, try_decode_row};
use crate::metrics::batches::{BatchRecord, Call};
use crate::metrics::{Record, Stage, Timings};
use crate::model::ModelDesc;

/// What the engine thread needs besides the engine and the assembly.
pub(super) struct Context<'a> {
    pub(crate) msg: &'a Sender<Message>,
    pub(crate) keys: &'a [String],
    pub(crate) class_map: &'a ClassMap,
    pub(crate) model: &'a ModelDesc,
    /// The pipeline's start: batch records' `start_s` count from it.
    pub(crate) clock: Instant,
    /// Warm-up rounds on this thread before the first batch.
    pub(crate) warmup_rounds: usize,
}

/// The engine's calls so far, for the next batch record.
struct BatchLog {
    clock: Instant,
    next: u64,
    /// The shape of the engine's last call.
    shape: Option<usize>,
    /// When its last batch ended.
    end: Option<Instant>,
}

impl BatchLog {
    /// The record of a batch of `rows` that started at `start` and took `infer_ms`, run by `runs`
    /// (one stand-in call when the engine does not say); the log moves on past it.
    fn record(
        &mut self,
        start: Instant,
        rows: usize,
        runs: &[RunTiming],
        infer_ms: f64,
        queue_ms: Option<(f64, f64)>,
        warmup: bool,
    ) -> BatchRecord {
        let whole = [RunTiming {
            shape: rows,
            rows,
            ms: infer_ms,
        }];
        let runs = if runs.is_empty() { &whole[..] } else { runs };
        let (calls, last) = Call::sequence(runs, self.shape);
        let record = BatchRecord {
            index: self.next,
            warmup,
            start_s: start.duration_since(self.clock).as_secs_f64(),
            rows,
            calls,
            gap_ms: self
                .end
                .map(|end| start.saturating_duration_since(end).as_secs_f64() * 1e3),
            queue_ms,
            infer_ms,
        };
        self.next += 1;
        self.shape = last;
        self.end = Some(Instant::now());
        record
    }
}

/// Median and largest of the rows' waits in the assembly, ms.
fn queue_waits(rows: &[Option<RowMeta>], start: Instant) -> Option<(f64, f64)> {
    let mut waits: Vec<f64> = rows
        .iter()
        .flatten()
        .map(|v| start.saturating_duration_since(v.queued).as_secs_f64() * 1e3)
        .collect();
    if waits.is_empty() {
        return None;
    }
    waits.sort_by(f64::total_cmp);
    // The nearest-rank median (rank ⌈n/2⌉), as the latency quantiles take it.
    Some((waits[waits.len().div_ceil(2) - 1], waits[waits.len() - 1]))
}

/// The warm-up rounds on this thread, each size's run a batch record; false when the engine
/// failed (the fatal message sent).
fn warm_up(engine: &mut dyn Engine, cx: &Context, log: &mut BatchLog) -> bool {
    for _ in 0..cx.warmup_rounds {
        let round = Instant::now();
        let times = match engine.warm_up() {
            Ok(times) => times,
            Err(e) => {
                let _ = cx.msg.send(Message::Fatal(format!(
                    "the engine failed on its warm-up batches on the engine thread: {e}"
                )));
                return false;
            }
        };
        // The sizes ran back to back: each starts where the one before ended.
        let mut start = round;
        for (size, ms) in times {
            let run = [RunTiming {
                shape: size,
                rows: size,
                ms,
            }];
            let record = log.record(start, size, &run, ms, None, true);
            start += std::time::Duration::from_secs_f64(ms.max(0.0) / 1e3);
            if cx.msg.send(Message::Batch(record)).is_err() {
                return false;
            }
        }
    }
    true
}

/// Runs batches until the assembly is closed and empty, or the engine fails (a fatal message; the
/// assembly is then closed so the workers stop).
pub(super) fn run(engine: &mut dyn Engine, assembler: &Assembler<RowMeta>, cx: &Context) {
    let (msg, keys, class_map, model) = (cx.msg, cx.keys, cx.class_map, cx.model);
    let (kind, classes) = (model.output.kind, model.output.classes);
    let mut log = BatchLog {
        clock: cx.clock,
        next: 0,
        shape: None,
        end: None,
    };
    if !warm_up(engine, cx, &mut log) {
        assembler.close();
        return;
    }
    while let Some(mut batch) = assembler.take() {
        let start = Instant::now();
        let result = engine.infer_buffer(&mut batch.buffer, batch.rows.len());
        let infer_ms = ms(start);
        assembler.release(batch.buffer);
        let n = batch.rows.len();
        if result.is_ok() {
            let runs = engine.take_runs();
            let queue = queue_waits(&batch.rows, start);
            let record = log.record(start, n, &runs, infer_ms, queue, false);
            if msg.send(Message::Batch(record)).is_err() {
                return;
            }
        }
        let out = match result {
            Ok(out) if out.len() == n * classes => out,
            other => {
                let reason = match other {
                    Err(e) => e.to_string(),
                    Ok(out) => format!(
                        "the engine returned {} scores for {n} images of {classes} classes",
                        out.len()
                    ),
                };
                let _ = msg.send(Message::Fatal(reason));
                assembler.close();
                return;
            }
        };
        for (row, v) in out.chunks_exact(classes).zip(batch.rows) {
            // A row its writer gave up on is padding.
            let Some(v) = v else { continue };
            let p = match try_decode_row(row, kind, 5) {
                Ok(p) => p,
                Err(e) => {
                    let failed = Message::Failed {
                        seq: v.meta.seq,
                        scenario: v.scenario,
                        variants: v.meta.variants,
                        reason: format!(
                            "frame {}, scenario {}: {}",
                            v.meta.id,
                            keys[v.scenario],
                            e.in_model(&model.path)
                        ),
                    };
                    if msg.send(failed).is_err() {
                        return;
                    }
                    continue;
                }
            };
            let truth = v.meta.truth.map(|t| t.0);
            let (pred, hit5) = class_map.score(&p.top, truth);
            let mut timings = Timings::new();
            timings.set(Stage::Decode, v.meta.decode_ms);
            if let Some(ms) = v.meta.mask_ms {
                timings.set(Stage::Mask, ms);
            }
            timings.set(Stage::Wait, v.meta.wait_ms);
            timings.set(Stage::Scenario, v.scenario_ms);
            timings.set(Stage::Preprocess, v.preprocess_ms);
            timings.set(
                Stage::Queue,
                start.duration_since(v.queued).as_secs_f64() * 1e3,
            );
            timings.set(Stage::Infer, infer_ms);
            timings.set(Stage::Total, ms(v.meta.captured));
            let record = Record {
                format: crate::contract::Format,
                frame: v.meta.id.clone(),
                seq: Some(v.meta.seq),
                scenario: keys[v.scenario].clone(),
                truth,
                pred,
                hit5,
                top5: p.top,
                prob: p.prob,
                ms: timings,
                boxes: v.boxes,
                groups: v.meta.groups.clone(),
            };
            let done = Message::Done {
                seq: v.meta.seq,
                scenario: v.scenario,
                variants: v.meta.variants,
                captured: v.meta.captured,
                record,
            };
            if msg.send(done).is_err() {
                return;
            }
        }
    }
}
