//! Assembling and running one evaluation: config → model, class map, plan, source, engine → pipeline →
//! records.jsonl, summary.json and summary.md in the run directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::json;

use crate::app::config::RunConfig;
use crate::app::pipeline::{self, EndReason, Event, Outcome, PipelineInputs, SinkError};
use crate::app::run_lock::{LockError, RunLock};
use crate::classmap::ClassMap;
use crate::engine::Engine;
use crate::engine::onnx::OnnxEngine;
use crate::frame::LabelSpace;
use crate::key::CLEAN;
use crate::metrics::Metrics;
use crate::model::ModelDesc;
use crate::report::flips::FlipKeeper;
use crate::report::jsonl::RecordWriter;
use crate::report::progress::Progress;
use crate::report::run_block::{RunBlock, RunEnd, ShardEntry};
use crate::report::summary::{FrameCounts, Summary};
use crate::scenario::schedule::Schedule;
use crate::scenario::{Catalog, Plan};
use crate::source::{Input, Source, SourceConfig, SourceKind, imagenet_c, in9};

/// The result of a run: its summary (as written) and how it ended.
pub struct RunResult {
    /// The summary written to `summary.json`.
    pub summary: Summary,
    /// Counts and end reason.
    pub outcome: Outcome,
    /// The run directory.
    pub dir: PathBuf,
    /// Why `summary.json` / `summary.md` could not be written (a full disk), if so; the records
    /// are complete up to the last whole frame and `robustream report` rebuilds the summary.
    pub summary_error: Option<crate::report::ReportError>,
    /// The Prometheus endpoint, still serving the final figures (`[report] prometheus`), for the
    /// caller to keep up for `[report] linger` ([`crate::report::prometheus::Exporter::linger`])
    /// after it has shown the results.
    pub exporter: Option<crate::report::prometheus::Exporter>,
}

/// Loads the class map the run scores in: the config's `[dataset] class_map`, else the model
/// description's, else — for an IN-9 source scored by a 1000-class model — the built-in
/// ImageNet-1k → IN-9 map ([`in9::in_to_in9`],
/// docs/in9.md#classes-and-the-imagenet-mapping; unmapped classes count as wrong), else identity
/// over the model's labels (a 9-output IN-9 model scores in its own labels).
fn class_map(config: &RunConfig, model: &ModelDesc) -> anyhow::Result<ClassMap> {
    match config
        .dataset
        .class_map
        .as_ref()
        .or(model.class_map.as_ref())
    {
        Some(path) => Ok(ClassMap::load(path, model.output.classes)?),
        None if builtin_in9_map(Some(config.source.kind()), model.output.classes) => {
            let map = in9::in_to_in9()?;
            map.check_model_classes(model.output.classes)?;
            Ok(map)
        }
        None => Ok(ClassMap::identity(&model.labels)),
    }
}

/// Whether a run without a configured class map scores through the built-in ImageNet-1k → IN-9 map:
/// an IN-9 source and a model with 1000 outputs (docs/in9.md#classes-and-the-imagenet-mapping). A
/// model with any other number of outputs (e.g. a 9-class IN-9 model) scores in its own labels.
fn builtin_in9_map(kind: Option<SourceKind>, model_classes: usize) -> bool {
    kind == Some(SourceKind::In9) && model_classes == 1000
}

/// The plan items and the variations an IN-9 source reads
/// (docs/in9.md#variations-and-release-layout, docs/in9.md#evaluation-preprocessing):
/// - `variations` given in `[source]`: read as given; the plan is the config's `scenarios`, else the
///   keys of those variations ([`in9::plan_keys`]), or the `in9` group made on the fly from the masks
///   when that is `original` alone;
/// - no `variations`, no `scenarios`: every stored variation present is evaluated as stored under
///   its key (`original` → `clean`, `only_fg` → `background/only_fg`, …); a release holding only
///   `original` (+ `fg_mask`) gets the `in9` group, made on the fly;
/// - no `variations`, `scenarios` given: the stored variations whose key is in the plan are read
///   (plus `original`), so no stored image falls outside the plan; when that leaves `original`
///   alone, the plan's background scenarios are made on the fly from the masks.
fn in9_plan(
    root: &Path,
    variations: Option<&[String]>,
    scenarios: &[String],
    catalog: &Catalog,
) -> anyhow::Result<(Plan, Option<Vec<String>>)> {
    if let Some(v) = variations {
        let items = match scenarios.is_empty() {
            true => default_items(&in9::plan_keys(root, Some(v))),
            false => scenarios.to_vec(),
        };
        return Ok((Plan::from_items(&items, catalog)?, Some(v.to_vec())));
    }
    let stored = in9::plan_keys(root, None);
    let items = match scenarios.is_empty() {
        true => default_items(&stored),
        false => scenarios.to_vec(),
    };
    let plan = Plan::from_items(&items, catalog)?;
    let keys = plan.keys();
    let variations = in9::VARIATIONS
        .iter()
        .filter(|(v, k)| {
            (*v == "original" || keys.iter().any(|p| p == k)) && root.join(v).join("val").is_dir()
        })
        .map(|(v, _)| v.to_string())
        .collect::<Vec<_>>();
    // An empty list (no `original` either) lets the source say what is missing.
    Ok((plan, (!variations.is_empty()).then_some(variations)))
}

/// The default plan items of an IN-9 source reading the variations with these keys: the keys
/// themselves, or the `in9` group (made on the fly) when only `original` (`clean`) is read.
fn default_items(keys: &[&str]) -> Vec<String> {
    match keys {
        [] | [CLEAN] => vec!["in9".to_string()],
        _ => keys.iter().map(|k| k.to_string()).collect(),
    }
}

/// The run was stopped while its source was still opening, and the opening had not returned
/// [`pipeline::READ_GRACE`] after the stop: a read blocked in the system (a manifest that is a FIFO
/// nobody writes to, a folder on a stalled network mount). Nothing was evaluated.
#[derive(Debug, thiserror::Error)]
#[error("{}: stopped while opening the source; a read there had not returned", path.display())]
pub struct StoppedOpening {
    /// The source's path.
    pub path: PathBuf,
}

/// [`open_source`] on a thread of its own, waited for until it returns, or until `stop` has been
/// up for [`pipeline::READ_GRACE`] (then [`StoppedOpening`]; the thread is left behind, it ends
/// with the process).
fn open_source_or_stop(
    config: &RunConfig,
    labels: &LabelSpace,
    stop: &AtomicBool,
) -> anyhow::Result<(Plan, Box<dyn Source>)> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let (owned, labels_owned) = (config.clone(), labels.clone());
    std::thread::Builder::new()
        .name("rs-open".into())
        .spawn(move || {
            let _ = tx.send(open_source(&owned, &labels_owned));
        })
        .context("cannot start the thread that opens the source")?;
    let mut stopped_at: Option<Instant> = None;
    loop {
        match rx.recv_timeout(std::time::Duration::from_millis(20)) {
            Ok(opened) => return opened,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                anyhow::bail!(
                    "{}: opening the source failed without an error (a bug); please report it",
                    config.source.path.display()
                )
            }
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::Relaxed) {
                    let since = *stopped_at.get_or_insert_with(Instant::now);
                    if since.elapsed() >= pipeline::READ_GRACE {
                        return Err(StoppedOpening {
                            path: config.source.path.clone(),
                        }
                        .into());
                    }
                }
            }
        }
    }
}

/// The run's plan and its source, opened as the kind settled with the config: an `imagenet-c`
/// layout's plan is what it holds (or the config's items), an IN-9 release's too ([`in9_plan`]),
/// any other source takes the config's plan. `labels` is the run's label space.
fn open_source(config: &RunConfig, labels: &LabelSpace) -> anyhow::Result<(Plan, Box<dyn Source>)> {
    let catalog = Catalog::builtin().with_corruption_jpeg(config.jpeg_after_corruption);
    let root = &config.source.path;
    match &config.source.input {
        Input::ImagenetC { clean } => {
            // Stored variants: the plan is what the layout holds, or the config's items.
            let layout = imagenet_c::Layout::scan(root, clean.as_deref())?;
            let items = match config.scenarios.is_empty() {
                true => layout.keys(),
                false => config.scenarios.clone(),
            };
            let plan = Plan::from_items(&items, &catalog)?;
            let source = layout.open(&plan.keys(), labels)?;
            Ok((plan, Box::new(source) as Box<dyn Source>))
        }
        Input::In9 { variations } => {
            // Stored IN-9 variations: the plan is what the release holds (or the config's items).
            let (plan, variations) =
                in9_plan(root, variations.as_deref(), &config.scenarios, &catalog)?;
            let source_config = SourceConfig {
                input: Input::In9 { variations },
                ..config.source.clone()
            };
            Ok((plan, crate::source::open(&source_config, labels)?))
        }
        _ => {
            let plan = Plan::from_items(&config.scenarios, &catalog)?;
            Ok((plan, crate::source::open(&config.source, labels)?))
        }
    }
}

/// `v` rounded to 3 decimals (ms resolution for seconds).
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Runs an evaluation as configured. `stop` is the Ctrl-C flag: when raised, reading stops, frames in
/// flight finish, and the summary of what was done is written.
///
/// An error here means nothing was evaluated (a bad model, source, plan or engine; failures during
/// the run end it as `failed` with its summary instead): a run directory this call made itself is
/// then removed again, so that a mistyped command leaves no empty `runs/<name>-<time>` behind. A
/// directory that was there before is left as it was, apart from its `.lock`.
pub fn run(config: &RunConfig, stop: &AtomicBool, quiet: bool) -> anyhow::Result<RunResult> {
    let fresh = !config.out.exists();
    let result = run_in_dir(config, stop, quiet);
    if result.is_err() && fresh {
        // Everything in it was made by this call, and the lock was let go with `run_in_dir`.
        let _ = std::fs::remove_dir_all(&config.out);
    }
    result
}

fn run_in_dir(config: &RunConfig, stop: &AtomicBool, quiet: bool) -> anyhow::Result<RunResult> {
    // Held until this function returns (the summary written); the OS releases it if the process
    // dies.
    let _lock = lock_run_dir(config)?;
    let started = Instant::now();
    let started_unix = unix_now();
    let model = ModelDesc::load(&config.model)?;
    let class_map = class_map(config, &model)?;
    let (plan, source) = open_source_or_stop(config, class_map.classes(), stop)?;
    if source.is_live() && (config.shard.is_some() || config.resume) {
        anyhow::bail!(
            "{}: a live source cannot be {}; shard or resume runs over files, folders, manifests \
             or benchmark layouts (drop {})",
            source.describe(),
            if config.resume { "resumed" } else { "sharded" },
            if config.resume {
                "--resume"
            } else {
                "--shard and the scheduler's shard variables"
            }
        );
    }
    let (schedule, schedule_desc) = build_schedule(config, &plan, source.fps())?;
    let shaped = live_shapes(config, source.is_live(), &schedule);
    let (config, shape_note) = match &shaped {
        Some((settled, note)) => (settled, Some(note.as_str())),
        None => (config, None),
    };
    let keys: Vec<String> = plan.keys().iter().map(|k| k.to_string()).collect();
    let gpu = choose_gpu(config, &plan, quiet)?;
    let fingerprint =
        crate::app::fingerprint::of_run(config, &model, &keys, &schedule_desc, gpu.is_some());
    // A resumed run checks what it continues before it loads the engine or touches a file.
    let previous = match config.resume {
        true => crate::app::resume::Previous::read(
            &config.out,
            &fingerprint,
            config.shard.map(|(s, _)| s),
        )?,
        false => None,
    };
    let (engine, warmup) = start_engine(&model, config, stop)?;
    let runtime = engine.runtime().to_string();
    // The post passes (challenge, saliency) keep frames while the main pass reads them, and run on
    // its engine afterwards.
    let post_context = post_context(config);
    let (source, mut engine, harvest) =
        crate::app::post::attach(&post_context, &model, source, Box::new(engine));
    let described = Described {
        engine: match shape_note {
            Some(note) => format!("{}; {note}", engine.describe()),
            None => engine.describe(),
        },
        runtime,
        source: source.describe(),
        camera: source
            .camera()
            .map(|c| crate::report::fleet::camera_label(&c)),
        schedule: schedule_desc,
        plan: keys.clone(),
        scenarios_on: gpu.as_ref().map(|(_, on)| on.clone()),
    };
    let total = source
        .len_hint()
        .map(|n| config.limit.map_or(n as u64, |l| l.min(n as u64)))
        .filter(|_| config.shard.is_none());
    let mut info = started_info(config, &model, &described, &warmup, started_unix);
    if let Some((shard, from)) = config.shard {
        info.shard = Some(ShardEntry {
            index: shard.index,
            count: shard.count,
            from: from.as_str().to_string(),
        });
        if !quiet {
            eprintln!("shard: {shard} (from {})", from.as_str());
        }
    }
    info.fingerprint = Some(fingerprint);
    // After everything else `run` says: the `shard` label is read from `run.shard`.
    add_labels(&mut info, &config.report.labels, described.camera.clone());
    let flips = FlipKeeper::new(
        model.labels.names().to_vec(),
        class_map.classes().names().to_vec(),
    );
    let mut outputs = LiveOutputs::start(
        config, keys, total, quiet, started, &described, &info, flips, previous,
    )?;
    let select = (config.shard.is_some() || config.resume).then(|| {
        let keeper = harvest.as_ref().map(|h| {
            h.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .needs_every_frame()
        });
        pipeline::Selection {
            shard: config.shard.map(|(s, _)| s),
            done: outputs.done.clone(),
            read_others: keeper == Some(true),
            read_done: keeper.is_some(),
        }
    });
    let inputs = PipelineInputs {
        source,
        plan,
        schedule,
        model: model.clone(),
        engine: Box::new(engine.clone()),
        class_map: class_map.clone(),
        seed: config.seed,
        stage: config.stage,
        config: config.pipeline.clone(),
        strict: config.strict,
        limit: config.limit,
        flips: Some(outputs.flips.clone()),
        gpu: gpu.map(|(device, _)| device),
        select,
        engine_thread_warmup: config.engine.resolved_thread_warmup(),
    };
    // summary.json exists (with the fingerprint a resume checks) before the first frame.
    outputs.write_interim_summary();
    let pass = main_pass(config, inputs, stop, &mut outputs);
    let kept = outputs.kept_frames();
    let (metrics, mut exporter, flips, batches) = outputs.finish();
    let MainPass {
        mut outcome,
        cpu,
        rss,
    } = pass;
    outcome.frames_read += kept;
    let main_ok = matches!(
        outcome.end,
        EndReason::Completed | EndReason::Limit | EndReason::Duration
    );
    // A failed post pass fails the run, but what the main pass measured is still summarised.
    let post = match crate::app::post::PostPasses::run(
        &post_context,
        harvest.as_ref(),
        &mut engine,
        &model,
        &class_map,
        stop,
        quiet,
        main_ok,
    ) {
        Ok(post) => Some(post),
        Err(e) => {
            outcome.end = EndReason::Failed(crate::error_line(&e));
            None
        }
    };
    let mut run_info = ended_info(info, &outcome, rss, cpu, started);
    if !batches.is_empty() {
        run_info.batches = Some(batches.to_json());
    }
    let (summary, summary_error) = summarise(
        config,
        &metrics,
        exporter.as_mut(),
        run_info,
        &outcome,
        post,
        &flips,
    );
    Ok(RunResult {
        summary,
        outcome,
        dir: config.out.clone(),
        summary_error,
        exporter,
    })
}

/// The run's summary (its `run` part `run_info`), with the configured metric inputs and the post
/// passes' results, written to the run directory; the endpoint gets the final figures. A summary
/// that cannot be written is reported beside how the run ended (which may itself be a failed
/// records write), never instead of it: the error comes back with the summary.
fn summarise(
    config: &RunConfig,
    metrics: &Metrics,
    exporter: Option<&mut crate::report::prometheus::Exporter>,
    run_info: RunBlock,
    outcome: &Outcome,
    post: Option<crate::app::post::PostPasses>,
    flips: &FlipKeeper,
) -> (Summary, Option<crate::report::ReportError>) {
    let mut frames = FrameCounts {
        read: outcome.frames_read,
        skipped: outcome.frames_skipped,
        dropped: outcome.frames_dropped,
        lost: outcome.frames_lost,
        ..FrameCounts::default()
    };
    frames.set_lost_causes(&outcome.frames_lost_causes);
    if let Some(e) = exporter {
        e.update(metrics, &frames, true);
    }
    let mut summary = Summary::from_metrics(metrics, run_info, frames);
    if let Some(inner) = &config.metrics.ximagenet_inner {
        summary.set_ximagenet_inner(inner);
    }
    if let Some(table) = &config.metrics.ce_baseline {
        summary.set_ce_baseline(table);
    }
    if let Some(post) = post {
        post.apply(&mut summary);
    }
    let summary_error =
        crate::report::write_run_report(&config.out, &summary, metrics, Some(flips)).err();
    (summary, summary_error)
}

/// One run writes a run directory at a time ([`crate::app::run_lock`]): a second one fails here, before
/// any work. Where the file system cannot lock, the run goes on with a warning (`None`).
fn lock_run_dir(config: &RunConfig) -> anyhow::Result<Option<RunLock>> {
    match RunLock::acquire(&config.out) {
        Ok(lock) => Ok(Some(lock)),
        Err(e @ LockError::Unsupported { .. }) => {
            eprintln!(
                "warning: {e}; the run goes on, but another run writing this directory would not \
                 be noticed"
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Seconds since the Unix epoch (0 on a clock set before it).
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The batch shapes of a live source (`[engine] live_shapes`, docs/gpu.md#live-shapes): under the
/// `plan` policy, unless `[engine] batch_sizes` was given, one size ([`plan_size`]) for batches of
/// a frame's variants, padded; returns the run's settings with it and the words `run.engine` adds.
/// `None`: the settings stay as they are.
///
/// [`plan_size`]: crate::engine::shapes::plan_size
fn live_shapes(config: &RunConfig, live: bool, schedule: &Schedule) -> Option<(RunConfig, String)> {
    use crate::engine::{LiveShapes, Partial};
    if !live || config.batch_sizes_given || config.engine.resolved_live_shapes() != LiveShapes::Plan
    {
        return None;
    }
    let variants = schedule.variants_per_frame();
    let size = crate::engine::shapes::plan_size(variants, config.pipeline.max_batch);
    let mut settled = config.clone();
    settled.pipeline.max_batch = size;
    settled.engine.batch_sizes = Some(vec![size]);
    settled.engine.partial = Some(Partial::Pad);
    let note = format!(
        "live shapes: one size, {size} (a frame's {variants} variants in {} batches of at most \
         {}; `[engine] live_shapes`)",
        variants.div_ceil(size),
        config.pipeline.max_batch
    );
    Some((settled, note))
}

/// The run's schedule, built once for `plan`, and its one-line description: a compute budget becomes
/// scenarios per frame at the source's rate `source_fps` ([`crate::scenario::schedule`]).
fn build_schedule(
    config: &RunConfig,
    plan: &Plan,
    source_fps: Option<f64>,
) -> anyhow::Result<(Schedule, String)> {
    let (spread, budget) = config.schedule.at_rate(source_fps)?;
    let schedule = spread.schedule(plan.len(), config.seed);
    let description = match &budget {
        Some(b) => format!("{} ({})", schedule.describe(), b.describe()),
        None => schedule.describe(),
    };
    Ok((schedule, description))
}

/// The engine, loaded and warmed up: every batch size runs once before the first frame, so no
/// batch pays a provider's per-shape tuning (engine::shapes); the times are reported. Loading
/// cannot be given up half way (ONNX Runtime builds the session in one call, minutes with
/// TensorRT), so a stop during it (its line printed at once by the signal thread) takes effect
/// right after: no warm-up, and the pipeline, which sees the stop before its first read, ends the
/// run as interrupted with the usual report and exit code.
fn start_engine(
    model: &ModelDesc,
    config: &RunConfig,
    stop: &AtomicBool,
) -> anyhow::Result<(OnnxEngine, Vec<(usize, f64)>)> {
    let mut engine = OnnxEngine::new(model, &config.engine)?;
    if let Some(note) = fixed_batch_note(&engine, config) {
        eprintln!("note: {note}");
    }
    let warmup = if stop.load(Ordering::Relaxed) {
        Vec::new()
    } else {
        engine
            .warm_up()
            .context("the engine failed on its warm-up batches")?
    };
    Ok((engine, warmup))
}

/// What the user should know when the model's fixed batch dimension overrides the batch settings:
/// the engine then runs every batch at that size (smaller ones padded, larger ones cut), whatever
/// `[engine] batch_sizes` or `--batch` said. `None` when the settings already agree with it.
fn fixed_batch_note(engine: &OnnxEngine, config: &RunConfig) -> Option<String> {
    let fixed = engine.fixed_batch()?;
    let configured = config.engine.batch_sizes.as_deref();
    if configured.is_none_or(|s| s.iter().max() == Some(&fixed))
        && config.pipeline.max_batch == fixed
    {
        return None;
    }
    let asked = match configured {
        Some(sizes) => format!("the batch sizes {sizes:?} the settings ask for"),
        None => format!(
            "batches of up to {} (`--batch`, `[pipeline] max_batch`)",
            config.pipeline.max_batch
        ),
    };
    Some(format!(
        "the model's batch dimension is fixed at {fixed}: every batch runs at {fixed} (smaller \
         ones padded, larger ones cut) instead of {asked}; set `--batch {fixed}` to say so, or \
         export the model with a dynamic batch dimension"
    ))
}

/// The few run settings the post passes take besides their own configs.
fn post_context(config: &RunConfig) -> crate::app::post::PostContext<'_> {
    crate::app::post::PostContext {
        challenge: &config.challenge,
        saliency: &config.saliency,
        in9_root: (config.source.kind() == SourceKind::In9).then_some(config.source.path.as_path()),
        seed: config.seed,
        pool: config.pipeline.pool,
        max_batch: config.pipeline.max_batch,
        out: &config.out,
        strict: config.strict,
        shard: config.shard.map(|(s, _)| s),
    }
}

/// What the run is, in the one-line forms the summary and the live view show.
struct Described {
    engine: String,
    runtime: String,
    source: String,
    /// The live source's device or URL ([`Source::camera`], credentials dropped and clipped by
    /// [`crate::report::fleet::camera_label`]): the `camera` label.
    camera: Option<String>,
    schedule: String,
    plan: Vec<String>,
    /// `run.gpu`, `run.gpu_scenarios` and `run.cpu_fallback` when the GPU makes variants.
    scenarios_on: Option<GpuScenarios>,
}

/// What summary.json's `run` says of the GPU that makes a run's variants.
#[derive(Clone)]
struct GpuScenarios {
    /// `run.gpu`: the device ([`crate::gpu::describe`]).
    gpu: serde_json::Value,
    /// `run.gpu_scenarios`: the scenarios it makes.
    on_gpu: Vec<String>,
    /// `run.cpu_fallback`: those the CPU workers make beside it.
    on_cpu: Vec<String>,
}

/// The GPU that makes this run's variants (`[engine] scenarios_on`), with what summary.json's
/// `run` says of it; `None` = the CPU workers. Says on stderr which scenarios stay on the CPU.
fn choose_gpu(
    config: &RunConfig,
    plan: &Plan,
    quiet: bool,
) -> anyhow::Result<Option<(Arc<crate::gpu::Device>, GpuScenarios)>> {
    use crate::engine::Provider;
    let e = &config.engine;
    let gpu_provider = matches!(e.provider, Provider::Cuda | Provider::Tensorrt);
    let ordinal = usize::try_from(e.device_id).unwrap_or(usize::MAX);
    let Some(device) = crate::gpu::choose(e.scenarios_on, gpu_provider, ordinal)
        .context("[engine] scenarios_on: the GPU cannot make this run's variants")?
    else {
        return Ok(None);
    };
    let (on_gpu, on_cpu) = crate::gpu::scenarios::split(plan);
    let gpu = crate::gpu::describe(&device);
    if !quiet {
        let cpu = match on_cpu.is_empty() {
            true => String::new(),
            false => format!(
                "; on the CPU: {}",
                crate::quote::clip_to(&on_cpu.join(", "), 200)
            ),
        };
        eprintln!(
            "gpu: {} makes {} of {} scenarios{cpu}",
            gpu["name"].as_str().unwrap_or("the GPU"),
            on_gpu.len(),
            on_gpu.len() + on_cpu.len()
        );
    }
    let info = GpuScenarios {
        gpu,
        on_gpu,
        on_cpu,
    };
    Ok(Some((device, info)))
}

/// summary.json's `run.labels` (docs/prometheus.md#fleets): `device` (the host name), `camera`,
/// `shard` (`I/N`, from `run.shard` when the run is sharded) and the user's `labels`, in that
/// order, `device` and `camera` replaced by the user's of that name ([`crate::report::fleet`]).
fn add_labels(
    info: &mut RunBlock,
    user: &std::collections::BTreeMap<String, String>,
    camera: Option<String>,
) {
    let shard = info
        .shard
        .as_ref()
        .map(|s| format!("{}/{}", s.index, s.count));
    info.labels =
        crate::report::fleet::run_labels(crate::report::fleet::host_name(), camera, shard, user);
}

/// `robustream_run_info`'s labels: what the run is, in the words of summary.json's `run`
/// (`started`): robustream's version, the ONNX file, the engine and runtime, the source, the plan as
/// written (clipped) and its number of scenarios; then `run.labels`, the device's
/// (docs/prometheus.md#fleets).
fn prometheus_info(
    config: &RunConfig,
    started: &RunBlock,
    d: &Described,
) -> crate::report::prometheus::RunInfo {
    let model = std::path::Path::new(&started.onnx)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let plan = crate::quote::clip_to(&config.scenarios.join(","), 120).into_owned();
    let mut info: Vec<(String, String)> = [
        ("version", started.robustream.clone()),
        ("model", model),
        ("engine", d.engine.clone()),
        ("onnxruntime", d.runtime.clone()),
        ("source", d.source.clone()),
        ("plan", plan),
        ("scenarios", d.plan.len().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    info.extend(started.labels.iter().cloned());
    crate::report::prometheus::RunInfo(info)
}

/// What summary.json's `run` says before the run ends (interim summaries) and after.
fn started_info(
    config: &RunConfig,
    model: &ModelDesc,
    d: &Described,
    warmup: &[(usize, f64)],
    started_unix: u64,
) -> RunBlock {
    let gpu = d.scenarios_on.clone();
    RunBlock {
        robustream: env!("CARGO_PKG_VERSION").to_string(),
        config: config.file.as_ref().map(|p| p.display().to_string()),
        model: model.path.display().to_string(),
        onnx: model.onnx.display().to_string(),
        engine: d.engine.clone(),
        onnxruntime: d.runtime.clone(),
        source: d.source.clone(),
        seed: config.seed,
        stage: config.stage,
        jpeg_after_corruption: config.jpeg_after_corruption,
        plan: d.plan.clone(),
        schedule: d.schedule.clone(),
        workers: config.pipeline.workers,
        max_batch: config.pipeline.max_batch,
        max_wait_ms: config.pipeline.max_wait_ms,
        engine_warmup_ms: warmup
            .iter()
            .map(|(size, ms)| (size.to_string(), round3(*ms)))
            .collect(),
        strict: config.strict,
        limit: config.limit,
        duration_s: config.duration.map(|d| d.as_secs_f64()),
        started_unix,
        scenarios_on: match gpu {
            Some(_) => "gpu",
            None => "cpu",
        }
        .to_string(),
        gpu: gpu.as_ref().map(|g| g.gpu.clone()),
        gpu_scenarios: gpu.as_ref().map(|g| g.on_gpu.clone()),
        cpu_fallback: gpu.map(|g| g.on_cpu),
        ..RunBlock::default()
    }
}

/// `run` of summary.json at the end: `info` with the resources, the end and its error, and the
/// source's own report.
fn ended_info(
    mut info: RunBlock,
    outcome: &Outcome,
    rss: crate::app::watch::RssSummary,
    cpu: Option<crate::app::watch::CpuUse>,
    started: Instant,
) -> RunBlock {
    info.rss_mib = Some(json!(rss));
    // The main pass's process CPU time over its wall time and the cores.
    info.cpu = Some(cpu.map(|c| json!(c)));
    info.variants_failed = Some(outcome.variants_failed);
    info.ended_unix = Some(unix_now());
    info.wall_s = Some(round3(started.elapsed().as_secs_f64()));
    info.end = Some(run_end(&outcome.end));
    info.error = Some(match &outcome.end {
        EndReason::Failed(e) => Some(e.clone()),
        _ => None,
    });
    info.source_report = outcome.source_report.clone();
    info
}

/// `run.end` of a pipeline's end.
fn run_end(end: &EndReason) -> RunEnd {
    match end {
        EndReason::Completed => RunEnd::Completed,
        EndReason::Limit => RunEnd::Limit,
        EndReason::Interrupted => RunEnd::Interrupted,
        EndReason::Duration => RunEnd::Duration,
        EndReason::Failed(_) => RunEnd::Failed,
    }
}

/// What the main pass writes and shows while it runs: records.jsonl, the metrics, the progress
/// bar or live view, the Prometheus endpoint and the interim summaries.
struct LiveOutputs<'a> {
    config: &'a RunConfig,
    writer: RecordWriter,
    metrics: Metrics,
    progress: Progress,
    /// The live terminal view (report::tui), when it runs.
    view: Option<crate::report::tui::LiveView>,
    exporter: Option<crate::report::prometheus::Exporter>,
    /// Frame counts so far.
    live: FrameCounts,
    started: Instant,
    described: &'a Described,
    started_info: &'a RunBlock,
    summary_every: Option<std::time::Duration>,
    last_summary: Instant,
    /// The most-flipped frames' thumbnails for report.html (workers offer, `on_event` settles).
    flips: Arc<FlipKeeper>,
    /// Ids of the frames a resumed run found complete (not evaluated again).
    done: Arc<std::collections::HashSet<String>>,
    /// `batches.csv`: a line per engine batch, as they run.
    batches: crate::report::lines::LineFile,
    /// What the batches add up to (`run.batches`).
    batch_stats: crate::metrics::batches::BatchStats,
}

/// How many frames a resumed run found complete: they count as read beside the pipeline's own.
impl LiveOutputs<'_> {
    fn kept_frames(&self) -> u64 {
        self.done.len() as u64
    }
}

impl<'a> LiveOutputs<'a> {
    /// Creates the run directory and records.jsonl, and starts the view and the endpoint.
    // The run's parts each output needs; a struct of them would be built only to be taken apart.
    #[allow(clippy::too_many_arguments)]
    fn start(
        config: &'a RunConfig,
        keys: Vec<String>,
        total: Option<u64>,
        quiet: bool,
        started: Instant,
        described: &'a Described,
        started_info: &'a RunBlock,
        flips: FlipKeeper,
        previous: Option<crate::app::resume::Previous>,
    ) -> anyhow::Result<Self> {
        std::fs::create_dir_all(&config.out)
            .with_context(|| format!("cannot create run directory {}", config.out.display()))?;
        let records = config.out.join(crate::report::jsonl::RECORDS_JSONL);
        let mut metrics = Metrics::new(keys)
            .with_window(config.report.window)
            .with_groups(crate::metrics::groups::GroupSettings::of(
                config.source.groups.as_ref(),
            ));
        let mut live = FrameCounts::default();
        let mut done = std::collections::HashSet::new();
        let (writer, total) = match previous {
            // The frames already recorded count as read and go into the metrics first, in
            // source order, as an uninterrupted run would have counted them.
            Some(previous) => {
                let (writer, kept) = RecordWriter::resume(&records, previous.ended())?;
                let frames = crate::app::resume::frames(&kept);
                for frame in &frames {
                    metrics.add_frame(frame);
                    live.read += 1;
                    done.insert(frame[0].frame.clone());
                }
                if !quiet && !frames.is_empty() {
                    eprintln!(
                        "resume: {} frames ({} records) already done in {}; evaluating the rest",
                        frames.len(),
                        kept.len(),
                        config.out.display()
                    );
                }
                (writer, total.map(|t| t.saturating_sub(frames.len() as u64)))
            }
            None => (RecordWriter::create(&records)?, total),
        };
        // The endpoint first: its address line goes to the terminal before the live view takes
        // the screen (written under the view, it would break the view's header).
        let exporter = match &config.report.prometheus {
            Some(addr) => {
                let mut e = crate::report::prometheus::Exporter::start(addr)?;
                e.set_info(prometheus_info(config, started_info, described));
                eprintln!("prometheus: serving http://{}/metrics", e.addr());
                Some(e)
            }
            None => None,
        };
        // The live view (report::tui) when asked for and stderr is a terminal; else a bar or lines.
        let view = match config.report.view.unwrap_or_default().wants_live(quiet) {
            false => None,
            true => match crate::report::tui::LiveView::start() {
                Ok(v) => Some(v),
                Err(e) => {
                    eprintln!("warning: cannot start the live view ({e}); plain progress instead");
                    None
                }
            },
        };
        let progress = match view {
            Some(_) => Progress::held(total),
            None => Progress::new(total, quiet),
        };
        let mut batches =
            crate::report::lines::LineFile::create(&config.out.join(crate::report::BATCHES_CSV))?;
        batches.append(crate::metrics::batches::CSV_HEADER, || "the header".into())?;
        Ok(Self {
            config,
            writer,
            metrics,
            progress,
            view,
            exporter,
            live,
            started,
            described,
            started_info,
            summary_every: config.report.summary_every,
            last_summary: Instant::now(),
            flips: Arc::new(flips),
            done: Arc::new(done),
            batches,
            batch_stats: Default::default(),
        })
    }

    /// Ends the progress output, the terminal given back before anything else is printed; the
    /// metrics and the endpoint stay for the summary.
    fn finish(
        self,
    ) -> (
        Metrics,
        Option<crate::report::prometheus::Exporter>,
        Arc<FlipKeeper>,
        crate::metrics::batches::BatchStats,
    ) {
        drop(self.view);
        self.progress.finish();
        (self.metrics, self.exporter, self.flips, self.batch_stats)
    }

    /// Takes one pipeline event: records written and counted, then the live outputs refreshed. A
    /// failed write ends the run as failed, naming records.jsonl and the frame; the file is left
    /// ending with the last whole frame (jsonl::RecordWriter).
    fn on_event(&mut self, event: Event) -> Result<(), SinkError> {
        match event {
            Event::Frame(records) => {
                self.writer.write_batch(&records)?;
                self.metrics.add_frame(&records);
                self.flips.settle(&records);
                self.progress.frame();
                self.live.read += 1;
            }
            Event::Skipped(reason) => {
                self.progress.warn(&format!("skipped {reason}"));
                self.progress.frame();
                self.live.skipped += 1;
            }
            Event::VariantFailed(reason) => self.progress.warn(&reason),
            Event::Dropped => {
                self.progress.frame();
                self.live.read += 1;
                self.live.dropped += 1;
            }
            Event::Lost(n, causes) => {
                self.live.lost += n;
                self.live.set_lost_causes(&causes);
            }
            Event::Passed(_) => {}
            Event::Tick => {}
            Event::Batch(batch) => {
                self.batch_stats.add(&batch);
                self.batches.append(&batch.csv_line(), || {
                    format!("the line of batch {}", batch.index)
                })?;
                // Batches come many a second: the live outputs follow the frames.
                return Ok(());
            }
        }
        self.refresh();
        Ok(())
    }

    /// The endpoint and the view updated, and the interim summary rewritten when due.
    fn refresh(&mut self) {
        if let Some(e) = self.exporter.as_mut() {
            e.update(&self.metrics, &self.live, false);
        }
        if let Some(v) = self.view.as_mut().filter(|v| v.due(false)) {
            let d = self.described;
            v.draw(&crate::report::tui::Snapshot::take(
                &self.metrics,
                &self.live,
                self.started.elapsed(),
                (&d.source, &d.schedule),
                self.progress.recent(),
            ));
        }
        if self
            .summary_every
            .is_some_and(|every| self.last_summary.elapsed() >= every)
        {
            self.last_summary = Instant::now();
            self.write_interim_summary();
        }
    }

    /// summary.json and summary.md of the run so far (`run.end` = `"running"`). A failed write is
    /// a warning; the final summary is what must not be lost.
    fn write_interim_summary(&mut self) {
        let mut info = self.started_info.clone();
        info.wall_s = Some(round3(self.started.elapsed().as_secs_f64()));
        info.end = Some(RunEnd::Running);
        let mut interim = Summary::from_metrics(&self.metrics, info, self.live.clone());
        if let Some(table) = &self.config.metrics.ce_baseline {
            interim.set_ce_baseline(table);
        }
        if let Err(e) = crate::report::write_run_report(
            &self.config.out,
            &interim,
            &self.metrics,
            Some(&self.flips),
        ) {
            self.progress
                .warn(&format!("interim summary not written: {e}"));
        }
    }
}

/// How the main pass went: its outcome (the end made `duration` or failed by the watcher where
/// that is why it ended), its CPU use and its memory samples.
struct MainPass {
    outcome: Outcome,
    cpu: Option<crate::app::watch::CpuUse>,
    rss: crate::app::watch::RssSummary,
}

/// Runs the pipeline with the watcher beside it: the watcher passes Ctrl-C on, ends the run after
/// --duration, and samples memory (crate::app::watch); the pipeline watches its flag. With the live
/// view, a thread reads its keys.
fn main_pass(
    config: &RunConfig,
    inputs: PipelineInputs,
    stop: &AtomicBool,
    outputs: &mut LiveOutputs,
) -> MainPass {
    let flags = crate::app::watch::Flags::default();
    let live_view = outputs.view.is_some();
    let mut sink = |event: Event| -> Result<(), SinkError> {
        outputs.on_event(event)?;
        let live = &outputs.live;
        flags
            .frames
            .store(live.read + live.skipped, Ordering::Relaxed);
        flags.dropped.store(live.dropped, Ordering::Relaxed);
        Ok(())
    };
    // A stop that came while the model loaded ends the pass before it reads a frame; the watcher
    // would pass it on only after its first sample, and the reader may not wait for that.
    if stop.load(Ordering::Relaxed) {
        flags.stop.store(true, Ordering::Relaxed);
    }
    let ((mut outcome, cpu), rss) = std::thread::scope(|s| {
        let watcher =
            s.spawn(|| crate::app::watch::watch(stop, &flags, config.duration, &config.out));
        if live_view {
            s.spawn(|| crate::report::tui::watch_keys(stop, &flags.finished));
        }
        let cpu = crate::app::watch::CpuMeter::start();
        let outcome = pipeline::run(inputs, &flags.stop, &mut sink);
        let cpu = cpu.read();
        flags.finished.store(true, Ordering::Relaxed);
        ((outcome, cpu), watcher.join().unwrap_or_default())
    });
    if flags.duration_hit.load(Ordering::Relaxed) && outcome.end == EndReason::Interrupted {
        outcome.end = EndReason::Duration;
    }
    // resources.csv could not be written: the watcher stopped the run; it failed (beside a failed
    // records write, when both were refused).
    let resources_error = flags
        .write_error
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(e) = resources_error {
        outcome.end = match outcome.end {
            EndReason::Failed(first) => EndReason::Failed(format!("{first}; also {e}")),
            _ => EndReason::Failed(e),
        };
    }
    MainPass { outcome, cpu, rss }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_labels_follow_the_shard_and_the_user_and_reach_run_info() {
        let user: std::collections::BTreeMap<String, String> =
            [("line".to_string(), "3".to_string())].into();
        let mut info = RunBlock {
            shard: Some(ShardEntry {
                index: 2,
                count: 8,
                from: "--shard".into(),
            }),
            ..RunBlock::default()
        };
        add_labels(&mut info, &user, Some("synthetic".into()));
        let names: Vec<&str> = info.labels.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["device", "camera", "shard", "line"]);
        assert_eq!(
            info.label("device"),
            crate::report::fleet::host_name().as_deref()
        );
        assert_eq!(info.label("camera"), Some("synthetic"));
        assert_eq!(info.label("shard"), Some("2/8"));
        assert_eq!(info.label("line"), Some("3"));
        let mut unsharded = RunBlock::default();
        add_labels(&mut unsharded, &Default::default(), None);
        assert_eq!(unsharded.label("shard"), None);
        assert_eq!(unsharded.label("camera"), Some(""));
    }

    #[test]
    fn in9_sources_of_1000_class_models_default_to_the_builtin_map() {
        assert!(builtin_in9_map(Some(SourceKind::In9), 1000));
        assert!(!builtin_in9_map(Some(SourceKind::In9), 9));
        assert!(!builtin_in9_map(Some(SourceKind::Folder), 1000));
        assert!(!builtin_in9_map(None, 1000));
    }

    #[test]
    fn in9_default_plan_is_the_stored_keys_or_the_in9_group() {
        assert_eq!(default_items(&["clean"]), vec!["in9"]);
        assert_eq!(default_items(&[]), vec!["in9"]);
        assert_eq!(
            default_items(&["clean", "background/mixed_same"]),
            vec!["clean", "background/mixed_same"]
        );
    }

    #[test]
    fn in9_plan_reads_only_stored_variations_in_the_plan() {
        let d = tempfile::tempdir().unwrap();
        for v in ["original", "only_fg", "mixed_same", "fg_mask"] {
            std::fs::create_dir_all(d.path().join(v).join("val/00_dog")).unwrap();
        }
        let catalog = Catalog::builtin();
        let root = d.path();
        let keys = |p: &Plan| p.keys().iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let (plan, v) = in9_plan(root, None, &[], &catalog).unwrap();
        assert_eq!(
            keys(&plan),
            ["clean", "background/only_fg", "background/mixed_same"]
        );
        assert_eq!(v.unwrap(), ["original", "only_fg", "mixed_same"]);
        let items = ["background/mixed_same".to_string()];
        let (plan, v) = in9_plan(root, None, &items, &catalog).unwrap();
        assert_eq!(keys(&plan), ["clean", "background/mixed_same"]);
        assert_eq!(v.unwrap(), ["original", "mixed_same"]);
        // Nothing stored for the plan's keys: `original` alone, the plan made on the fly.
        let items = ["background/no_fg".to_string()];
        let (_, v) = in9_plan(root, None, &items, &catalog).unwrap();
        assert_eq!(v.unwrap(), ["original"]);
        // Given variations are kept; `original` alone defaults to the in9 group.
        let only = ["original".to_string()];
        let (plan, v) = in9_plan(root, Some(&only), &[], &catalog).unwrap();
        assert!(
            plan.keys().contains(&"background/mixed_rand"),
            "{:?}",
            plan.keys()
        );
        assert_eq!(v.unwrap(), ["original"]);
    }
}
