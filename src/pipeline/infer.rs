//! The engine thread: takes assembled batches, runs them in place
//! ([`crate::engine::Engine::infer_buffer`], at the engine's fixed batch sizes), hands the buffer
//! back at once so the workers can refill it while the rows are decoded, and sends one record per
//! row to the collector. A row the model's output cannot be scored from (NaN/inf, or "probabilities"
//! that are not: [`crate::engine::check_row`]) becomes a failed variant instead, counted and
//! skipped like a scenario that cannot apply (fatal under `--strict`).

use std::time::Instant;

use crossbeam_channel::Sender;

use super::assembly::Assembler;
use super::work::RowMeta;
use super::{Message, ms};
use crate::classmap::ClassMap;
use crate::engine::{Engine, try_decode_row};
use crate::metrics::{Record, Stage, Timings};
use crate::model::ModelDesc;

/// Runs batches until the assembly is closed and empty, or the engine fails (a fatal message; the
/// assembly is then closed so the workers stop).
pub(super) fn run(
    engine: &mut dyn Engine,
    assembler: &Assembler<RowMeta>,
    msg: &Sender<Message>,
    keys: &[String],
    class_map: &ClassMap,
    model: &ModelDesc,
) {
    let (kind, classes) = (model.output.kind, model.output.classes);
    while let Some(mut batch) = assembler.take() {
        let start = Instant::now();
        let result = engine.infer_buffer(&mut batch.buffer, batch.rows.len());
        let infer_ms = ms(start);
        assembler.release(batch.buffer);
        let n = batch.rows.len();
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
