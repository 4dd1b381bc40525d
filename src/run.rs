//! Assembling and running one evaluation: config → model, class map, plan, source, engine → pipeline →
//! records.jsonl, summary.json and summary.md in the run directory.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::json;

use crate::classmap::ClassMap;
use crate::config::RunConfig;
use crate::engine::Engine;
use crate::engine::onnx::OnnxEngine;
use crate::frame::LabelSpace;
use crate::key::CLEAN;
use crate::metrics::Metrics;
use crate::model::ModelDesc;
use crate::pipeline::{self, EndReason, Event, Outcome, PipelineInputs};
use crate::report::jsonl::RecordWriter;
use crate::report::progress::Progress;
use crate::report::summary::{FrameCounts, Summary};
use crate::run_lock::{LockError, RunLock};
use crate::scenario::{Catalog, Plan};
use crate::source::{Source, SourceConfig, SourceKind, imagenet_c, in9};

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
}

/// Loads the class map the run scores in: the config's `[dataset] class_map`, else the model
/// description's, else — for an IN-9 source ([`source_kind`]) scored by a 1000-class model — the
/// built-in ImageNet-1k → IN-9 map ([`in9::in_to_in9`],
/// docs/in9.md#classes-and-the-imagenet-mapping; unmapped classes count as wrong), else identity
/// over the model's labels (a 9-output IN-9 model scores in its own labels).
pub fn class_map(config: &RunConfig, model: &ModelDesc) -> anyhow::Result<ClassMap> {
    match config
        .dataset
        .class_map
        .as_ref()
        .or(model.class_map.as_ref())
    {
        Some(path) => Ok(ClassMap::load(path, model.output.classes)?),
        None if builtin_in9_map(source_kind(&config.source), model.output.classes) => {
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
pub fn builtin_in9_map(kind: Option<SourceKind>, model_classes: usize) -> bool {
    kind == Some(SourceKind::In9) && model_classes == 1000
}

/// The kind of the run's source as far as planning needs it: the configured `kind`, else
/// [`SourceKind::In9`] for a folder laid out as the IN-9 release (the detection of
/// [`crate::source::open`]); `None` for every other detected kind.
pub fn source_kind(source: &SourceConfig) -> Option<SourceKind> {
    source.kind.or_else(|| {
        (source.path.is_dir() && in9::looks_like_release(&source.path)).then_some(SourceKind::In9)
    })
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
    source: &SourceConfig,
    scenarios: &[String],
    catalog: &Catalog,
) -> anyhow::Result<(Plan, Option<Vec<String>>)> {
    let root = &source.path;
    if let Some(v) = &source.variations {
        let items = match scenarios.is_empty() {
            true => default_items(&in9::plan_keys(root, Some(v))),
            false => scenarios.to_vec(),
        };
        return Ok((Plan::from_items(&items, catalog)?, Some(v.clone())));
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

/// The run's plan and its source, opened: an `imagenet-c` layout's plan is what it holds (or the
/// config's items), an IN-9 release's too ([`in9_plan`]), any other source takes the config's
/// plan. `labels` is the run's label space.
fn open_source(config: &RunConfig, labels: &LabelSpace) -> anyhow::Result<(Plan, Box<dyn Source>)> {
    let catalog = Catalog::builtin().with_corruption_jpeg(config.jpeg_after_corruption);
    if config.source.kind == Some(SourceKind::ImagenetC) {
        // Stored variants: the plan is what the layout holds, or the config's items.
        let layout = imagenet_c::Layout::scan(&config.source)?;
        let items = match config.scenarios.is_empty() {
            true => layout.keys(),
            false => config.scenarios.clone(),
        };
        let plan = Plan::from_items(&items, &catalog)?;
        let source = layout.open(&plan.keys(), labels)?;
        Ok((plan, Box::new(source) as Box<dyn Source>))
    } else if source_kind(&config.source) == Some(SourceKind::In9) {
        // Stored IN-9 variations: the plan is what the release holds (or the config's items).
        let (plan, variations) = in9_plan(&config.source, &config.scenarios, &catalog)?;
        let mut source_config = config.source.clone();
        source_config.kind = Some(SourceKind::In9);
        source_config.variations = variations;
        let source = crate::source::open(&source_config, labels)?;
        Ok((plan, source))
    } else {
        let plan = Plan::from_items(&config.scenarios, &catalog)?;
        Ok((plan, crate::source::open(&config.source, labels)?))
    }
}

/// `v` rounded to 3 decimals (ms resolution for seconds).
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Runs an evaluation as configured. `stop` is the Ctrl-C flag: when raised, reading stops, frames in
/// flight finish, and the summary of what was done is written.
pub fn run(config: &RunConfig, stop: &AtomicBool, quiet: bool) -> anyhow::Result<RunResult> {
    // One run writes a run directory at a time (crate::run_lock): a second one fails here, before
    // any work. Held until this function returns (the summary written); the OS releases it if the
    // process dies.
    let _lock = match RunLock::acquire(&config.out) {
        Ok(lock) => Some(lock),
        Err(e @ LockError::Unsupported { .. }) => {
            eprintln!(
                "warning: {e}; the run goes on, but another run writing this directory would not \
                 be noticed"
            );
            None
        }
        Err(e) => return Err(e.into()),
    };
    let started = Instant::now();
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let model = ModelDesc::load(&config.model)?;
    let class_map = class_map(config, &model)?;
    let (plan, source) = open_source_or_stop(config, class_map.classes(), stop)?;
    // A compute budget becomes scenarios per frame at the source's rate (scenario::schedule).
    let (mode, per_frame, budget) = crate::scenario::schedule::Budget::resolve(
        config.pipeline.budget,
        config.pipeline.fps,
        source.fps(),
        config.pipeline.schedule,
        config.pipeline.per_frame,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut pipeline_config = config.pipeline.clone();
    pipeline_config.schedule = mode;
    pipeline_config.per_frame = per_frame;
    // Loading cannot be given up half way (ONNX Runtime builds the session in one call, minutes
    // with TensorRT), so a stop during it (its line printed at once by the signal thread) takes
    // effect right after: no warm-up, and the pipeline, which sees the stop before its first
    // read, ends the run as interrupted with the usual report and exit code.
    let mut engine = OnnxEngine::new(&model, &config.engine)?;
    // Every batch size once before the first frame, so no batch pays a provider's per-shape
    // tuning (engine::shapes); the time is reported.
    let warmup = if stop.load(Ordering::Relaxed) {
        Vec::new()
    } else {
        engine
            .warm_up()
            .context("the engine failed on its warm-up batches")?
    };
    let runtime = engine.runtime().to_string();
    // The post passes (challenge, saliency) keep frames while the main pass reads them, and run on
    // its engine afterwards.
    let post_context = crate::post::PostContext {
        challenge: &config.challenge,
        saliency: &config.saliency,
        source: &config.source,
        seed: config.seed,
        pool: config.pipeline.pool,
        max_batch: config.pipeline.max_batch,
        out: &config.out,
        strict: config.strict,
    };
    let (source, mut engine, harvest) =
        crate::post::attach(&post_context, &model, source, Box::new(engine));
    let post_class_map = class_map.clone();
    let engine_desc = engine.describe();
    let source_desc = source.describe();
    let total = source
        .len_hint()
        .map(|n| config.limit.map_or(n as u64, |l| l.min(n as u64)));

    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("cannot create run directory {}", config.out.display()))?;
    let records_path = config.out.join("records.jsonl");
    let mut writer = RecordWriter::create(&records_path)?;
    let keys: Vec<String> = plan.keys().iter().map(|k| k.to_string()).collect();
    let schedule = crate::scenario::schedule::Schedule::new(
        pipeline_config.schedule,
        pipeline_config.per_frame,
        keys.len(),
        config.seed,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut metrics = Metrics::new(keys.clone()).with_window(
        config
            .report
            .window
            .unwrap_or(crate::config::DEFAULT_WINDOW),
    );
    // The live view (report::tui) when asked for and stderr is a terminal; else a bar or lines.
    let mut view = match config.report.view.unwrap_or_default().wants_live(quiet) {
        false => None,
        true => match crate::report::tui::LiveView::start() {
            Ok(v) => Some(v),
            Err(e) => {
                eprintln!("warning: cannot start the live view ({e}); plain progress instead");
                None
            }
        },
    };
    let live_view = view.is_some();
    let mut progress = match view {
        Some(_) => Progress::held(total),
        None => Progress::new(total, quiet),
    };
    let schedule_desc = match &budget {
        Some(b) => format!("{} ({})", schedule.describe(), b.describe()),
        None => schedule.describe(),
    };
    // What summary.json's `run` says before the run ends (interim summaries) and after.
    let started_info = json!({
        "robustream": env!("CARGO_PKG_VERSION"),
        "config": config.file.as_ref().map(|p| p.display().to_string()),
        "model": model.path.display().to_string(),
        "onnx": model.onnx.display().to_string(),
        "engine": engine_desc,
        "onnxruntime": runtime,
        "source": source_desc,
        "seed": config.seed,
        "stage": config.stage,
        "jpeg_after_corruption": config.jpeg_after_corruption,
        "plan": keys,
        "schedule": schedule_desc,
        "workers": config.pipeline.workers,
        "max_batch": config.pipeline.max_batch,
        "max_wait_ms": config.pipeline.max_wait_ms,
        "engine_warmup_ms": warmup
            .iter()
            .map(|(size, ms)| (size.to_string(), json!(round3(*ms))))
            .collect::<serde_json::Map<_, _>>(),
        "strict": config.strict,
        "limit": config.limit,
        "duration_s": config.duration.map(|d| d.as_secs_f64()),
        "started_unix": started_unix,
    });
    let summary_every = config.report.summary_every();
    let mut last_summary = Instant::now();
    let mut exporter = match &config.report.prometheus {
        Some(addr) => {
            let e = crate::report::prometheus::Exporter::start(addr)?;
            eprintln!("prometheus: serving http://{}/metrics", e.addr());
            Some(e)
        }
        None => None,
    };
    let mut live = FrameCounts::default();

    let inputs = PipelineInputs {
        source,
        plan,
        model: model.clone(),
        engine: Box::new(engine.clone()),
        class_map,
        seed: config.seed,
        stage: config.stage,
        config: pipeline_config,
        strict: config.strict,
        limit: config.limit,
    };
    // The watcher passes Ctrl-C on, ends the run after --duration, and samples memory
    // (crate::watch); the pipeline watches its flag.
    let flags = crate::watch::Flags::default();
    let mut sink = |event: Event| -> Result<(), String> {
        match event {
            Event::Frame(records) => {
                // A failed write ends the run as failed, naming records.jsonl and the frame; the
                // file is left ending with the last whole frame (jsonl::RecordWriter).
                writer.write_batch(&records).map_err(|e| e.to_string())?;
                metrics.add_frame(&records);
                progress.frame();
                live.read += 1;
            }
            Event::Skipped(reason) => {
                progress.warn(&format!("skipped {reason}"));
                progress.frame();
                live.skipped += 1;
            }
            Event::VariantFailed(reason) => progress.warn(&reason),
            Event::Dropped => {
                progress.frame();
                live.read += 1;
                live.dropped += 1;
            }
            Event::Lost(n) => live.lost += n,
            Event::Tick => {}
        }
        if let Some(e) = exporter.as_mut() {
            e.update(&metrics, &live, false);
        }
        if let Some(v) = view.as_mut().filter(|v| v.due(false)) {
            v.draw(&crate::report::tui::Snapshot::take(
                &metrics,
                &live,
                started.elapsed(),
                (&source_desc, &schedule_desc),
                progress.recent(),
            ));
        }
        if summary_every.is_some_and(|every| last_summary.elapsed() >= every) {
            last_summary = Instant::now();
            let mut info = started_info.clone();
            if let Some(o) = info.as_object_mut() {
                o.insert(
                    "wall_s".into(),
                    json!(round3(started.elapsed().as_secs_f64())),
                );
                o.insert("end".into(), json!("running"));
            }
            let mut interim = Summary::from_metrics(&metrics, info, live);
            if let Some(table) = &config.metrics.ce_baseline {
                interim.set_ce_baseline(table);
            }
            // A failed interim write is a warning; the final summary is what must not be lost.
            if let Err(e) = crate::report::write_run_summary(&config.out, &interim) {
                progress.warn(&format!("interim summary not written: {e}"));
            }
        }
        flags
            .frames
            .store(live.read + live.skipped, Ordering::Relaxed);
        Ok(())
    };
    let (outcome, rss) = std::thread::scope(|s| {
        let watcher = s.spawn(|| crate::watch::watch(stop, &flags, config.duration, &config.out));
        if live_view {
            s.spawn(|| crate::report::tui::watch_keys(stop, &flags.finished));
        }
        let cpu = crate::watch::CpuMeter::start();
        let outcome = pipeline::run(inputs, &flags.stop, &mut sink);
        let cpu = cpu.read();
        flags.finished.store(true, Ordering::Relaxed);
        ((outcome, cpu), watcher.join().unwrap_or_default())
    });
    let (mut outcome, cpu) = outcome;
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
    // Give the terminal back before anything else is printed.
    drop(view);
    progress.finish();
    let main_ok = matches!(
        outcome.end,
        EndReason::Completed | EndReason::Limit | EndReason::Duration
    );
    // A failed post pass fails the run, but what the main pass measured is still summarised.
    let post = match crate::post::PostPasses::run(
        &post_context,
        harvest.as_ref(),
        &mut engine,
        &model,
        &post_class_map,
        stop,
        quiet,
        main_ok,
    ) {
        Ok(post) => Some(post),
        Err(e) => {
            outcome.end = EndReason::Failed(crate::error_line(e.as_ref()));
            None
        }
    };

    let ended_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut run_info = started_info;
    if let Some(o) = run_info.as_object_mut() {
        for (k, v) in [
            ("rss_mib", json!(rss)),
            // The main pass's process CPU time over its wall time and the cores.
            ("cpu", json!(cpu)),
            ("variants_failed", json!(outcome.variants_failed)),
            ("ended_unix", json!(ended_unix)),
            ("wall_s", json!(round3(started.elapsed().as_secs_f64()))),
            ("end", json!(outcome.end.as_str())),
            (
                "error",
                json!(match &outcome.end {
                    EndReason::Failed(e) => Some(e.clone()),
                    _ => None,
                }),
            ),
        ] {
            o.insert(k.into(), v);
        }
    }
    if let (Some(report), Some(info)) = (&outcome.source_report, run_info.as_object_mut()) {
        info.insert("source_report".into(), report.clone());
    }
    let frames = FrameCounts {
        read: outcome.frames_read,
        skipped: outcome.frames_skipped,
        dropped: outcome.frames_dropped,
        lost: outcome.frames_lost,
    };
    if let Some(e) = exporter.as_mut() {
        e.update(&metrics, &frames, true);
    }
    let mut summary = Summary::from_metrics(&metrics, run_info, frames);
    if let Some(inner) = &config.metrics.ximagenet_inner {
        summary.set_ximagenet_inner(inner);
    }
    if let Some(table) = &config.metrics.ce_baseline {
        summary.set_ce_baseline(table);
    }
    if let Some(post) = post {
        post.apply(&mut summary);
    }
    // A summary that cannot be written is reported beside how the run ended (which may itself be
    // a failed records write), never instead of it.
    let summary_error = crate::report::write_run_summary(&config.out, &summary).err();
    Ok(RunResult {
        summary,
        outcome,
        dir: config.out.clone(),
        summary_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let source = SourceConfig::new(d.path());
        let keys = |p: &Plan| p.keys().iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let (plan, v) = in9_plan(&source, &[], &catalog).unwrap();
        assert_eq!(
            keys(&plan),
            ["clean", "background/only_fg", "background/mixed_same"]
        );
        assert_eq!(v.unwrap(), ["original", "only_fg", "mixed_same"]);
        let items = ["background/mixed_same".to_string()];
        let (plan, v) = in9_plan(&source, &items, &catalog).unwrap();
        assert_eq!(keys(&plan), ["clean", "background/mixed_same"]);
        assert_eq!(v.unwrap(), ["original", "mixed_same"]);
        // Nothing stored for the plan's keys: `original` alone, the plan made on the fly.
        let items = ["background/no_fg".to_string()];
        let (_, v) = in9_plan(&source, &items, &catalog).unwrap();
        assert_eq!(v.unwrap(), ["original"]);
        // Given variations are kept; `original` alone defaults to the in9 group.
        let mut only = source.clone();
        only.variations = Some(vec!["original".into()]);
        let (plan, v) = in9_plan(&only, &[], &catalog).unwrap();
        assert!(
            plan.keys().contains(&"background/mixed_rand"),
            "{:?}",
            plan.keys()
        );
        assert_eq!(v.unwrap(), ["original"]);
    }
}
