//! The streaming pipeline: threads joined by channels, in one direction.
//!
//! ```text
//! source ─admission─► workers ×N ──rows──► batch buffers ─► engine ─records─► collector (caller's thread)
//!          (1 frame     (a frame's variants    (written in    (fixed    (in source order, per frame)
//!           waiting)     as tasks on all        place)         shapes)
//!                        workers)
//! ```
//!
//! - **Admission** (`admission.rs`): the source thread hands frames over one at a time. A live
//!   source keeps at most one frame waiting, the newest ([`DropPolicy`]), and never waits itself;
//!   an offline source waits (back-pressure) with up to `[pipeline] queue` frames read ahead. A
//!   sharded or resumed run ([`Selection`]) hands over only its own unfinished frames; the others
//!   keep their positions and are passed over unread where the source can, else read for the
//!   background pool only.
//! - **Work** (`work.rs`): a worker takes a new frame only when no variant task of an earlier frame
//!   is waiting, prepares it (the model view and regions, once), and queues one task per scheduled
//!   scenario, which every worker then takes, oldest frame first. So a frame's variants spread over
//!   all workers, the frames of a stream follow each other, and a frame is started only when the
//!   workers can start on it: work in flight is bounded in time, not in frames. The time from
//!   capture to that start is the `wait` stage.
//! - **Assembly** ([`assembly`]): each variant's tensor is written straight into its row of a
//!   reusable batch buffer; a full buffer (or one whose `max_wait_ms` is up) goes to the engine.
//! - **Engine** (`infer.rs`): runs the buffer in place at the engine's fixed batch sizes
//!   ([`crate::engine::shapes`]), decodes the rows and sends the records on (a row that cannot be
//!   scored, NaN/inf or "probabilities" that are not, as a failed variant).
//! - **Collector** (`collect.rs`, on the caller's thread): re-orders completions into source
//!   order, stamps each record's `age` (capture → written) and hands each complete frame to the
//!   sink at once.
//!
//! Randomness is keyed per (seed, frame id, scenario), and the collector releases frames in source
//! order, so the records of an offline run do not depend on the number of workers or on batch
//! composition (up to the engine's own arithmetic, which is per image on the CPU).

mod assembly;
pub(crate) mod config;

mod admission;
mod collect;
mod gpu;
mod infer;
mod reader;
#[cfg(test)]
mod tests;
mod work;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded};

use crate::scenario::ScenarioStage;
use crate::scenario::pool::{pool_maker, pool_whole_maker};
pub use config::{DropPolicy, PipelineConfig};
pub use reader::GRACE as READ_GRACE;

use crate::classmap::ClassMap;
use crate::engine::Engine;
use crate::frame::Truth;
use crate::metrics::Record;
use crate::model::ModelDesc;
use crate::report::flips::FlipKeeper;
use crate::scenario::schedule::Schedule;
use crate::scenario::{BackgroundPool, Plan};
use crate::source::{LostCauses, Source};

/// Everything a pipeline run needs.
pub struct PipelineInputs {
    /// Frames.
    pub source: Box<dyn Source>,
    /// Scenarios applied to every frame, `clean` first.
    pub plan: Plan,
    /// Which of the plan's scenarios each frame is evaluated under, built for `plan` (see
    /// [`crate::scenario::schedule::Spread::schedule`]).
    pub schedule: Schedule,
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
    /// Keeps the most-flipped frames' thumbnails for the HTML report: workers offer each frame's
    /// image at the scenario stage (the sink settles them); `None` keeps nothing.
    pub flips: Option<Arc<FlipKeeper>>,
    /// The GPU that makes the variants of the scenarios it has kernels for
    /// (`crate::gpu::scenarios::on_gpu`); `None` = every variant on the CPU workers.
    pub gpu: Option<Arc<crate::gpu::Device>>,
    /// Which frames this run evaluates (a shard, a resumed run); `None` = every frame.
    pub select: Option<Selection>,
    /// Rounds of every batch size the engine thread runs before its first batch
    /// ([`crate::engine::EngineConfig::resolved_thread_warmup`]).
    pub engine_thread_warmup: usize,
}

/// Which of the source's frames a run evaluates: its shard's (docs/deploy.md#how-frames-are-split)
/// that have no complete records yet (a resumed run, docs/deploy.md#resume). The others keep
/// their positions (`seq`) and are passed over unread, unless something must see them: the
/// background pool (every frame, whoever evaluates it), the post passes' keeper (this shard's
/// finished frames, `read_done`; other shards' frames, `read_others`, for its pool of backgrounds).
#[derive(Clone, Default)]
pub struct Selection {
    /// This run's shard; `None` = the whole source.
    pub(crate) shard: Option<crate::shard::Shard>,
    /// Ids of the frames whose records are complete already.
    pub(crate) done: Arc<std::collections::HashSet<String>>,
    /// Other shards' frames are read (for a keeper's pool of backgrounds).
    pub(crate) read_others: bool,
    /// Finished frames are read (for the post passes' keeper).
    pub(crate) read_done: bool,
}

impl Selection {
    /// Whether the frame with this id is this shard's.
    fn owns(&self, id: &str) -> bool {
        self.shard.is_none_or(|s| s.owns(id))
    }

    /// Whether this run evaluates the frame with this id.
    fn evaluates(&self, id: &str) -> bool {
        self.owns(id) && !self.done.contains(id)
    }

    /// Whether an unreadable item is this run's to count as skipped: the shard of the frame id
    /// the source gave it, else of its position (`#<seq>`, the same in every shard). Never one of
    /// the finished frames.
    fn counts_error(&self, e: &crate::source::SourceError, seq: u64) -> bool {
        match &e.frame {
            Some(id) => self.evaluates(id),
            None => self.owns(&format!("#{seq}")),
        }
    }

    /// The ids the source must read: the ones evaluated, and the others something must see
    /// (`pool`: the pipeline's background pool sees every frame).
    fn filter(&self, pool: bool) -> crate::source::ItemFilter {
        let me = self.clone();
        Arc::new(move |id: &str| {
            let owns = me.owns(id);
            match (owns, me.done.contains(id)) {
                (true, false) => true,
                (true, true) => pool || me.read_done,
                (false, _) => pool || me.read_others,
            }
        })
    }
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
    /// A live source's frame dropped unevaluated because the workers were busy (already counted
    /// in [`Outcome::frames_dropped`]; see [`DropPolicy`]).
    Dropped,
    /// The source lost this many more frames before robustream saw them ([`Source::lost`];
    /// already counted in [`Outcome::frames_lost`]), and its cumulative counts by cause since the
    /// start ([`Source::lost_causes`]).
    Lost(u64, LostCauses),
    /// This many source items, in order, are not this run's to evaluate (another shard's, or
    /// finished before a resume; [`Selection`]). No counts.
    Passed(u64),
    /// Nothing happened for [`TICK`] (a camera reconnecting, a stalled stream, a slow plan): a
    /// chance to refresh live outputs (the terminal view's clock, interim summaries). No counts.
    Tick,
    /// The engine ran a batch, or a warm-up round of one size on its thread (`batches.csv`),
    /// passed on as it happens, out of source order. No counts.
    Batch(crate::metrics::batches::BatchRecord),
}

/// Why the sink (the caller's taker of [`Event`]s) refused an event: the run ends as failed
/// ([`EndReason::Failed`] with this error's line).
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// An output of the run could not be written (the records file, with the frame and the I/O
    /// error, and what became of the part written).
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
}

/// How long the collector waits for a message before it hands the sink an [`Event::Tick`].
const TICK: Duration = Duration::from_millis(250);

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

/// Counts of a finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Frames decoded and evaluated.
    pub frames_read: u64,
    /// Source items skipped as unreadable.
    pub(crate) frames_skipped: u64,
    /// Frames of a live source dropped at admission (0 for offline sources).
    pub frames_dropped: u64,
    /// Frames the source lost before robustream saw them ([`Source::lost`]).
    pub frames_lost: u64,
    /// `frames_lost` by cause ([`Source::lost_causes`]).
    pub frames_lost_causes: LostCauses,
    /// Variants whose scenario failed.
    pub(crate) variants_failed: u64,
    /// Why the run ended.
    pub end: EndReason,
    /// The source's own report at the end ([`Source::report`]).
    pub(crate) source_report: Option<serde_json::Value>,
}

impl Outcome {
    fn failed(reason: String) -> Self {
        Self {
            frames_read: 0,
            frames_skipped: 0,
            frames_dropped: 0,
            frames_lost: 0,
            frames_lost_causes: Vec::new(),
            variants_failed: 0,
            end: EndReason::Failed(reason),
            source_report: None,
        }
    }
}

/// What every stage knows of an admitted frame.
struct FrameMeta {
    seq: u64,
    /// Variants the collector waits for: the scheduled scenarios, or 1 for a stored variant.
    variants: usize,
    id: String,
    truth: Option<Truth>,
    captured: Instant,
    decode_ms: f64,
    mask_ms: Option<f64>,
    /// Capture → a worker started on it (the `wait` stage).
    wait_ms: f64,
    /// The frame's groups, on each of its records (`Record::groups`).
    groups: crate::frame::Groups,
}

/// What the stages tell the collector.
enum Message {
    Skipped {
        seq: u64,
        reason: String,
    },
    Dropped {
        seq: u64,
    },
    /// More frames lost by the source (not tied to a position: passed on at once), and the
    /// cumulative counts by cause.
    Lost(u64, LostCauses),
    /// Items `seq..seq + n` are not evaluated by this run ([`Selection`]).
    Passed {
        seq: u64,
        n: u64,
    },
    Failed {
        seq: u64,
        scenario: usize,
        variants: usize,
        reason: String,
    },
    Done {
        seq: u64,
        scenario: usize,
        variants: usize,
        captured: Instant,
        record: Record,
    },
    Fatal(String),
    /// A batch the engine ran (passed on at once).
    Batch(crate::metrics::batches::BatchRecord),
}

/// Flags and counters the stages share.
struct Shared<'a> {
    /// The caller's stop flag (Ctrl-C, `--duration`).
    stop: &'a AtomicBool,
    /// A fatal error: every stage winds down.
    fatal: AtomicBool,
    /// The source thread has returned.
    source_done: AtomicBool,
    /// Frames handed to admission and not yet turned into tasks (waiting, or being prepared).
    unprepared: AtomicUsize,
    /// Workers still running; the last one out closes the batch assembly.
    workers_left: AtomicUsize,
}

impl<'a> Shared<'a> {
    /// Nothing raised, nothing waiting, `workers` workers running.
    fn new(stop: &'a AtomicBool, workers: usize) -> Self {
        Self {
            stop,
            fatal: AtomicBool::new(false),
            source_done: AtomicBool::new(false),
            unprepared: AtomicUsize::new(0),
            workers_left: AtomicUsize::new(workers),
        }
    }

    fn halted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.fatal.load(Ordering::Relaxed)
    }
}

/// How often the pipeline passes a raised stop flag on to the source ([`Source::set_stop`]).
const STOP_POLL: Duration = Duration::from_millis(50);

/// Spawns a named scoped thread (names show in `top -H`, `perf` and debuggers). A thread the OS
/// refuses to start is a fatal condition of the process, as `std::thread::scope`'s own spawn
/// treats it.
fn spawn<'scope, 'env, T: Send + 'scope>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    name: &str,
    f: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn_scoped(s, f)
        .expect("the OS refused to start a pipeline thread")
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Runs the pipeline to the end of the source, the limit, the stop flag, or a fatal error, calling
/// `sink` on the caller's thread for every event in source order. A sink error stops the run.
pub fn run(
    inputs: PipelineInputs,
    stop: &AtomicBool,
    sink: &mut dyn FnMut(Event) -> Result<(), SinkError>,
) -> Outcome {
    let PipelineInputs {
        source,
        plan,
        schedule,
        model,
        mut engine,
        class_map,
        seed,
        stage,
        config,
        strict,
        limit,
        flips,
        gpu,
        select,
        engine_thread_warmup,
    } = inputs;
    let clock = Instant::now();
    let workers = worker_count(&config);
    let live = source.is_live();
    // A live source keeps one frame waiting (admission.rs); an offline one reads ahead.
    let (frame_tx, frame_rx) = bounded(if live { 1 } else { config.queue.max(1) });
    let (task_tx, task_rx) = unbounded();
    // The collector drains this at once; the work behind it is bounded upstream.
    let (msg_tx, msg_rx) = unbounded();
    let pool = background_pool(&plan, &model, config.pool, seed, stage);
    let assembler = assembler(engine.as_mut(), &model, &config);
    let shared = Shared::new(stop, workers);
    // The source's copy of the stop flag (Source::set_stop): raised within STOP_POLL of `stop` or
    // a fatal error, so a source blocked on a camera or a network stream returns.
    let source_stop = Arc::new(AtomicBool::new(false));
    // The source's calls run on a thread of their own (reader.rs): a read blocked in the kernel
    // (a FIFO nobody writes to) is left behind `reader::GRACE` after the stop instead of holding
    // the run.
    let mut source = match reader::Reader::spawn(source, source_stop.clone()) {
        Ok(r) => r,
        Err(e) => return Outcome::failed(format!("cannot start the source's reader thread ({e})")),
    };
    let keys: Vec<String> = plan.keys().iter().map(|k| k.to_string()).collect();

    let setup = work::Setup {
        plan: &plan,
        schedule: &schedule,
        model: &model,
        stage,
        seed,
        drop_on_stop: live,
        flips: flips.as_deref(),
        gpu: gpu.as_ref(),
        assembler: &assembler,
        shared: &shared,
    };
    let (source_end, collected) = std::thread::scope(|s| {
        let shared = &shared;
        let setup = &setup;
        spawn(s, "rs-stop", move || relay_stop(shared, &source_stop));
        let admission = admission::Admission {
            tx: frame_tx,
            rx: frame_rx.clone(),
            policy: if live { config.drop } else { DropPolicy::Never },
            msg: msg_tx.clone(),
        };
        for w in 0..workers {
            let queues = work::Queues {
                frames: frame_rx.clone(),
                tasks: (task_tx.clone(), task_rx.clone()),
                msg: msg_tx.clone(),
            };
            spawn(s, &format!("rs-worker-{w}"), move || {
                work::run(setup, queues)
            });
        }
        drop((frame_rx, task_tx, task_rx));
        let engine_msg = msg_tx.clone();
        let (assembler, keys, class_map, model) = (&assembler, &keys, &class_map, &model);
        spawn(s, "rs-engine", move || {
            let context = infer::Context {
                msg: &engine_msg,
                keys,
                class_map,
                model,
                clock,
                warmup_rounds: engine_thread_warmup,
            };
            infer::run(engine.as_mut(), assembler, &context)
        });
        // The source starts last, so the workers already wait for its first frames.
        let source_thread = spawn(s, "rs-source", move || {
            admission::read(
                &mut source,
                pool,
                limit,
                select.as_ref(),
                &admission,
                shared,
            )
        });
        drop(msg_tx);
        let collected = collect::run(&msg_rx, plan.len(), strict, &shared.fatal, sink);
        let source_end = source_thread.join().unwrap_or_default();
        (source_end, collected)
    });
    outcome(stop, collected, source_end)
}

/// The run's counts and why it ended: as the collector ended it, else [`end_of_source`].
fn outcome(
    stop: &AtomicBool,
    collected: collect::Collected,
    source_end: admission::SourceEnd,
) -> Outcome {
    let end = match collected.end {
        Some(end) => end,
        None => end_of_source(stop, &source_end),
    };
    Outcome {
        frames_read: source_end.read,
        frames_skipped: collected.skipped,
        frames_dropped: collected.dropped,
        frames_lost: source_end.lost,
        frames_lost_causes: source_end.lost_causes,
        variants_failed: collected.failed,
        end,
        source_report: source_end.report,
    }
}

/// The `rs-stop` thread: raises the source's copy of the stop flag within [`STOP_POLL`] of the
/// caller's stop or a fatal error, until the source thread has returned.
fn relay_stop(shared: &Shared, source_stop: &AtomicBool) {
    while !shared.source_done.load(Ordering::Relaxed) {
        if shared.halted() {
            source_stop.store(true, Ordering::Relaxed);
            break;
        }
        std::thread::sleep(STOP_POLL);
    }
}

/// Worker threads: `[pipeline] workers`, or one per core for 0.
fn worker_count(config: &PipelineConfig) -> usize {
    if config.workers == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        config.workers
    }
}

/// The background pool (scenario::pool) of `pool` backgrounds per class, kept only when a scenario
/// of the plan draws from it.
fn background_pool(
    plan: &Plan,
    model: &ModelDesc,
    pool: usize,
    seed: u64,
    stage: ScenarioStage,
) -> Option<BackgroundPool> {
    plan.scenarios().iter().any(|s| s.uses_pool()).then(|| {
        let pool = BackgroundPool::new(pool, seed, pool_maker(model, stage));
        match pool_whole_maker(model, stage) {
            Some(whole) => pool.with_whole_maker(whole),
            None => pool,
        }
    })
}

/// Batch assembly over reusable buffers with room for the engine's largest batch size (its
/// padding), filled up to `[pipeline] max_batch` or for `max_wait_ms`.
fn assembler<M>(
    engine: &mut dyn Engine,
    model: &ModelDesc,
    config: &PipelineConfig,
) -> assembly::Assembler<M> {
    let per = model.input_len();
    let max_batch = config.max_batch.max(1);
    let rows = engine
        .shapes()
        .map_or(max_batch, |s| s.max().max(max_batch));
    let buffers = (0..assembly::BUFFERS)
        .map(|_| engine.batch_buffer(rows, per))
        .collect();
    assembly::Assembler::new(
        buffers,
        max_batch,
        Duration::from_millis(config.max_wait_ms),
    )
}

/// Why the run ended when the collector did not end it: the stop flag, the limit, the source's
/// own error, or the end of the source.
fn end_of_source(stop: &AtomicBool, source_end: &admission::SourceEnd) -> EndReason {
    if stop.load(Ordering::Relaxed) {
        EndReason::Interrupted
    } else if source_end.hit_limit {
        EndReason::Limit
    } else if let Some(e) = &source_end.error {
        EndReason::Failed(e.clone())
    } else {
        EndReason::Completed
    }
}
