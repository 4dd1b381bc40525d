//! Run configuration: the TOML files in `configs/`, validated with messages that name the file and key,
//! plus command-line overrides. Relative paths in a config file are resolved against the file's folder;
//! paths given on the command line against the working directory.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::app::pipeline::config::{PipelineConfig, RawPipelineConfig};
use crate::engine::EngineConfig;
use crate::scenario::ScenarioStage;
use crate::scenario::schedule::ScheduleSettings;
use crate::source::{ClassOrder, RawSourceConfig, SourceConfig, SourceError};

/// A configuration problem: which file, which key, what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {}: {source}; check the --config path", path.display())]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Malformed TOML, unknown key or wrong type (the message names the key and line).
    #[error("config {path}: {message}")]
    Parse {
        /// The config file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A command-line flag that does not apply to the source (`--realtime` on a folder); the
    /// message names the source and the flag.
    #[error(transparent)]
    Flag(#[from] crate::source::video::RealtimeError),
    /// `[source]` (with the source flags) does not settle: an option of another kind, two options
    /// that exclude each other, a bad kind table (`[source.synthetic]`, `[source.plate]`, …); the
    /// line names the source and the fix.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// `--shard` or a scheduler's variables do not name a shard (docs/deploy.md#shards).
    #[error(transparent)]
    Shard(#[from] crate::shard::ShardError),
    /// A required setting is missing or a value is out of range (a rule of the config itself).
    #[error("{origin}: {message}")]
    Invalid {
        /// The config file, or "command line".
        origin: String,
        /// What is wrong and what to do.
        message: String,
    },
    /// A component's own check refused its settings (the engine's, the pipeline's, a duration, a
    /// `[metrics]` input file…): its typed error as the `source`, for callers to match on. The
    /// line is `<origin>: <key><the component's line><hint>`, as it was when the message was
    /// flattened into [`ConfigError::Invalid`].
    #[error("{origin}: {key}{source}{hint}")]
    Component {
        /// The config file, or "command line".
        origin: String,
        /// The key the settings are under, as the line starts (`` `[report] linger`: ``), or
        /// empty when the component's line names it.
        key: String,
        /// The component's error (boxed: some components' errors are large).
        #[source]
        source: Box<ComponentError>,
        /// What to do, after the component's line (empty when its line says it).
        hint: &'static str,
    },
}

/// The typed error of a component whose settings a config holds ([`ConfigError::Component`]).
/// Display = the component's line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentError {
    /// `[engine]`.
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineConfigError),
    /// `[pipeline]`.
    #[error(transparent)]
    Pipeline(#[from] crate::app::pipeline::config::PipelineConfigError),
    /// The schedule settings of `[pipeline]`.
    #[error(transparent)]
    Schedule(#[from] crate::scenario::schedule::ScheduleError),
    /// `[challenge]`.
    #[error(transparent)]
    Challenge(#[from] crate::app::challenge::ChallengeConfigError),
    /// `[saliency]`.
    #[error(transparent)]
    Saliency(#[from] crate::app::saliency::SaliencyConfigError),
    /// `[metrics] ximagenet_inner`.
    #[error(transparent)]
    InnerResults(#[from] crate::metrics::volatility::InnerError),
    /// `[metrics] ce_baseline`.
    #[error(transparent)]
    CeBaseline(#[from] crate::metrics::imagenet_c::TableError),
    /// A duration (`duration`, `[report] linger`, `[report] summary_every`).
    #[error(transparent)]
    Duration(#[from] crate::duration::DurationError),
    /// A label name of `[report] labels` or `--run-label`.
    #[error(transparent)]
    Label(#[from] crate::report::fleet::LabelError),
}

/// `[dataset]`: the label space truths are written in.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct DatasetConfig {
    /// Class map (model classes → dataset labels), overriding the model description's.
    pub(crate) class_map: Option<PathBuf>,
}

/// `[metrics]` as written: inputs of metric families that a run cannot produce itself.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMetricsConfig {
    /// JSON file of XIMAGENET-12 accuracies of scenario-trained models
    /// (docs/ximagenet.md#cross-and-inner-variance).
    ximagenet_inner: Option<PathBuf>,
    /// TOML table of the baseline model's ImageNet-C errors that CE and mCE are normalised by, in the
    /// format of `configs/imagenet_c_alexnet.toml` (docs/imagenet-c.md#alexnet-baseline-errors).
    ce_baseline: Option<PathBuf>,
}

/// `[metrics]`, checked: the inputs read at load time, so a bad file fails before the run.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MetricsConfig {
    /// `ximagenet_inner = "file.json"`: C'(i) of scenario-trained models for σ²_inner and S_robust
    /// (docs/ximagenet.md#cross-and-inner-variance, docs/ximagenet.md#s_robust; see
    /// [`crate::metrics::volatility::InnerResults`]).
    pub(crate) ximagenet_inner: Option<crate::metrics::volatility::InnerResults>,
    /// `ce_baseline = "table.toml"` (relative to the config file): the baseline model's ImageNet-C
    /// errors that CE / mCE / relative mCE are normalised by (the references use AlexNet's,
    /// docs/imagenet-c.md#alexnet-baseline-errors; see
    /// [`crate::metrics::imagenet_c::BaselineTable`]); `None` = the built-in AlexNet table.
    pub(crate) ce_baseline: Option<crate::metrics::imagenet_c::BaselineTable>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    model: Option<PathBuf>,
    source: Option<RawSourceConfig>,
    #[serde(default)]
    scenarios: Vec<String>,
    out: Option<PathBuf>,
    #[serde(default)]
    seed: u64,
    limit: Option<u64>,
    #[serde(default)]
    strict: bool,
    #[serde(default)]
    stage: ScenarioStage,
    jpeg_after_corruption: Option<u8>,
    /// `duration = "1h"`: stop after this long (see `duration::parse_duration`).
    duration: Option<String>,
    #[serde(default)]
    engine: EngineConfig,
    #[serde(default)]
    pipeline: RawPipelineConfig,
    #[serde(default)]
    dataset: DatasetConfig,
    #[serde(default)]
    metrics: RawMetricsConfig,
    #[serde(default)]
    challenge: crate::app::challenge::ChallengeConfig,
    #[serde(default)]
    saliency: crate::app::saliency::SaliencyConfig,
    #[serde(default)]
    report: RawReportConfig,
}

/// A complete, validated run configuration with absolute or working-directory-relative paths.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The config file, if any.
    pub(crate) file: Option<PathBuf>,
    /// Model description TOML.
    pub(crate) model: PathBuf,
    /// Frame source, settled when the config loads ([`RawSourceConfig::settle`]): its kind with
    /// that kind's options; later stages take it as it is and never detect it again.
    pub(crate) source: SourceConfig,
    /// Plan items (keys, groups, `prefix/*`); `clean` is always added.
    pub(crate) scenarios: Vec<String>,
    /// Run directory for records and summaries.
    pub(crate) out: PathBuf,
    /// Stop after this long (`duration`, `--duration`); absent = run to the source's end.
    pub(crate) duration: Option<std::time::Duration>,
    /// Run seed of the keyed scenario RNG.
    pub(crate) seed: u64,
    /// Stop after this many frames (read successfully or not).
    pub(crate) limit: Option<u64>,
    /// Any bad input is fatal instead of skipped.
    pub(crate) strict: bool,
    /// Where scenarios are applied.
    pub(crate) stage: ScenarioStage,
    /// JPEG quality corrupted images are stored at before inference, as the released ImageNet-C was
    /// (85); `None` evaluates the corruption's output directly.
    pub(crate) jpeg_after_corruption: Option<u8>,
    /// Engine settings.
    pub(crate) engine: EngineConfig,
    /// Threads and batching.
    pub(crate) pipeline: PipelineConfig,
    /// The scenario schedule settings of `[pipeline]`, checked; a budget without `fps` is fixed
    /// at the source's rate when the run opens it ([`ScheduleSettings::at_rate`]).
    pub(crate) schedule: ScheduleSettings,
    /// Label space settings.
    pub(crate) dataset: DatasetConfig,
    /// Inputs of metric families (`[metrics]`).
    pub(crate) metrics: MetricsConfig,
    /// The adversarial-background challenge after the main pass (`[challenge]`, `--challenge`).
    pub(crate) challenge: crate::app::challenge::ChallengeConfig,
    /// The occlusion saliency pass after the main pass (`[saliency]`, `--saliency`).
    pub(crate) saliency: crate::app::saliency::SaliencyConfig,
    /// Live outputs (`[report]`, `--prometheus`).
    pub report: ReportConfig,
    /// The part of the source this process evaluates (`--shard`, or the scheduler's variables;
    /// docs/deploy.md#shards) and where it was given; `None` = all of it.
    pub(crate) shard: Option<(crate::shard::Shard, crate::shard::ShardFrom)>,
    /// `--resume`: `out` may hold this run already, killed part way; only the frames without
    /// complete records are evaluated (docs/deploy.md#resume).
    pub(crate) resume: bool,
    /// `[engine] batch_sizes` was given (settling fills it in from `[pipeline] max_batch`
    /// otherwise): a live source's shape policy then leaves the sizes as they are
    /// ([`crate::engine::EngineConfig::live_shapes`]).
    pub(crate) batch_sizes_given: bool,
}

/// Command-line overrides of `robustream run`: its arguments as parsed, [`crate::app::cli::RunArgs`],
/// whose help says what each replaces or sets (`--config` and `--quiet` are not read here). A new
/// flag of `run` is a field there and its use in this file, nothing else.
type Overrides = crate::app::cli::RunArgs;

/// `[report]` as written: live outputs of a run besides records and summaries.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawReportConfig {
    /// Serve Prometheus metrics on this address during the run (`report::prometheus`), e.g.
    /// `"127.0.0.1:9898"`; absent = no endpoint.
    prometheus: Option<String>,
    /// Keep the Prometheus endpoint up this long after the run (`"30s"`, `--linger`).
    linger: Option<String>,
    /// Sliding window of the live figures, in frames (`metrics::window`; `metrics.window` in
    /// summary.json); 0 = none. Default [`DEFAULT_WINDOW`].
    window: Option<usize>,
    /// How the run shows progress on stderr: `"auto"` (default: the live terminal view when
    /// stderr is a terminal), `"live"` or `"plain"` (`report::tui`, `--view`).
    view: Option<crate::report::tui::ViewMode>,
    /// How often `summary.json` and `summary.md` are rewritten during the run, e.g. `"10s"`,
    /// `"1m"`; `"0"` = only at the end. Default [`DEFAULT_SUMMARY_EVERY`].
    summary_every: Option<String>,
    /// `labels = { line = "3", plant = "north" }`: the device's own labels on
    /// `robustream_run_info` and in `run.labels` (docs/prometheus.md#fleets); numbers and
    /// booleans are taken as their text.
    labels: Option<std::collections::BTreeMap<String, toml::Value>>,
}

/// `[report]` settled: live outputs of a run besides records and summaries.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportConfig {
    /// Serve Prometheus metrics on this address during the run (`report::prometheus`), e.g.
    /// `"127.0.0.1:9898"`; absent = no endpoint.
    pub(crate) prometheus: Option<String>,
    /// Keep the endpoint up this long after the run, serving the final figures, so a scraper on a
    /// 15 s interval sees a short run (`[report] linger`, `--linger`); only with `prometheus`.
    pub linger: Option<std::time::Duration>,
    /// Sliding window of the live figures, in frames (`metrics::window`; `metrics.window` in
    /// summary.json); 0 = none.
    pub(crate) window: usize,
    /// How the run shows progress on stderr: `"auto"` (default: the live terminal view when
    /// stderr is a terminal), `"live"` or `"plain"` (`report::tui`, `--view`).
    pub(crate) view: Option<crate::report::tui::ViewMode>,
    /// How often `summary.json` and `summary.md` are rewritten during the run (atomically, so a
    /// watcher always reads a whole file; `run.end` is `"running"` until the end); `None` = only
    /// at the end. Default [`DEFAULT_SUMMARY_EVERY`].
    pub(crate) summary_every: Option<std::time::Duration>,
    /// The user's labels (`[report] labels` with `--run-label` over them), names checked
    /// ([`crate::report::fleet::check_name`]), by name: on `robustream_run_info` and in
    /// summary.json's `run.labels` after `device`, `camera` and `shard`, which `device` and
    /// `camera` replace (docs/prometheus.md#fleets).
    pub(crate) labels: std::collections::BTreeMap<String, String>,
}

/// Default period of the interim summary rewrites.
const DEFAULT_SUMMARY_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// `[report]` with `--prometheus`, `--linger` and `--view` applied, its durations read.
fn settle_report(
    raw: RawReportConfig,
    o: &Overrides,
    origin: &Origin,
) -> Result<ReportConfig, ConfigError> {
    let every = match &raw.summary_every {
        None => DEFAULT_SUMMARY_EVERY,
        Some(text) => crate::duration::parse_duration(text)
            .map_err(|m| origin.component("`[report] summary_every`: ", m))?,
    };
    let linger = match (o.linger, &raw.linger) {
        (Some(d), _) => Some(d),
        (None, Some(text)) => Some(
            crate::duration::parse_duration(text)
                .map_err(|m| origin.component("`[report] linger`: ", m))?,
        ),
        (None, None) => None,
    };
    let prometheus = o.prometheus.clone().or(raw.prometheus);
    if linger.is_some() && prometheus.is_none() {
        return Err(origin.invalid(
            "`linger` (--linger) keeps the Prometheus endpoint up after the run, but no endpoint \
             is set; add `[report] prometheus` or --prometheus, or remove `linger`",
        ));
    }
    Ok(ReportConfig {
        prometheus,
        linger: linger.filter(|d| !d.is_zero()),
        window: raw.window.unwrap_or(DEFAULT_WINDOW),
        view: o.view.or(raw.view),
        summary_every: (!every.is_zero()).then_some(every),
        labels: settle_labels(raw.labels.unwrap_or_default(), &o.run_labels, origin)?,
    })
}

/// `[report] labels` with `--run-label` over them (per name), every name checked
/// ([`crate::report::fleet::check_name`]); a value is a string, or a number or boolean taken as
/// its text (docs/prometheus.md#which-device-a-run-is).
fn settle_labels(
    raw: std::collections::BTreeMap<String, toml::Value>,
    flags: &[(String, String)],
    origin: &Origin,
) -> Result<std::collections::BTreeMap<String, String>, ConfigError> {
    use crate::report::fleet::check_name;
    let mut labels = std::collections::BTreeMap::new();
    for (name, value) in raw {
        check_name(&name).map_err(|e| origin.component("`[report] labels`: ", e))?;
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(origin.invalid(&format!(
                    "`[report] labels`: the value of `{name}` is {} {}; a label's value is text, \
                     e.g. `{name} = \"3\"`",
                    if other.type_str().starts_with(['a', 'e', 'i', 'o', 'u']) {
                        "an"
                    } else {
                        "a"
                    },
                    other.type_str()
                )));
            }
        };
        labels.insert(name, text);
    }
    for (name, value) in flags {
        check_name(name).map_err(|e| ConfigError::Component {
            origin: "command line".into(),
            key: "--run-label: ".into(),
            source: Box::new(e.into()),
            hint: "",
        })?;
        labels.insert(name.clone(), value.clone());
    }
    Ok(labels)
}

/// Default length of the sliding window, in frames.
const DEFAULT_WINDOW: usize = 100;

impl RunConfig {
    /// Reads a config file (if given) and applies the overrides: every setting is checked and
    /// settled here (paths resolved, the source's kind decided, the schedule settings checked), so
    /// the run takes the result as it is.
    pub fn load(file: Option<&Path>, o: &Overrides) -> Result<Self, ConfigError> {
        let (mut raw, origin) = read_raw(file)?;
        let model = match (&o.model, raw.model.take()) {
            (Some(m), _) => m.clone(),
            (None, Some(m)) => origin.rel(m),
            (None, None) => {
                return Err(origin
                    .invalid("no model: set `model = \"path/to/model.toml\"` or pass --model"));
            }
        };
        let mut source = source_with_flags(raw.source.take(), o, &origin)?;
        let engine = settle_engine(std::mem::take(&mut raw.engine), o, &origin);
        // The segmentation mask source loads ONNX Runtime like the engine (source::segment).
        if let Some(seg) = &mut source.segment {
            seg.library = engine.library.clone();
        }
        let batch_sizes_given = engine.batch_sizes.is_some();
        let (engine, pipeline, schedule) = settle_pipeline(engine, &raw.pipeline, o, &origin)?;
        let (duration, out) = settle_run_limits(&raw, o, &origin, file)?;
        let report = settle_report(std::mem::take(&mut raw.report), o, &origin)?;
        let (challenge, saliency) = settle_post_passes(raw.challenge, raw.saliency, o, &origin)?;
        let metrics = MetricsConfig::read(raw.metrics, &origin)?;
        let mut dataset = raw.dataset;
        dataset.class_map = dataset.class_map.map(|p| origin.rel(p));
        if let Some(map) = &o.class_map {
            dataset.class_map = Some(map.clone());
        }
        if o.realtime {
            crate::source::video::set_realtime(&mut source)?;
        }
        let source = source.settle()?;
        let shard = crate::shard::Shard::from_env(o.shard.as_deref(), &|k| std::env::var(k).ok())?;
        Ok(Self {
            file: file.map(Path::to_path_buf),
            model,
            source,
            scenarios: o.scenarios.clone().unwrap_or(raw.scenarios),
            out,
            duration,
            seed: o.seed.unwrap_or(raw.seed),
            limit: o.limit.or(raw.limit),
            strict: o.strict || raw.strict,
            stage: raw.stage,
            jpeg_after_corruption: raw.jpeg_after_corruption,
            engine,
            pipeline,
            schedule,
            dataset,
            metrics,
            challenge,
            saliency,
            report,
            shard,
            resume: o.resume.is_some(),
            batch_sizes_given,
        })
    }
}

/// Where a config's settings come from: the name its errors start with (the file, or "command
/// line") and the folder its relative paths are resolved against.
struct Origin {
    name: String,
    base: PathBuf,
}

impl Origin {
    /// A [`ConfigError::Invalid`] from this origin.
    fn invalid(&self, message: &str) -> ConfigError {
        ConfigError::Invalid {
            origin: self.name.clone(),
            message: message.into(),
        }
    }

    /// A [`ConfigError::Component`] from this origin: `key` starts the line (empty when the
    /// component's line names it).
    fn component(&self, key: &str, e: impl Into<ComponentError>) -> ConfigError {
        self.component_with(key, e, "")
    }

    /// [`Origin::component`] with `hint` after the component's line.
    fn component_with(
        &self,
        key: &str,
        e: impl Into<ComponentError>,
        hint: &'static str,
    ) -> ConfigError {
        ConfigError::Component {
            origin: self.name.clone(),
            key: key.to_string(),
            source: Box::new(e.into()),
            hint,
        }
    }

    /// `p` resolved against the config's folder (absolute paths as they are), normalised.
    fn rel(&self, p: PathBuf) -> PathBuf {
        if p.is_absolute() {
            p
        } else {
            normalize(&self.base.join(p))
        }
    }
}

/// The config file parsed (an empty config without one) and its [`Origin`].
fn read_raw(file: Option<&Path>) -> Result<(RawConfig, Origin), ConfigError> {
    let Some(path) = file else {
        let origin = Origin {
            name: "command line".to_string(),
            base: PathBuf::new(),
        };
        return Ok((
            toml::from_str::<RawConfig>("").expect("empty config parses"),
            origin,
        ));
    };
    let text =
        crate::fsread::read_text_io(path, crate::fsread::MAX_TEXT_BYTES).map_err(|source| {
            ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
    let raw: RawConfig = toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        message: one_line(&e.to_string()),
    })?;
    let origin = Origin {
        name: path.display().to_string(),
        base: path.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    Ok((raw, origin))
}

/// The run's source: the config's `[source]` table with its paths resolved
/// ([`resolve_source_paths`]), or `--source`, with the other source flags applied.
fn source_with_flags(
    configured: Option<RawSourceConfig>,
    o: &Overrides,
    origin: &Origin,
) -> Result<RawSourceConfig, ConfigError> {
    let configured = configured.map(|s| resolve_source_paths(s, origin));
    let mut source = match (&o.source, configured) {
        // --source replaces what the frames are (path, kind, classes, truth); the mask source,
        // the groups (docs/groups.md#config) and the kind's own table stay (the latter only if it
        // still applies, checked below).
        (Some(p), Some(c)) => RawSourceConfig {
            plate: c.plate,
            segment: c.segment,
            synthetic: c.synthetic,
            video: c.video,
            camera: c.camera,
            groups: c.groups,
            ..RawSourceConfig::new(p.clone())
        },
        (Some(p), None) => RawSourceConfig::new(p.clone()),
        (None, Some(s)) => s,
        (None, None) => {
            return Err(
                origin.invalid("no source: add a `[source]` table with `path` or pass --source")
            );
        }
    };
    if let Some(kind) = o.source_kind {
        source.kind = Some(kind);
    }
    if o.source.is_some() {
        crate::source::config::drop_foreign_tables(&mut source);
    }
    if let Some(clean) = &o.clean {
        source.clean = Some(clean.clone());
    }
    if let Some(label) = &o.label {
        source.label = Some(label.clone());
        source.labels = None;
    }
    if let Some(file) = &o.labels {
        source.labels = Some(file.clone());
        source.label = None;
    }
    Ok(source)
}

/// The `[source]` table with its file paths resolved against the config's folder. A path spelled
/// as a synthetic camera, a stream URL or a `camera[:N]` device names no file and stays as written.
fn resolve_source_paths(mut s: RawSourceConfig, origin: &Origin) -> RawSourceConfig {
    let rel = |p: PathBuf| origin.rel(p);
    // A `synthetic:…` spec names no file (source::synthetic).
    // Nor does a stream URL (source::video).
    if !s.path.to_str().is_some_and(|p| p.starts_with("synthetic"))
        && !crate::source::video::is_url(&s.path)
        // Nor a `camera:N` device spec (source::camera).
        && !s.path.to_str().is_some_and(|p| p.starts_with("camera:") || p == "camera")
    {
        s.path = rel(std::mem::take(&mut s.path));
    }
    if let Some(syn) = &mut s.synthetic {
        syn.sprite = syn.sprite.take().map(rel);
        syn.sprite_mask = syn.sprite_mask.take().map(rel);
    }
    if let Some(ClassOrder::List(list)) = s.classes {
        s.classes = Some(ClassOrder::List(rel(list)));
    }
    s.clean = s.clean.map(rel);
    if let Some(plate) = &mut s.plate {
        plate.relearn_file = plate.relearn_file.take().map(rel);
    }
    if let Some(seg) = &mut s.segment {
        seg.model = rel(std::mem::take(&mut seg.model));
    }
    s.labels = s.labels.map(rel);
    if let Some(groups) = &mut s.groups {
        groups.file = groups.file.take().map(rel);
    }
    s
}

/// `[engine]` with its paths resolved and `--threads` applied (checked with the pipeline, in
/// [`settle_pipeline`]).
fn settle_engine(mut engine: EngineConfig, o: &Overrides, origin: &Origin) -> EngineConfig {
    engine.library = engine.library.map(|p| origin.rel(p));
    engine.engine_cache = engine.engine_cache.map(|p| origin.rel(p));
    if let Some(t) = o.threads {
        engine.threads = t;
    }
    engine
}

/// `[engine]` and `[pipeline]` checked together (the engine's batch sizes follow the largest
/// batch), with `--workers` and `--batch` applied, and the schedule settings checked.
fn settle_pipeline(
    mut engine: EngineConfig,
    raw: &RawPipelineConfig,
    o: &Overrides,
    origin: &Origin,
) -> Result<(EngineConfig, PipelineConfig, ScheduleSettings), ConfigError> {
    let mut pipeline = raw.pipeline();
    if let Some(w) = o.workers {
        pipeline.workers = w;
    }
    if let Some(b) = o.max_batch {
        pipeline.max_batch = b;
    }
    if pipeline.max_batch == 0 {
        return Err(origin.invalid("`pipeline.max_batch` must be at least 1"));
    }
    engine.validate().map_err(|e| origin.component("", e))?;
    pipeline.validate().map_err(|e| origin.component("", e))?;
    // The engine runs fixed batch sizes up to the largest batch (engine::shapes).
    let shapes = engine
        .shapes(pipeline.max_batch)
        .map_err(|e| origin.component("", e))?;
    engine.batch_sizes = Some(shapes.sizes().to_vec());
    if pipeline.queue == 0 {
        return Err(origin.invalid("`pipeline.queue` must be at least 1"));
    }
    // The schedule's settings do not depend on the plan: checked here, once (a budget without
    // `fps` is checked against the source's rate when the run opens it).
    let schedule = ScheduleSettings::new(raw.schedule, raw.per_frame, raw.budget, raw.fps)
        .map_err(|e| origin.component("", e))?;
    Ok((engine, pipeline, schedule))
}

/// A run directory no earlier run wrote: `<parent>/<stem>-<YYYYMMDD-HHMMSS>` (UTC, from `unix`),
/// with `-2`, `-3`, … added while that exists, so a run without `--out` never overwrites another.
fn fresh_run_dir(parent: &Path, stem: &str, unix: u64) -> PathBuf {
    // `2026-11-26T01:54:00Z` → `20261126-015400`.
    let stamp: String = crate::duration::utc(unix)
        .chars()
        .filter_map(|c| match c {
            'T' => Some('-'),
            '0'..='9' => Some(c),
            _ => None,
        })
        .collect();
    let base = parent.join(format!("{stem}-{stamp}"));
    let mut dir = base.clone();
    let mut n = 1;
    while dir.exists() {
        n += 1;
        dir = PathBuf::from(format!("{}-{n}", base.display()));
    }
    dir
}

/// How long the run may go (`duration`, `--duration`) and where it writes (`out`, `--out`, else a
/// fresh `runs/<config file stem>-<UTC time>`, [`fresh_run_dir`]), with `jpeg_after_corruption`
/// checked.
fn settle_run_limits(
    raw: &RawConfig,
    o: &Overrides,
    origin: &Origin,
    file: Option<&Path>,
) -> Result<(Option<std::time::Duration>, PathBuf), ConfigError> {
    let duration = match (o.duration, &raw.duration) {
        (Some(d), _) => Some(d),
        (None, Some(text)) => Some(
            crate::duration::parse_duration(text)
                .map_err(|m| origin.component("`duration`: ", m))?,
        ),
        (None, None) => None,
    };
    let out = match (&o.resume, &o.out, &raw.out) {
        (Some(r), Some(d), _) if r != d => {
            return Err(origin.invalid(&format!(
                "--resume {} and --out {} name two run directories; --resume DIR is the run \
                 directory, drop --out",
                r.display(),
                d.display()
            )));
        }
        (Some(d), _, _) => d.clone(),
        (None, o_out, raw_out) => match (o_out, raw_out) {
            (Some(d), _) => d.clone(),
            (None, Some(d)) => origin.rel(d.clone()),
            (None, None) => {
                let stem = file
                    .and_then(|f| f.file_stem())
                    .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned());
                let unix = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                fresh_run_dir(Path::new("runs"), &stem, unix)
            }
        },
    };
    // A limit of 0 would read nothing and end "complete" with an empty summary.
    match (o.limit, raw.limit) {
        (Some(0), _) => {
            return Err(origin.invalid(
                "--limit 0 evaluates nothing; give 1 or more source items, or leave --limit out \
                 to read the whole source",
            ));
        }
        (None, Some(0)) => {
            return Err(origin.invalid(
                "`limit = 0` evaluates nothing; give 1 or more source items, or remove `limit` \
                 to read the whole source",
            ));
        }
        _ => {}
    }
    if let Some(q) = raw.jpeg_after_corruption
        && !(1..=100).contains(&q)
    {
        return Err(origin
            .invalid("`jpeg_after_corruption` is a JPEG quality, 1..=100 (ImageNet-C used 85)"));
    }
    Ok((duration, out))
}

/// `[challenge]` and `[saliency]` with `--challenge`, `--saliency` and `--saliency-maps` applied,
/// checked.
fn settle_post_passes(
    mut challenge: crate::app::challenge::ChallengeConfig,
    mut saliency: crate::app::saliency::SaliencyConfig,
    o: &Overrides,
    origin: &Origin,
) -> Result<
    (
        crate::app::challenge::ChallengeConfig,
        crate::app::saliency::SaliencyConfig,
    ),
    ConfigError,
> {
    challenge.enabled |= o.challenge;
    challenge.validate().map_err(|e| origin.component("", e))?;
    saliency.maps |= o.saliency_maps;
    saliency.enabled |= o.saliency || o.saliency_maps;
    saliency.validate().map_err(|e| origin.component("", e))?;
    Ok((challenge, saliency))
}

impl MetricsConfig {
    /// Reads the `[metrics]` input files (paths relative to the config file), so a bad file fails
    /// the load, naming the key.
    fn read(raw: RawMetricsConfig, origin: &Origin) -> Result<Self, ConfigError> {
        let ximagenet_inner = match raw.ximagenet_inner.map(|p| origin.rel(p)) {
            Some(path) => Some(
                crate::metrics::volatility::InnerResults::read(&path)
                    .map_err(|e| origin.component("[metrics] ximagenet_inner: ", e))?,
            ),
            None => None,
        };
        let ce_baseline = match raw.ce_baseline.map(|p| origin.rel(p)) {
            Some(path) => Some(
                crate::metrics::imagenet_c::BaselineTable::read(&path).map_err(|e| {
                    use crate::metrics::imagenet_c::TableErrorKind;
                    let hint = match e.kind {
                        TableErrorKind::Read => "; the path is relative to the config file",
                        _ => "; the format is that of configs/imagenet_c_alexnet.toml",
                    };
                    origin.component_with("[metrics] ce_baseline: ", e, hint)
                })?,
            ),
            None => None,
        };
        Ok(Self {
            ximagenet_inner,
            ce_baseline,
        })
    }
}

/// Removes `.` and resolves `..` against the preceding component, without touching the file system
/// (`configs/../assets/x` → `assets/x`), so reports show the paths a user would type.
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    }
}

/// The toml crate's multi-line messages (with a source excerpt) folded onto one line, the user
/// text they quote bounded ([`crate::quote`]): the source line and its `^^^` marker, and
/// backticked names.
fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "|")
        .map(|l| {
            let gutter = l.trim_start_matches(|c: char| c.is_ascii_digit());
            match gutter.trim_start().starts_with('|') {
                // `12 | the line as written` or `| ^^^`.
                true => crate::quote::clip(l).into_owned(),
                false => crate::quote::clip_backticked(l),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
