//! Unit tests of the pipeline's core (admission, workers, engine thread, collector) on a stub
//! engine and sources fed from memory, so that each outcome follows from the pipeline's structure,
//! not from this machine's speed. End-to-end tests (`tests/`) keep the real engine.
//!
//! - `admission`: an offline source loses nothing whatever the engine's pace, and its frames are
//!   released in source order with several workers; a live source whose workers are held keeps
//!   the newest waiting frame (`oldest`), the first one (`newest`) or waits (`never`), each drop an
//!   `Event::Dropped` counted in `Outcome::frames_dropped`; a stop drops the waiting frame.
//! - `shutdown`: an engine failing on its n-th batch, or in its warm-up on the engine thread, ends
//!   the run as `Failed` with the engine's line and every thread returns; the stop flag ends it as
//!   `Interrupted` with every frame read finished.
//! - `order`: the engine thread and the collector on hand-built batches whose frames complete out
//!   of source order (and a row given up, as padding).
//! - `batches`: the per-batch records (`Event::Batch`): warm-up rounds first, rows adding up to the
//!   records, each batch's calls as the engine ran them and shape changes as
//!   `metrics::batches::Call::sequence` defines them.
//!
//! A held engine (`StubEngine::gate`) and a fed source (`GatedSource`) say what they are doing
//! (a batch started, an item asked for), and the tests wait for that; every wait is bounded by
//! [`GUARD`] only so that a broken pipeline fails the test instead of hanging it.

mod admission;
mod batches;
mod order;
mod shutdown;
mod stub;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use image::{Rgb, RgbImage};

use super::{Event, Outcome, PipelineConfig, PipelineInputs};
use crate::classmap::ClassMap;
use crate::frame::Frame;
use crate::model::ModelDesc;
use crate::scenario::ScenarioStage;
use crate::scenario::schedule::Spread;
use crate::scenario::{Catalog, Plan};
use crate::source::Source;
use stub::{StubEngine, class_value};

/// The longest any test waits for something that must happen: a deadlock guard, never a measure.
const GUARD: Duration = Duration::from_secs(20);

/// The side of the tests' frames and of the model's input.
const SIDE: u32 = 8;

/// A 3-class model (logits) with an 8×8 input taken as it is: scale 1, mean 0, std 1, so a row's
/// values are the pixel values. Its ONNX file is never loaded.
fn tiny_model() -> ModelDesc {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("labels.txt"), "a\nb\nc\n").unwrap();
    let path = dir.path().join("m.toml");
    let desc = format!(
        "onnx = \"m.onnx\"\nlabels = \"labels.txt\"\n[input]\nname = \"x\"\nlayout = \"nchw\"\n\
         height = {SIDE}\nwidth = {SIDE}\n[preprocess]\nresize_shorter = {SIDE}\ncrop = \"center\"\n\
         mean = [0.0, 0.0, 0.0]\nstd = [1.0, 1.0, 1.0]\n[output]\nname = \"y\"\n\
         kind = \"logits\"\nclasses = {}\n",
        stub::CLASSES
    );
    std::fs::write(&path, desc).unwrap();
    ModelDesc::load(&path).unwrap()
}

/// Frame `k`: `f<k>`, one colour that the stub engine scores as class `k % 3`.
fn frame(k: usize) -> Frame {
    let v = class_value(k % stub::CLASSES);
    Frame::new(
        format!("f{k}"),
        0,
        RgbImage::from_pixel(SIDE, SIDE, Rgb([v; 3])),
    )
}

/// `clean` and three cheap corruptions: 4 variants per frame, one more than the batch buffers, so
/// with batches of one row a single frame's variants fill every buffer while the engine is held.
fn plan4() -> Plan {
    let items = [
        "corruption/brightness/1",
        "corruption/contrast/1",
        "corruption/brightness/2",
    ];
    let plan = Plan::from_items(&items, &Catalog::builtin()).unwrap();
    assert_eq!(plan.len(), super::assembly::BUFFERS + 1);
    plan
}

/// `workers` workers, batches of up to `max_batch` rows, a 1 ms batching deadline.
fn config(workers: usize, max_batch: usize) -> PipelineConfig {
    PipelineConfig {
        workers,
        max_batch,
        max_wait_ms: 1,
        ..PipelineConfig::default()
    }
}

/// A run of `plan` over `source` on `engine`, with no warm-up on the engine thread.
fn inputs(
    source: Box<dyn Source>,
    engine: StubEngine,
    plan: Plan,
    config: PipelineConfig,
) -> PipelineInputs {
    let model = tiny_model();
    let schedule = Spread::default().schedule(plan.len(), 0);
    PipelineInputs {
        source,
        schedule,
        plan,
        class_map: ClassMap::identity(&model.labels),
        model,
        engine: Box::new(engine),
        seed: 7,
        stage: ScenarioStage::ModelInput,
        config,
        strict: false,
        limit: None,
        flips: None,
        gpu: None,
        select: None,
        engine_thread_warmup: 0,
    }
}

/// A finished run: its outcome and every event the sink was given, in order.
struct Ran {
    outcome: Outcome,
    events: Vec<Event>,
}

/// A run going on on its own thread.
struct Running(crossbeam_channel::Receiver<Ran>);

/// Starts `inputs` on a thread of its own, `hook` seeing each event before it is kept (on the
/// pipeline's collector thread, as the sink does).
fn start(
    inputs: PipelineInputs,
    stop: Arc<AtomicBool>,
    mut hook: impl FnMut(&Event) + Send + 'static,
) -> Running {
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut events = Vec::new();
        let mut sink = |e: Event| -> Result<(), super::SinkError> {
            hook(&e);
            events.push(e);
            Ok(())
        };
        let outcome = super::run(inputs, &stop, &mut sink);
        let _ = tx.send(Ran { outcome, events });
    });
    Running(rx)
}

impl Running {
    /// The finished run; a panic when it has not finished within [`GUARD`] (a hang).
    fn finish(self) -> Ran {
        self.0
            .recv_timeout(GUARD)
            .expect("the pipeline did not return: a stage is stuck")
    }
}

/// Runs `inputs` to its end without a stop.
fn run(inputs: PipelineInputs) -> Ran {
    start(inputs, Arc::new(AtomicBool::new(false)), |_| {}).finish()
}

/// The events that are tied to source positions, as short words: `f3` for frame `f3`'s records,
/// `dropped`, `skipped`, … (batches and ticks left out).
fn story(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(records) => Some(records[0].frame.clone()),
            Event::Dropped => Some("dropped".into()),
            Event::Skipped(_) => Some("skipped".into()),
            Event::VariantFailed(_) => Some("variant failed".into()),
            Event::Lost(n, _) => Some(format!("lost {n}")),
            Event::Passed(n) => Some(format!("passed {n}")),
            Event::Tick | Event::Batch(_) => None,
        })
        .collect()
}

/// The Event::Dropped count.
fn dropped(events: &[Event]) -> u64 {
    events
        .iter()
        .filter(|e| matches!(e, Event::Dropped))
        .count() as u64
}
