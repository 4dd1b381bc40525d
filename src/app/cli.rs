//! The command line: `run`, `apply`, `preview`, `scenarios`, `report`, `compare`, `bench`.
//!
//! Every value a flag chooses from a fixed set is an enum here deriving [`ValueEnum`] (its
//! variants' names and doc comments are the flag's values and their help), with `From` into the
//! library's own type, which does not depend on clap (docs/ARCHITECTURE.md#rules-of-the-house).
//! `run`'s arguments are the run's overrides as they are (`config::Overrides` in `config.rs`): a flag of
//! `run` is a field of [`RunArgs`] and its use in `config.rs`.

use std::path::PathBuf;

use clap::builder::{EnumValueParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};

/// Streaming robustness evaluation of image classifiers.
#[derive(Debug, Parser)]
#[command(name = "robustream", version, about, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate a model on a source under a plan of scenarios.
    Run(RunArgs),
    /// Apply one scenario to one image and write the result as PNG.
    Apply(ApplyArgs),
    /// Draw a labelled contact sheet of scenarios on one image (rows = families, columns = clean +
    /// severities) as PNG.
    Preview(PreviewArgs),
    /// List every scenario key and group.
    Scenarios,
    /// Recompute a run's summary from its records.jsonl.
    Report(ReportArgs),
    /// Merge the shard runs of one sharded run (`run --shard I/N`) into the run directory one
    /// unsharded run writes: records, summary, post passes and reports.
    Merge(MergeArgs),
    /// Compare a candidate run with a baseline run (or a baseline summary.json): per-scenario
    /// differences with intervals (paired McNemar on the same frames), per-metric differences, and
    /// a --fail-on gate for CI (exit 3 when a rule fires, 4 when one cannot be checked).
    Compare(CompareArgs),
    /// Latency benchmark of a model: throughput, latency percentiles, per-stage breakdown
    /// (trtexec's figures) in MLPerf's single-stream, multi-stream or offline framing, or paced at a
    /// camera's frame rate.
    Bench(BenchArgs),
    /// List the labels truths are given in (index and name): the model's classes, or a class map's
    /// dataset labels. For `[source] label`, sidecar label files and manifests.
    Labels(LabelsArgs),
    /// List the V4L2 cameras (/dev/video*): driver, card, and each format's fourcc, frame sizes and
    /// frame rates, for `--source /dev/videoN` and `[source.camera]`.
    Devices(DevicesArgs),
}

/// `robustream devices`.
#[derive(Debug, clap::Args)]
pub struct DevicesArgs {
    /// Print the list as JSON (an array, `[]` when there are none).
    #[arg(long)]
    pub json: bool,
}

/// `robustream labels`.
#[derive(Debug, clap::Args)]
pub struct LabelsArgs {
    /// Model description TOML.
    #[arg(long)]
    pub model: PathBuf,
    /// Class map JSON (model classes → dataset labels): list its dataset labels instead.
    #[arg(long)]
    pub class_map: Option<PathBuf>,
    /// Only labels containing this text (case-insensitive).
    #[arg(long)]
    pub find: Option<String>,
}

/// `robustream merge` (docs/deploy.md#merge).
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shard runs' directories (each shard's --out), every shard 0..N-1 once, in any order.
    #[arg(required = true, value_name = "RUN_DIR")]
    pub run_dirs: Vec<PathBuf>,
    /// The merged run's directory (new or empty).
    #[arg(long, value_name = "MERGED")]
    pub out: PathBuf,
    /// Write into a non-empty --out, replacing the merged run's files there.
    #[arg(long)]
    pub force: bool,
    /// No line on stderr when done.
    #[arg(long)]
    pub quiet: bool,
}

/// `robustream run`; also the run's overrides, read by `RunConfig::load` in `config.rs` (each flag
/// replaces or sets a config value; `--config` and `--quiet` are the binary's). The fields a
/// value enum chooses hold the library's type, converted as the flag is parsed.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// Run configuration (TOML); optional when --model and --source are given.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Model description TOML (overrides `model`).
    #[arg(long)]
    pub(crate) model: Option<PathBuf>,
    /// Image folder, manifest .csv, single image, video file, stream URL (`rtsp://…`, `http://…`,
    /// `udp://…`), camera (`/dev/video0` or `camera:0`; `robustream devices` lists them), or
    /// `synthetic:WxH@FPS/N` (the synthetic camera). Replaces the `[source]` path, kind, classes and
    /// truth (`label`/`labels`); its `[source.plate]` / `[source.segment]` mask source stays, and so
    /// does `[source.video]` / `[source.camera]` when the new source is of that kind.
    #[arg(long)]
    pub(crate) source: Option<PathBuf>,
    /// What the source is (overrides `[source] kind`): `folder`, `manifest`, `image`, `imagenet-c`
    /// (the released `<corruption>/<severity>/<wnid>/` layout), `in9` (the IN-9 release; also
    /// detected), `synthetic`, `video` or `camera`. Default: detected from the path.
    #[arg(long, value_parser = value_enum::<SourceKindArg, crate::source::SourceKind>())]
    pub(crate) source_kind: Option<crate::source::SourceKind>,
    /// `imagenet-c` sources: the clean ImageNet validation images (wnid folders), evaluated under
    /// `clean` for relative mCE (overrides `[source] clean`).
    #[arg(long)]
    pub(crate) clean: Option<PathBuf>,
    /// Class map JSON, model classes → dataset labels (overrides `[dataset] class_map`). An `in9`
    /// source scored by a 1000-class model uses the built-in ImageNet → IN-9 map without it.
    #[arg(long)]
    pub(crate) class_map: Option<PathBuf>,
    /// Comma-separated scenario keys, groups or `prefix/*` (overrides `scenarios`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) scenarios: Option<Vec<String>>,
    /// Run directory (overrides `out`); without either, a fresh `runs/<config name>-<UTC time>`.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Seed of the keyed scenario randomness (overrides `seed`).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Stop after N source items.
    #[arg(long)]
    pub(crate) limit: Option<u64>,
    /// Evaluate shard I of N (0-based) of the source: the frames whose id hashes to I, with the
    /// whole run's frame ids, positions and keyed randomness, so `robustream merge` of the N shard
    /// runs equals one run. Without it: `ROBUSTREAM_SHARD`, a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` (+ `ROBUSTREAM_SHARDS`) or a Slurm array's `SLURM_ARRAY_TASK_*`;
    /// `--shard 0/1` evaluates everything.
    #[arg(long, value_name = "I/N")]
    pub(crate) shard: Option<String>,
    /// Continue the run in DIR (the run directory, as --out) where a killed or pre-empted run left
    /// it: only the frames without complete records are evaluated, and the summary is the one an
    /// uninterrupted run writes. An absent or empty DIR starts the run there.
    #[arg(long, value_name = "DIR")]
    pub(crate) resume: Option<PathBuf>,
    /// Pace a video file at its native frame rate (from the frames' timestamps), or the synthetic
    /// camera at its fps, like a live camera: a slow pipeline then drops frames by
    /// `[pipeline] drop` (sets `[source.video] realtime` / `[source.synthetic] realtime`).
    #[arg(long)]
    pub(crate) realtime: bool,
    /// Stop after this long (`90`, `90s`, `15m`, `1h`): a soak run on an endless source. The
    /// frames in flight finish and the summary is written; exit code 0.
    #[arg(long, value_parser = crate::duration::parse_duration)]
    pub(crate) duration: Option<std::time::Duration>,
    /// Make any bad input fatal instead of skipping it.
    #[arg(long)]
    pub(crate) strict: bool,
    /// Scenario/preprocess worker threads (0 = one per core).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// ONNX Runtime intra-op threads (0 = its default).
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Largest inference batch.
    #[arg(long = "batch", value_name = "BATCH")]
    pub(crate) max_batch: Option<usize>,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
    /// Progress display: `auto` (the live terminal view when stderr is a terminal), `live` or
    /// `plain` (a bar or plain lines); overrides `[report] view`.
    #[arg(long, value_parser = value_enum::<ViewArg, crate::report::tui::ViewMode>())]
    pub(crate) view: Option<crate::report::tui::ViewMode>,
    /// After the main pass, run the adversarial-background challenge on the frames with a mask and
    /// a truth (sets `challenge.enabled`; bounds in `[challenge]`; cost ≤ foregrounds × backgrounds
    /// inferences).
    #[arg(long)]
    pub(crate) challenge: bool,
    /// After the main pass, measure occlusion saliency against the masks (sets `saliency.enabled`;
    /// about 170 inferences per frame at 224² with the default patch and stride).
    #[arg(long)]
    pub(crate) saliency: bool,
    /// With the saliency pass, also write each frame's map as `saliency/<n>.png` in the run
    /// directory (implies --saliency).
    #[arg(long)]
    pub(crate) saliency_maps: bool,
    /// One truth for every frame, a class name, alias or index (`robustream labels` lists them);
    /// overrides `[source] label`.
    #[arg(long, value_name = "CLASS")]
    pub(crate) label: Option<String>,
    /// A sidecar labels CSV keyed by `frame` or `time` (docs/sources.md#labels-on-a-stream);
    /// overrides `[source] labels`.
    #[arg(long, value_name = "FILE")]
    pub(crate) labels: Option<PathBuf>,
    /// Serve live Prometheus metrics at http://ADDR/metrics during the run (e.g. 127.0.0.1:9898;
    /// port 0 picks a free one, printed on stderr); overrides `[report] prometheus`.
    #[arg(long, value_name = "ADDR")]
    pub(crate) prometheus: Option<String>,
    /// Keep the Prometheus endpoint up this long after the run, serving the final figures, so a
    /// scraper on a 15 s interval sees a short run (e.g. 30s); overrides `[report] linger`.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse_duration)]
    pub(crate) linger: Option<std::time::Duration>,
    /// A label of this device for `robustream_run_info` and summary.json's `run.labels`, e.g.
    /// `--run-label line=3` (repeatable; replaces `[report] labels`' value of that name). `device`
    /// (default: the host name) and `camera` may be set; names are `[a-zA-Z_][a-zA-Z0-9_]*`
    /// (docs/prometheus.md#fleets).
    #[arg(long = "run-label", value_name = "KEY=VALUE", value_parser = crate::report::fleet::parse_assignment)]
    pub(crate) run_labels: Vec<(String, String)>,
}

/// The parser of a flag whose values are the cli enum `A`'s, giving the library's type `T` (the
/// possible values and their help are `A`'s, as with `value_enum`).
fn value_enum<A, T>() -> impl TypedValueParser<Value = T>
where
    A: ValueEnum + Clone + Send + Sync + 'static,
    T: From<A> + Clone + Send + Sync + 'static,
{
    EnumValueParser::<A>::new().map(T::from)
}

/// `--source-kind` of `robustream run`: a `[source] kind`, spelled as in the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SourceKindArg {
    /// An ImageFolder tree `root/<class>/<image>`.
    Folder,
    /// A CSV manifest (`path,label[,mask,boxes,annotation]`).
    Manifest,
    /// One image file.
    Image,
    /// The released ImageNet-C layout `root/<corruption>/<severity>/<wnid>/<image>`.
    #[value(name = "imagenet-c")]
    ImagenetC,
    /// The IN-9 release `root/<variation>/val/<NN_class>/<image>` (+ `fg_mask`).
    In9,
    /// The synthetic camera (`[source.synthetic]`, or `--source synthetic:WxH@FPS/N`).
    Synthetic,
    /// A video file or network stream (FFmpeg; `[source.video]`).
    Video,
    /// A V4L2 camera, `--source` being its device (`[source.camera]`).
    Camera,
    /// A GStreamer pipeline, `--source` being the chain (`gst:` may be left out;
    /// `[source.gstreamer]`).
    Gstreamer,
    /// A GigE Vision / USB3 Vision camera through Aravis, `--source` being its id, serial or
    /// address (`genicam://` may be left out; `[source.genicam]`).
    Genicam,
}

impl From<SourceKindArg> for crate::source::SourceKind {
    fn from(k: SourceKindArg) -> Self {
        match k {
            SourceKindArg::Folder => Self::Folder,
            SourceKindArg::Manifest => Self::Manifest,
            SourceKindArg::Image => Self::Image,
            SourceKindArg::ImagenetC => Self::ImagenetC,
            SourceKindArg::In9 => Self::In9,
            SourceKindArg::Synthetic => Self::Synthetic,
            SourceKindArg::Video => Self::Video,
            SourceKindArg::Camera => Self::Camera,
            SourceKindArg::Gstreamer => Self::Gstreamer,
            SourceKindArg::Genicam => Self::Genicam,
        }
    }
}

/// `--view` of `robustream run`: a `[report] view`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ViewArg {
    /// The live view when stderr is a terminal (and not `--quiet`), else plain progress lines.
    Auto,
    /// The live view (falls back to plain lines when stderr is not a terminal).
    Live,
    /// A progress bar on a terminal, plain lines otherwise.
    Plain,
}

impl From<ViewArg> for crate::report::tui::ViewMode {
    fn from(v: ViewArg) -> Self {
        match v {
            ViewArg::Auto => Self::Auto,
            ViewArg::Live => Self::Live,
            ViewArg::Plain => Self::Plain,
        }
    }
}

/// `robustream apply`.
#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// Scenario key, e.g. `corruption/contrast/3`; or a group or `prefix/*` (e.g.
    /// `imagenet-c/noise`): then OUTPUT is a folder that gets one PNG per key (`/` written as `_`).
    #[arg(long)]
    pub scenario: String,
    /// Run seed (as in `robustream run --seed`).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Foreground mask (PNG 0/255 or .npy 0/1) of the input's size.
    #[arg(long)]
    pub mask: Option<PathBuf>,
    /// Object boxes, normalised xyxy: `"x0 y0 x1 y1;x0 y0 x1 y1"` (as a manifest's `boxes` column).
    /// Without boxes, scenarios get the mask's tight box.
    #[arg(long, conflicts_with = "annotation")]
    pub boxes: Option<String>,
    /// Object boxes from a Pascal VOC XML annotation of the input (as a manifest's `annotation`).
    #[arg(long)]
    pub annotation: Option<PathBuf>,
    /// Frame id keying the randomness; default: the input's file name (what a single-image source
    /// uses; folder and manifest sources use the path relative to their root).
    #[arg(long)]
    pub frame_id: Option<String>,
    /// Model description: first bring the image to the model's view (resize + crop), as a run with
    /// `stage = "model_input"` (the default) does; without it the image is used as it is.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Store corruption outputs as JPEG at this quality, as a run with `jpeg_after_corruption` does
    /// (ImageNet-C's released images: 85).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub jpeg_after_corruption: Option<u8>,
    /// A background for the pool scenarios (`background/mixed_*`, `background/random_bg_*`,
    /// `placement/other/…`), repeatable: `IMG[:CLASS]` (mask `<stem>.mask.png|npy` next to it if any:
    /// its Only-BG-T, the whole image for `random_bg_add|paste`; without one the whole image) or a
    /// manifest `.csv` (`path,label,mask,boxes`).
    #[arg(long = "background", value_name = "IMG[:CLASS]|CSV")]
    pub backgrounds: Vec<String>,
    /// The input's class (index, or with --model a label name), as a run's truth: `mixed_same` draws
    /// a background of this class, `mixed_next` of the next, `placement/other` of another.
    #[arg(long)]
    pub class: Option<String>,
    /// Input image.
    pub input: PathBuf,
    /// Output image: its extension picks a lossless format (.png, .bmp, .tiff, .webp; none = PNG;
    /// .jpg is refused); a folder for a group.
    pub output: PathBuf,
}

/// `robustream preview`.
#[derive(Debug, clap::Args)]
pub struct PreviewArgs {
    /// Input image.
    #[arg(long)]
    pub image: PathBuf,
    /// Scenario keys, groups or `prefix/*`, comma-separated or repeated (e.g. `imagenet-c-all`).
    #[arg(long, value_delimiter = ',', required = true)]
    pub scenarios: Vec<String>,
    /// Output PNG.
    #[arg(long)]
    pub out: PathBuf,
    /// Model description: apply scenarios to the model's view (resize + crop), as a run does by
    /// default; without it the image is used as it is.
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// With --model: where scenarios apply, as a run's `stage` (`native`: on the full frame, shown as
    /// the model's view of the result).
    #[arg(long, value_enum, requires = "model", default_value = "model_input")]
    pub stage: StageArg,
    /// Foreground mask (PNG 0/255 or .npy 0/1) of the image's size; drawn as an outline in a corner
    /// panel and given to the scenarios.
    #[arg(long)]
    pub mask: Option<PathBuf>,
    /// Object boxes, normalised xyxy `"x0 y0 x1 y1;..."` (as `apply --boxes`); drawn in the corner
    /// panel. Without boxes, scenarios get the mask's tight box.
    #[arg(long, conflicts_with = "annotation")]
    pub boxes: Option<String>,
    /// Object boxes from a Pascal VOC XML annotation of the image (as `apply --annotation`).
    #[arg(long)]
    pub annotation: Option<PathBuf>,
    /// Run seed (as in `robustream run --seed`).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Frame id keying the randomness; default: the image's file name (as `robustream apply`).
    #[arg(long)]
    pub frame_id: Option<String>,
    /// Tile size in pixels (each variant scaled to fit, aspect ratio kept).
    #[arg(long, default_value_t = crate::app::preview::DEFAULT_TILE, value_parser = clap::value_parser!(u32).range(16..=1024))]
    pub tile: u32,
    /// Store corruption outputs as JPEG at this quality, as a run with `jpeg_after_corruption` does.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub jpeg_after_corruption: Option<u8>,
    /// A background for the pool scenarios, repeatable (as `apply --background`: `IMG[:CLASS]` or a
    /// manifest `.csv`); without any, their tiles are grey.
    #[arg(long = "background", value_name = "IMG[:CLASS]|CSV")]
    pub backgrounds: Vec<String>,
    /// The image's class (as `apply --class`).
    #[arg(long)]
    pub class: Option<String>,
}

/// `--stage` of `robustream preview`: a run's `stage`, spelled as in the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StageArg {
    /// On the model's view (the default of a run).
    #[value(name = "model_input")]
    ModelInput,
    /// On the native frame, then brought to the model's view.
    Native,
}

impl From<StageArg> for crate::scenario::ScenarioStage {
    fn from(s: StageArg) -> Self {
        match s {
            StageArg::ModelInput => Self::ModelInput,
            StageArg::Native => Self::Native,
        }
    }
}

/// `robustream bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Model description TOML.
    #[arg(long)]
    pub model: PathBuf,
    /// Execution provider.
    #[arg(long, value_enum, default_value = "cpu")]
    pub provider: ProviderArg,
    /// Samples per inference in offline mode, per query in multi-stream (MLPerf's 8); single-stream
    /// and paced always use 1.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// ONNX Runtime intra-op threads (0 = ONNX Runtime's default).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Timed seconds (default 10 unless --iterations is given).
    #[arg(long, conflicts_with = "iterations")]
    pub duration: Option<f64>,
    /// Timed iterations (inferences; queries in multi-stream, issued samples in paced) instead of a
    /// duration.
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Untimed warm-up seconds (at least one iteration runs).
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// How samples are issued: one at a time (`single-stream`, p90 latency), queries of --batch
    /// samples back to back (`multi-stream`, p99 query latency), batches back to back (`offline`,
    /// samples/s), or one sample per frame on a fixed schedule (`paced`, with --fps: p99 latency
    /// from the scheduled issue, late and dropped samples).
    #[arg(long, value_enum, default_value = "single-stream")]
    pub mode: ModeArg,
    /// Paced mode's frame rate: samples issued per second, a finite number above 0 (required with
    /// --mode paced, refused with the other modes).
    #[arg(long, value_name = "FPS", allow_negative_numbers = true)]
    pub fps: Option<String>,
    /// The frame preprocessed for every sample (default: assets/photos/coffee.png, else a procedural
    /// 640×480 scene).
    #[arg(long)]
    pub image: Option<PathBuf>,
    /// ONNX Runtime library (default: ORT_DYLIB_PATH, else the set-up script's copy).
    #[arg(long)]
    pub library: Option<PathBuf>,
    /// Let ONNX Runtime's threads spin between operators (ORT's own default; robustream's runs turn it
    /// off).
    #[arg(long)]
    pub spin: bool,
    /// TensorRT: build fp16 engines.
    #[arg(long)]
    pub fp16: bool,
    /// CUDA: cuDNN's convolution algorithm search at the first run of a shape (`[engine]
    /// cudnn_search`).
    #[arg(long, value_enum, default_value = "heuristic")]
    pub cudnn_search: CudnnSearchArg,
    /// Also write the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// `--provider` of `robustream bench`: an `[engine] provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// ONNX Runtime's CPU provider.
    Cpu,
    /// NVIDIA CUDA.
    Cuda,
    /// NVIDIA TensorRT (engines cached in `engines/`).
    Tensorrt,
}

impl From<ProviderArg> for crate::engine::Provider {
    fn from(p: ProviderArg) -> Self {
        match p {
            ProviderArg::Cpu => Self::Cpu,
            ProviderArg::Cuda => Self::Cuda,
            ProviderArg::Tensorrt => Self::Tensorrt,
        }
    }
}

/// `--mode` of `robustream bench`: how samples are issued (MLPerf's scenarios, and a camera's
/// schedule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// One sample per inference; figure of merit p90 latency.
    SingleStream,
    /// Queries of `--batch` samples (8 by default) back to back; figure of merit p99 query latency.
    MultiStream,
    /// Batches back to back; figure of merit samples per second.
    Offline,
    /// One sample per frame period on a fixed schedule (`--fps`); figure of merit p99 latency from
    /// the scheduled issue, and the dropped and late counts.
    Paced,
}

impl From<ModeArg> for crate::app::bench::Mode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::SingleStream => Self::SingleStream,
            ModeArg::MultiStream => Self::MultiStream,
            ModeArg::Offline => Self::Offline,
            ModeArg::Paced => Self::Paced,
        }
    }
}

/// `--cudnn-search` of `robustream bench`: an `[engine] cudnn_search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CudnnSearchArg {
    /// cuDNN's heuristics (`cudnnGetConvolutionForwardAlgorithm_v7`): fast, near-best.
    Heuristic,
    /// Time every algorithm (`cudnnFindConvolutionForwardAlgorithmEx`): slow start, best kernels.
    Exhaustive,
    /// The default algorithm, no search.
    Default,
}

impl From<CudnnSearchArg> for crate::engine::CudnnSearch {
    fn from(c: CudnnSearchArg) -> Self {
        match c {
            CudnnSearchArg::Heuristic => Self::Heuristic,
            CudnnSearchArg::Exhaustive => Self::Exhaustive,
            CudnnSearchArg::Default => Self::Default,
        }
    }
}

/// Output format of `robustream report`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// Markdown tables.
    Md,
    /// summary.json.
    Json,
    /// One CSV row per scenario.
    Csv,
    /// The self-contained HTML report (report.html: charts, latency, timeline, flipped frames).
    Html,
}

/// `robustream report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Run directory holding records.jsonl (and summary.json).
    pub run_dir: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Normalise CE / mCE / relative mCE by this baseline table (the format of
    /// configs/imagenet_c_alexnet.toml) instead of the run's own (its `[metrics] ce_baseline`, else
    /// AlexNet's): re-reads any recorded run against another model's errors.
    #[arg(long, value_name = "TABLE")]
    pub ce_baseline: Option<PathBuf>,
}

/// Output format of `robustream compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Aligned plain text for a terminal.
    Table,
    /// The JSON of docs/compare.md#json-output.
    Json,
    /// Markdown tables (a CI job summary, a pull-request comment).
    Md,
    /// One self-contained HTML page (inline CSS, no scripts).
    Html,
}

/// `robustream compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline (A): a run directory, or a summary.json file (e.g. checked into the
    /// repository; no records, so no pairing).
    pub baseline: PathBuf,
    /// The candidate (B): a run directory or a summary.json file.
    pub candidate: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: CompareFormat,
    /// Write the output to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Gate rules, comma-separated or repeated: `METRIC[PATTERN]OP NUMBER[%]`, e.g.
    /// `top1_drop>0.02` (top-1 more than 2 points below the baseline's in any scenario),
    /// `top1_drop[corruption/*]>=1%`, `mce>0.01`. Thresholds are fractions as in summary.json, or
    /// points with `%`. Exit 3 when one fires, 4 when one cannot be checked (docs/compare.md#rules).
    #[arg(long = "fail-on", value_name = "RULES")]
    pub fail_on: Vec<String>,
    /// Significance level: a top-1/top-5 rule then fires only where the difference is significant
    /// (paired: exact McNemar p < ALPHA; unpaired: Newcombe's 1 − ALPHA interval excludes 0).
    #[arg(long, value_name = "ALPHA", value_parser = parse_alpha)]
    pub alpha: Option<f64>,
}

/// `--alpha`: a number strictly between 0 and 1.
fn parse_alpha(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "`{text}` is not a significance level; give a number between 0 and 1, e.g. 0.05"
        )),
    }
}
