//! The streaming pipeline: threads joined by bounded channels, in one direction.
//!
//! ```text
//! source ─frames─► workers ×N ─variants─► batcher+engine ─records─► collector (caller's thread)
//!            (scenario → model view → tensor)            (in source order, per frame)
//! ```
//!
//! Offline sources use back-pressure: every queue is bounded and every send blocks, so nothing is
//! dropped and memory stays flat. Randomness is keyed per (seed, frame id, scenario), and the collector
//! re-orders finished frames into source order, so the records of a run do not depend on the number of
//! workers or on batch composition (up to the engine's own arithmetic).

pub mod batcher;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError, bounded};

use crate::config::{DropPolicy, PipelineConfig, ScenarioStage};
use crate::engine::model::ModelDesc;
use crate::engine::{Engine, decode_row};
use image::{GrayImage, RgbImage};

use crate::frame::{BBox, Frame, Regions, Truth};
use crate::metrics::Record;
use crate::metrics::classmap::ClassMap;
use crate::preprocess::{ModelView, Normalizer};
use crate::scenario::background::pool_background;
use crate::scenario::pool::BackgroundMaker;
use crate::scenario::schedule::Schedule;
use crate::scenario::{BackgroundPool, Plan, PoolView, RngKey, ScenarioInput};
use crate::source::Source;
use crate::source::regions::stage_boxes;

/// Everything a pipeline run needs.
pub struct PipelineInputs {
    /// Frames.
    pub source: Box<dyn Source>,
    /// Scenarios applied to every frame, `clean` first.
    pub plan: Plan,
    /// The model's description (input geometry, normalisation, output kind).
    pub model: ModelDesc,
    /// The engine running the model.
    pub engine: Box<dyn Engine>,
    /// Model classes → dataset labels.
    pub class_map: ClassMap,
    /// Run seed.
    pub seed: u64,
    /// Where scenarios are applied.
    pub stage: ScenarioStage,
    /// Threads, batching, queues.
    pub config: PipelineConfig,
    /// Stop at the first bad input.
    pub strict: bool,
    /// Stop after this many source items.
    pub limit: Option<u64>,
}

/// What the pipeline tells its caller, in source order.
#[derive(Debug)]
pub enum Event {
    /// All variants of one frame, in plan order (failed variants left out).
    Frame(Vec<Record>),
    /// A source item that could not be read (already counted), with the one-line reason.
    Skipped(String),
    /// A scenario that failed on a frame (already counted), with the one-line reason.
    VariantFailed(String),
    /// A live source's frame dropped unevaluated because the pipeline was behind (already counted
    /// in [`Outcome::frames_dropped`]; see [`crate::config::DropPolicy`]).
    Dropped,
    /// The source lost this many more frames before robustream saw them ([`Source::lost`];
    /// already counted in [`Outcome::frames_lost`]).
    Lost(u64),
    /// Nothing happened for [`TICK`] (a camera reconnecting, a stalled stream, a slow plan): a
    /// chance to refresh live outputs (the terminal view's clock, interim summaries). No counts.
    Tick,
}

/// How long the collector waits for a message before it hands the sink an [`Event::Tick`].
pub const TICK: Duration = Duration::from_millis(250);

/// Why a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndReason {
    /// The source was exhausted.
    Completed,
    /// `--limit` was reached.
    Limit,
    /// The stop flag was raised (Ctrl-C).
    Interrupted,
    /// `--duration` was reached.
    Duration,
    /// A fatal error (strict mode, engine failure, sink failure).
    Failed(String),
}

impl EndReason {
    /// Short word for reports.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Completed => "completed",
            Self::Limit => "limit",
            Self::Interrupted => "interrupted",
            Self::Duration => "duration",
            Self::Failed(_) => "failed",
        }
    }
}

/// Counts of a finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Frames decoded and evaluated.
    pub frames_read: u64,
    /// Source items skipped as unreadable.
    pub frames_skipped: u64,
    /// Frames dropped by a live-source policy (0 for offline sources).
    pub frames_dropped: u64,
    /// Frames the source lost before robustream saw them ([`Source::lost`]).
    pub frames_lost: u64,
    /// Variants whose scenario failed.
    pub variants_failed: u64,
    /// Why the run ended.
    pub end: EndReason,
    /// The source's own report at the end ([`Source::report`]).
    pub source_report: Option<serde_json::Value>,
}

struct FrameMeta {
    seq: u64,
    /// Variants the collector waits for: the plan's length, or 1 for a stored variant.
    variants: usize,
    id: String,
    truth: Option<Truth>,
    captured: Instant,
    decode_ms: f64,
    mask_ms: Option<f64>,
}

struct Variant {
    meta: Arc<FrameMeta>,
    scenario: usize,
    tensor: Vec<f32>,
    scenario_ms: f64,
    preprocess_ms: f64,
    queued: Instant,
    /// The frame's boxes at the scenario stage, normalised xyxy, on the `clean` variant only
    /// (`Record::boxes`, for the centre and size scores).
    boxes: Option<Vec<[f32; 4]>>,
}

enum Message {
    Skipped {
        seq: u64,
        reason: String,
    },
    Dropped {
        seq: u64,
    },
    /// More frames lost by the source (not tied to a position: passed on at once).
    Lost(u64),
    Failed {
        meta: Arc<FrameMeta>,
        scenario: usize,
        reason: String,
    },
    Done {
        seq: u64,
        scenario: usize,
        variants: usize,
        record: Record,
    },
    Fatal(String),
}

/// How often the pipeline passes a raised stop flag on to the source ([`Source::set_stop`]).
const STOP_POLL: Duration = Duration::from_millis(50);

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The model's view of a stored variant (see [`Frame::variant`]), following the ImageNet-C
/// leaderboard's `test.py` (REFERENCE §3): a stored corrupted image already at the model's input size
/// (`input` = width, height) is used as it is, since `test.py` only centre-crops 224 from the 224²
/// JPEGs (the identity); stored `clean` frames and images of any other size get the model's view
/// (resize + crop), as `test.py` loads clean images. (augmix instead re-applies Resize(256) +
/// CenterCrop(224) to the corrupted JPEGs; we follow the leaderboard.)
fn stored_view(
    image: image::RgbImage,
    key: &str,
    input: (u32, u32),
    view: &mut ModelView,
) -> image::RgbImage {
    if key != crate::metrics::CLEAN && image.dimensions() == input {
        image
    } else {
        view.image(&image)
    }
}

/// Runs the pipeline to the end of the source, the limit, the stop flag, or a fatal error, calling
/// `sink` on the caller's thread for every event in source order. A sink error stops the run.
pub fn run(
    inputs: PipelineInputs,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(Event) -> Result<(), String>,
) -> Outcome {
    let PipelineInputs {
        mut source,
        plan,
        model,
        mut engine,
        class_map,
        seed,
        stage,
        config,
        strict,
        limit,
    } = inputs;
    let workers = if config.workers == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        config.workers
    };
    let schedule = match Schedule::new(config.schedule, config.per_frame, plan.len(), seed) {
        Ok(s) => s,
        Err(e) => {
            return Outcome {
                frames_read: 0,
                frames_skipped: 0,
                frames_dropped: 0,
                frames_lost: 0,
                variants_failed: 0,
                end: EndReason::Failed(e),
                source_report: None,
            };
        }
    };
    let fatal = AtomicBool::new(false);
    let keys: Vec<String> = plan.keys().iter().map(|k| k.to_string()).collect();
    let (frame_tx, frame_rx) = bounded::<(Frame, Option<Arc<PoolView>>)>(config.queue);
    // A live source never waits for the pipeline: when the frame queue is full, a frame is dropped
    // by the policy (config::DropPolicy) and counted.
    let drop_policy = match source.is_live() {
        true => config.drop,
        false => DropPolicy::Never,
    };
    // The background pool (scenario::pool), kept only when a scenario of the plan draws from it.
    let mut pool = plan
        .scenarios()
        .iter()
        .any(|s| s.uses_pool())
        .then(|| BackgroundPool::new(config.pool, seed, pool_maker(&model, stage)));
    let (variant_tx, variant_rx) = bounded::<Variant>(config.queue.max(config.max_batch));
    let (msg_tx, msg_rx) = bounded::<Message>(config.queue * plan.len().max(1));
    let mut limit_hit = false;

    // The source's copy of the stop flag (Source::set_stop): raised within STOP_POLL of `stop` or
    // a fatal error, so a source blocked on a camera or a network stream returns.
    let source_stop = Arc::new(AtomicBool::new(false));
    source.set_stop(source_stop.clone());
    let source_done = AtomicBool::new(false);

    let outcome = std::thread::scope(|s| {
        let (fatal_ref, done_ref, mirror) = (&fatal, &source_done, source_stop.clone());
        s.spawn(move || {
            while !done_ref.load(Ordering::Relaxed) {
                if stop.load(Ordering::Relaxed) || fatal_ref.load(Ordering::Relaxed) {
                    mirror.store(true, Ordering::Relaxed);
                    break;
                }
                std::thread::sleep(STOP_POLL);
            }
        });
        // Source.
        let src_msg = msg_tx.clone();
        let src_rx = frame_rx.clone();
        let source_thread = s.spawn(move || {
            let mut seq = 0u64;
            let mut read = 0u64;
            let mut dropped = 0u64;
            let mut lost = 0u64;
            let mut hit_limit = false;
            'frames: while !stop.load(Ordering::Relaxed) && !fatal_ref.load(Ordering::Relaxed) {
                if limit.is_some_and(|l| seq >= l) {
                    hit_limit = true;
                    break;
                }
                let Some(item) = source.next_frame() else {
                    break;
                };
                let lost_now = source.lost();
                if lost_now > lost {
                    let msg = Message::Lost(lost_now - lost);
                    lost = lost_now;
                    if src_msg.send(msg).is_err() {
                        break;
                    }
                }
                match item {
                    Ok(mut frame) => {
                        frame.seq = seq;
                        read += 1;
                        // This frame sees the pool of the frames before it, then joins it.
                        let view = pool.as_mut().map(|p| {
                            let view = p.view();
                            p.offer(&frame);
                            view
                        });
                        let mut item = (frame, view);
                        if drop_policy == DropPolicy::Never {
                            if frame_tx.send(item).is_err() {
                                break;
                            }
                        } else {
                            // Full queue: drop the incoming frame, or make room by dropping the
                            // oldest queued one (workers may take frames meanwhile: retry).
                            loop {
                                match frame_tx.try_send(item) {
                                    Ok(()) => break,
                                    Err(TrySendError::Disconnected(_)) => break 'frames,
                                    Err(TrySendError::Full(back)) => {
                                        let victim = match drop_policy {
                                            DropPolicy::Newest => Some(back.0.seq),
                                            _ => src_rx.try_recv().ok().map(|(old, _)| old.seq),
                                        };
                                        if let Some(victim) = victim {
                                            dropped += 1;
                                            let msg = Message::Dropped { seq: victim };
                                            if src_msg.send(msg).is_err() {
                                                break 'frames;
                                            }
                                        }
                                        if drop_policy == DropPolicy::Newest {
                                            break;
                                        }
                                        item = back;
                                    }
                                }
                            }
                        }
                    }
                    Err(e) => {
                        if src_msg
                            .send(Message::Skipped {
                                seq,
                                reason: e.to_string(),
                            })
                            .is_err()
                        {
                            break;
                        }
                    }
                }
                seq += 1;
            }
            done_ref.store(true, Ordering::Relaxed);
            (read, dropped, hit_limit, source.report(), lost)
        });

        // Scenario + preprocess workers.
        for _ in 0..workers {
            let frame_rx: Receiver<(Frame, Option<Arc<PoolView>>)> = frame_rx.clone();
            let variant_tx: Sender<Variant> = variant_tx.clone();
            let msg_tx = msg_tx.clone();
            let plan = plan.clone();
            let schedule = &schedule;
            let mut view = ModelView::new(&model);
            let input_size = (model.input.width, model.input.height);
            let norm = Normalizer::new(&model);
            s.spawn(move || {
                for (frame, pool_view) in frame_rx.iter() {
                    // The plan indices this frame is evaluated under (all of them unless the
                    // stream is scheduled; scenario::schedule).
                    let chosen = match frame.variant {
                        Some(_) => Vec::new(),
                        None => schedule.indices(frame.seq, &frame.id),
                    };
                    let meta = Arc::new(FrameMeta {
                        seq: frame.seq,
                        variants: if frame.variant.is_some() {
                            1
                        } else {
                            chosen.len()
                        },
                        id: frame.id.clone(),
                        truth: frame.truth,
                        captured: frame.captured,
                        decode_ms: frame.decode_ms,
                        mask_ms: frame.mask_ms,
                    });
                    if let Some(key) = frame.variant.as_deref() {
                        // A stored variant: one variant under its own key, no scenario applied.
                        let Some(i) = plan.scenarios().iter().position(|s| s.key() == key) else {
                            let _ = msg_tx.send(Message::Fatal(format!(
                                "frame {}: stored variant `{key}` is not in the plan",
                                meta.id
                            )));
                            return;
                        };
                        let t = Instant::now();
                        let view_img = stored_view(frame.image, key, input_size, &mut view);
                        let v = Variant {
                            meta,
                            scenario: i,
                            tensor: norm.tensor(&view_img),
                            scenario_ms: 0.0,
                            preprocess_ms: ms(t),
                            queued: Instant::now(),
                            boxes: None,
                        };
                        if variant_tx.send(v).is_err() {
                            return;
                        }
                        continue;
                    }
                    let (base, base_mask, base_boxes, geometry_ms) = {
                        let t = Instant::now();
                        let (base, mask, boxes) = at_stage(&mut view, stage, &frame);
                        (base, mask, boxes, ms(t))
                    };
                    let input = ScenarioInput::new(&base)
                        .with_mask(base_mask.as_ref())
                        .with_boxes(&base_boxes)
                        .with_truth(meta.truth)
                        .with_pool(pool_view.as_deref());
                    for i in chosen {
                        let scenario = &plan.scenarios()[i];
                        let made = {
                            let t = Instant::now();
                            scenario
                                .apply(&input, RngKey::new(seed, &meta.id, scenario.rng_key()))
                                .map(|variant| {
                                    let scenario_ms = ms(t);
                                    let t = Instant::now();
                                    let view_img = match stage {
                                        ScenarioStage::ModelInput => variant,
                                        ScenarioStage::Native => view.image(&variant),
                                    };
                                    let tensor = norm.tensor(&view_img);
                                    let geometry = if i == 0 { geometry_ms } else { 0.0 };
                                    let is_clean = scenario.key() == crate::metrics::CLEAN;
                                    Variant {
                                        meta: meta.clone(),
                                        scenario: i,
                                        tensor,
                                        scenario_ms,
                                        preprocess_ms: ms(t) + geometry,
                                        queued: Instant::now(),
                                        boxes: (is_clean && !base_boxes.is_empty()).then(|| {
                                            crate::metrics::placement::normalised_boxes(
                                                &base_boxes,
                                                base.dimensions(),
                                            )
                                        }),
                                    }
                                })
                        };
                        let sent = match made {
                            Ok(v) => variant_tx.send(v).is_ok(),
                            Err(e) => {
                                let reason = format!("frame {}: {e}", meta.id);
                                let failed = Message::Failed {
                                    meta: meta.clone(),
                                    scenario: i,
                                    reason,
                                };
                                msg_tx.send(failed).is_ok()
                            }
                        };
                        if !sent {
                            return;
                        }
                    }
                }
            });
        }
        drop(frame_rx);
        drop(variant_tx);

        // Batcher + engine.
        let eng_msg = msg_tx.clone();
        let keys_ref = &keys;
        let class_map_ref = &class_map;
        let kind = model.output.kind;
        let classes = model.output.classes;
        s.spawn(move || {
            let mut batch = Vec::new();
            let mut input = Vec::new();
            let wait = Duration::from_millis(config.max_wait_ms);
            while batcher::next_batch(&variant_rx, config.max_batch, wait, &mut batch) {
                let start = Instant::now();
                input.clear();
                for v in &batch {
                    input.extend_from_slice(&v.tensor);
                }
                let t = Instant::now();
                let result = engine.infer(&input, batch.len());
                let infer_ms = ms(t);
                let out = match result {
                    Ok(out) => out,
                    Err(e) => {
                        let _ = eng_msg.send(Message::Fatal(e.to_string()));
                        return;
                    }
                };
                for (v, row) in batch.drain(..).zip(out.chunks_exact(classes)) {
                    let p = decode_row(row, kind, 5);
                    let truth = v.meta.truth.map(|t| t.0);
                    let (pred, hit5) = class_map_ref.score(&p.top, truth);
                    let mut timings = BTreeMap::new();
                    timings.insert("decode".to_string(), v.meta.decode_ms);
                    if let Some(ms) = v.meta.mask_ms {
                        timings.insert("mask".to_string(), ms);
                    }
                    timings.insert("scenario".to_string(), v.scenario_ms);
                    timings.insert("preprocess".to_string(), v.preprocess_ms);
                    timings.insert(
                        "queue".to_string(),
                        start.duration_since(v.queued).as_secs_f64() * 1e3,
                    );
                    timings.insert("infer".to_string(), infer_ms);
                    timings.insert("total".to_string(), ms(v.meta.captured));
                    let record = Record {
                        frame: v.meta.id.clone(),
                        scenario: keys_ref[v.scenario].clone(),
                        truth,
                        pred,
                        hit5,
                        top5: p.top,
                        prob: p.prob,
                        ms: timings,
                        boxes: v.boxes,
                    };
                    if eng_msg
                        .send(Message::Done {
                            seq: v.meta.seq,
                            scenario: v.scenario,
                            variants: v.meta.variants,
                            record,
                        })
                        .is_err()
                    {
                        return;
                    }
                }
            }
        });
        drop(msg_tx);

        // Collector on this thread: re-order into source order and hand each complete frame to the sink.
        let mut collector = Collector::new(plan.len());
        let mut end = None;
        let mut skipped = 0u64;
        let mut failed = 0u64;
        loop {
            let msg = match msg_rx.recv_timeout(TICK) {
                Ok(msg) => msg,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if end.is_none()
                        && let Err(e) = sink(Event::Tick)
                    {
                        end = Some(EndReason::Failed(e));
                        fatal.store(true, Ordering::Relaxed);
                    }
                    continue;
                }
            };
            if end.is_some() {
                continue; // draining after a fatal error so the other threads can finish
            }
            let events = match msg {
                Message::Fatal(e) => {
                    end = Some(EndReason::Failed(e));
                    fatal.store(true, Ordering::Relaxed);
                    continue;
                }
                Message::Skipped { seq, reason } => {
                    skipped += 1;
                    if strict {
                        end = Some(EndReason::Failed(format!("{reason} (--strict)")));
                        fatal.store(true, Ordering::Relaxed);
                        continue;
                    }
                    collector.skip(seq, reason)
                }
                Message::Dropped { seq } => collector.dropped(seq),
                Message::Lost(n) => vec![Event::Lost(n)],
                Message::Failed {
                    meta,
                    scenario,
                    reason,
                } => {
                    failed += 1;
                    if strict {
                        end = Some(EndReason::Failed(format!("{reason} (--strict)")));
                        fatal.store(true, Ordering::Relaxed);
                        continue;
                    }
                    collector.fail(meta.seq, scenario, meta.variants, reason)
                }
                Message::Done {
                    seq,
                    scenario,
                    variants,
                    record,
                } => collector.done(seq, scenario, variants, record),
            };
            for ev in events {
                if let Err(e) = sink(ev) {
                    end = Some(EndReason::Failed(e));
                    fatal.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        let (read, dropped, hit, report, lost) =
            source_thread.join().unwrap_or((0, 0, false, None, 0));
        limit_hit = hit;
        (read, skipped, (dropped, lost), failed, end, report)
    });
    let (
        frames_read,
        frames_skipped,
        (frames_dropped, frames_lost),
        variants_failed,
        end,
        source_report,
    ) = outcome;
    let end = end.unwrap_or(if stop.load(Ordering::Relaxed) {
        EndReason::Interrupted
    } else if limit_hit {
        EndReason::Limit
    } else {
        EndReason::Completed
    });
    Outcome {
        frames_read,
        frames_skipped,
        frames_dropped,
        frames_lost,
        variants_failed,
        end,
        source_report,
    }
}

/// Re-orders per-variant completions into whole frames in source order.
struct Collector {
    /// Slots per frame (the plan's length).
    variants: usize,
    next: u64,
    pending: BTreeMap<u64, Pending>,
}

enum Pending {
    Skipped(String),
    Dropped,
    Frame {
        slots: Vec<Option<Option<Record>>>,
        filled: usize,
        /// Variants this frame has (the plan's length, 1 for a stored variant).
        expected: usize,
        problems: Vec<String>,
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

    /// Frame `seq` was dropped before any variant was made.
    fn dropped(&mut self, seq: u64) -> Vec<Event> {
        self.pending.insert(seq, Pending::Dropped);
        self.release()
    }

    /// Variant `scenario` of frame `seq` (which has `expected` variants) failed.
    fn fail(&mut self, seq: u64, scenario: usize, expected: usize, reason: String) -> Vec<Event> {
        self.fill(seq, scenario, expected, None, Some(reason))
    }

    /// Variant `scenario` of frame `seq` (which has `expected` variants) is done.
    fn done(&mut self, seq: u64, scenario: usize, expected: usize, record: Record) -> Vec<Event> {
        self.fill(seq, scenario, expected, Some(record), None)
    }

    fn fill(
        &mut self,
        seq: u64,
        scenario: usize,
        expected: usize,
        record: Option<Record>,
        problem: Option<String>,
    ) -> Vec<Event> {
        let n = self.variants;
        let entry = self.pending.entry(seq).or_insert_with(|| Pending::Frame {
            slots: (0..n).map(|_| None).collect(),
            filled: 0,
            expected,
            problems: Vec::new(),
        });
        if let Pending::Frame {
            slots,
            filled,
            problems,
            ..
        } = entry
            && slots[scenario].is_none()
        {
            slots[scenario] = Some(record);
            *filled += 1;
            problems.extend(problem);
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
                Pending::Skipped(reason) => out.push(Event::Skipped(reason)),
                Pending::Dropped => out.push(Event::Dropped),
                Pending::Frame {
                    slots, problems, ..
                } => {
                    out.extend(problems.into_iter().map(Event::VariantFailed));
                    out.push(Event::Frame(
                        slots.into_iter().flatten().flatten().collect(),
                    ));
                }
            }
            self.next += 1;
        }
        out
    }
}

/// A frame's pixels, mask and boxes at the scenario stage: the model view (image, mask and boxes
/// through the same geometry) or the native frame. Boxes are the frame's own, else the mask's tight
/// box (`source::regions::stage_boxes`).
fn at_stage(
    view: &mut ModelView,
    stage: ScenarioStage,
    frame: &Frame,
) -> (RgbImage, Option<GrayImage>, Vec<BBox>) {
    at_stage_parts(view, stage, &frame.image, frame.regions.as_ref())
}

fn at_stage_parts(
    view: &mut ModelView,
    stage: ScenarioStage,
    image: &RgbImage,
    regions: Option<&Regions>,
) -> (RgbImage, Option<GrayImage>, Vec<BBox>) {
    let mask = regions.and_then(|r| r.mask.as_ref());
    let (base, base_mask) = match stage {
        ScenarioStage::ModelInput => (view.image(image), mask.map(|m| view.mask(m))),
        ScenarioStage::Native => (image.clone(), mask.cloned()),
    };
    let boxes = regions.map_or(&[][..], |r| &r.boxes);
    let base_boxes = stage_boxes(boxes, base_mask.as_ref(), |b| match stage {
        ScenarioStage::ModelInput => view.boxes(b, image.dimensions()),
        ScenarioStage::Native => b.to_vec(),
    });
    (base, base_mask, base_boxes)
}

/// The pool's background maker: the frame at the scenario stage, then IN-9's `only_bg_t`
/// (`scenario::background::pool_background`).
pub fn pool_maker(model: &ModelDesc, stage: ScenarioStage) -> Arc<BackgroundMaker> {
    let model = model.clone();
    Arc::new(move |image: &RgbImage, regions: &Regions| {
        let mut view = ModelView::new(&model);
        let (base, mask, boxes) = at_stage_parts(&mut view, stage, image, Some(regions));
        pool_background(&base, mask.as_ref(), &boxes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(frame: &str, scenario: &str) -> Record {
        Record {
            frame: frame.into(),
            scenario: scenario.into(),
            truth: None,
            pred: 0,
            top5: vec![0],
            prob: vec![1.0],
            hit5: None,
            ms: BTreeMap::new(),
            boxes: None,
        }
    }

    #[test]
    fn collector_releases_frames_in_source_order() {
        let mut c = Collector::new(2);
        assert!(c.done(1, 0, 2, rec("b", "clean")).is_empty());
        assert!(c.done(1, 1, 2, rec("b", "x")).is_empty()); // frame 1 complete but frame 0 pending
        assert!(c.done(0, 1, 2, rec("a", "x")).is_empty());
        let ev = c.done(0, 0, 2, rec("a", "clean"));
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
        let ev = c.done(1, 0, 2, rec("b", "clean"));
        assert!(matches!(&ev[..], [Event::VariantFailed(_), Event::Frame(r)] if r.len() == 1));
    }

    #[test]
    fn collector_releases_a_stored_variant_on_its_one_record() {
        // Stored variants (`Frame::variant`) have one record each, in any slot of the plan.
        let mut c = Collector::new(3);
        assert!(c.done(1, 2, 1, rec("b", "y")).is_empty());
        let ev = c.done(0, 1, 1, rec("a", "x"));
        let frames: Vec<&str> = ev
            .iter()
            .map(|e| match e {
                Event::Frame(r) if r.len() == 1 => r[0].frame.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(frames, ["a", "b"]);
        // A full frame after them still waits for all three.
        assert!(c.done(2, 0, 3, rec("c", "clean")).is_empty());
    }
}
