//! The workers: each frame is prepared once (its model view, mask and boxes at the scenario stage)
//! and its scheduled scenarios become tasks that every worker takes, oldest frame first. A worker
//! takes a new frame from admission only when no task is waiting, so the variants of one frame
//! spread over all workers (the scenario kernels' own row parallelism is a bonus, not what keeps
//! the cores busy) and frames are started no faster than they can be worked on.
//!
//! A task applies its scenario (keyed randomness: `RngKey(seed, frame id, scenario)`), takes the
//! model view of a native-stage variant, and normalises the result straight into a row of a batch
//! buffer ([`super::assembly`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, select};
use image::RgbImage;

use super::admission::Admitted;
use super::assembly::Assembler;
use super::gpu::GpuWorker;
use super::{FrameMeta, Message, Shared, ms};
use crate::frame::{BBox, Frame};
use crate::model::ModelDesc;
use crate::preprocess::Normalizer;
use crate::rng::RngKey;
use crate::scenario::schedule::Schedule;
use crate::scenario::stage::{ScenarioStage, at_stage};
use crate::scenario::{Plan, PoolView, ScenarioInput, StageMasks, needs_bilinear_mask};
use crate::view::ModelView;

/// What a batch row carries to the engine thread besides its values.
pub(super) struct RowMeta {
    pub(crate) meta: Arc<FrameMeta>,
    /// Plan index.
    pub(crate) scenario: usize,
    pub(crate) scenario_ms: f64,
    pub(crate) preprocess_ms: f64,
    /// When the row was ready to be written (the `queue` stage runs from here to inference).
    pub(crate) queued: Instant,
    /// The frame's boxes at the scenario stage, normalised xyxy, on the `clean` variant only
    /// (`Record::boxes`, for the centre and size scores).
    pub(crate) boxes: Option<Vec<[f32; 4]>>,
}

/// A frame ready for its scenarios: its pixels, masks and boxes at the scenario stage.
pub(super) struct Prepared {
    meta: Arc<FrameMeta>,
    /// The frame at the scenario stage; shared with the report's thumbnail keeper until the
    /// frame's records are in.
    base: Arc<RgbImage>,
    masks: StageMasks,
    boxes: Vec<BBox>,
    pool: Option<Arc<PoolView>>,
    /// Time of the model view of the frame (and its regions), added to the clean variant's
    /// `preprocess`.
    geometry_ms: f64,
}

/// One scenario of one prepared frame.
pub(super) type Task = (Arc<Prepared>, usize);

/// What every worker shares.
pub(super) struct Setup<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) schedule: &'a Schedule,
    pub(crate) model: &'a ModelDesc,
    pub(crate) stage: ScenarioStage,
    pub(crate) seed: u64,
    /// A live source's frames still waiting at a stop are dropped rather than started.
    pub(crate) drop_on_stop: bool,
    /// Where each frame's image at the scenario stage is offered for the report's thumbnails.
    pub(crate) flips: Option<&'a crate::report::flips::FlipKeeper>,
    /// The GPU making the variants it has kernels for; each worker opens a stream on it.
    pub(crate) gpu: Option<&'a Arc<crate::gpu::Device>>,
    pub(crate) assembler: &'a Assembler<RowMeta>,
    pub(crate) shared: &'a Shared<'a>,
}

/// One worker's ends of the queues.
pub(super) struct Queues {
    pub(crate) frames: Receiver<Admitted>,
    pub(crate) tasks: (Sender<Task>, Receiver<Task>),
    pub(crate) msg: Sender<Message>,
}

/// How long a worker with nothing to do waits for another worker's frame to become tasks once
/// the source has ended.
const TAIL_POLL: Duration = Duration::from_millis(1);

struct Worker<'a> {
    setup: &'a Setup<'a>,
    q: Queues,
    view: ModelView,
    norm: Normalizer,
    /// This worker's stream on the run's GPU.
    gpu: Option<GpuWorker>,
}

/// A worker's loop, until the source has ended and no work is left (or the run halts on an
/// error). The last worker out closes the batch assembly so the engine flushes the last batch.
pub(super) fn run(setup: &Setup, q: Queues) {
    // Counted out on every exit, a panic's unwinding included, so the engine thread never waits
    // for a worker that is gone.
    struct Leaving<'a>(&'a Setup<'a>);
    impl Drop for Leaving<'_> {
        fn drop(&mut self) {
            if self.0.shared.workers_left.fetch_sub(1, Ordering::SeqCst) == 1 {
                self.0.assembler.close();
            }
        }
    }
    let _leaving = Leaving(setup);
    let gpu = match setup
        .gpu
        .map(|d| GpuWorker::open(d, setup.model, setup.stage))
        .transpose()
    {
        Ok(g) => g,
        Err(e) => {
            let _ = q.msg.send(Message::Fatal(format!("GPU: {e}")));
            return;
        }
    };
    let mut w = Worker {
        setup,
        q,
        view: ModelView::new(setup.model),
        norm: Normalizer::new(setup.model),
        gpu,
    };
    w.work();
}

impl Worker<'_> {
    fn work(&mut self) {
        let shared = self.setup.shared;
        loop {
            if shared.fatal.load(Ordering::Relaxed) {
                return;
            }
            // Tasks of frames already started come first.
            if let Ok(task) = self.q.tasks.1.try_recv() {
                if !self.variant(task) {
                    return;
                }
                continue;
            }
            let tasks = self.q.tasks.1.clone();
            let frames = self.q.frames.clone();
            let go_on = select! {
                recv(tasks) -> task => task.map_or(true, |t| self.variant(t)),
                recv(frames) -> frame => match frame {
                    Ok(admitted) => self.frame(admitted),
                    Err(_) => {
                        // The source has ended and its frames are all taken: done once no
                        // other worker is still turning one into tasks and none is left.
                        if shared.unprepared.load(Ordering::SeqCst) == 0 && tasks.is_empty() {
                            return;
                        }
                        match tasks.recv_timeout(TAIL_POLL) {
                            Ok(t) => self.variant(t),
                            Err(_) => true,
                        }
                    }
                },
            };
            if !go_on {
                return;
            }
        }
    }

    /// Starts on an admitted frame: prepares it and queues its tasks, running the first itself.
    /// `false` when the run is ending.
    fn frame(&mut self, admitted: Admitted) -> bool {
        let Admitted { frame, pool } = admitted;
        let setup = self.setup;
        let shared = setup.shared;
        let wait_ms = ms(frame.captured);
        // This frame counts as unprepared until its tasks are queued (see `work`'s end
        // condition); the guard counts it out on every path, unwinding included.
        struct Preparing<'a>(&'a Shared<'a>);
        impl Drop for Preparing<'_> {
            fn drop(&mut self) {
                self.0.unprepared.fetch_sub(1, Ordering::SeqCst);
            }
        }
        let preparing = Preparing(shared);
        if setup.drop_on_stop && shared.stop.load(Ordering::Relaxed) {
            drop(preparing);
            return self.q.msg.send(Message::Dropped { seq: frame.seq }).is_ok();
        }
        let chosen = match frame.variant {
            Some(_) => Vec::new(),
            None => setup.schedule.indices(frame.seq, &frame.id),
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
            wait_ms,
            groups: frame.groups.clone(),
        });
        if let Some(key) = frame.variant.as_deref() {
            drop(preparing);
            return self.stored(meta, key.to_string(), frame.image);
        }
        let t = Instant::now();
        let bilinear =
            needs_bilinear_mask(chosen.iter().map(|&i| setup.plan.scenarios()[i].as_ref()));
        let (base, masks, boxes) = frame_at_stage(&mut self.view, setup.stage, &frame, bilinear);
        let base = Arc::new(base);
        if let Some(flips) = setup.flips {
            flips.offer(&frame.id, base.clone());
        }
        let prepared = Arc::new(Prepared {
            meta,
            base,
            masks,
            boxes,
            pool,
            geometry_ms: ms(t),
        });
        let mut chosen = chosen.into_iter();
        let first = chosen.next();
        for i in chosen {
            if self.q.tasks.0.send((prepared.clone(), i)).is_err() {
                return false;
            }
        }
        // Counted out only after the tasks are queued.
        drop(preparing);
        first.is_none_or(|i| self.variant((prepared, i)))
    }

    /// A stored variant (see [`Frame::variant`]): one row under its own key, no scenario applied.
    fn stored(&mut self, meta: Arc<FrameMeta>, key: String, image: RgbImage) -> bool {
        let setup = self.setup;
        let Some(i) = setup.plan.scenarios().iter().position(|s| s.key() == key) else {
            let reason = format!(
                "frame {}: stored variant `{key}` is not in the plan",
                meta.id
            );
            let _ = self.q.msg.send(Message::Fatal(reason));
            return false;
        };
        let t = Instant::now();
        let input = (setup.model.input.width, setup.model.input.height);
        let view_img = stored_view(image, &key, input, &mut self.view);
        self.write(meta, i, &view_img, 0.0, ms(t), None)
    }

    /// Applies scenario `i` to a prepared frame and writes the variant into a batch row.
    fn variant(&mut self, (p, i): Task) -> bool {
        let setup = self.setup;
        if setup.shared.fatal.load(Ordering::Relaxed) {
            return false;
        }
        let scenario = &setup.plan.scenarios()[i];
        let input = p
            .masks
            .attach(ScenarioInput::new(&p.base))
            .with_boxes(&p.boxes)
            .with_truth(p.meta.truth)
            .with_pool(p.pool.as_deref());
        let t = Instant::now();
        let key = RngKey::new(setup.seed, &p.meta.id, scenario.rng_key());
        // A frame the CPU scenario refuses comes back as `None` from the GPU path: it runs below,
        // which says why.
        if self.gpu.is_some()
            && crate::gpu::scenarios::on_gpu(scenario.as_ref())
            && let Some(going_on) = self.gpu_variant(&p, &input, i, key)
        {
            return going_on;
        }
        let made = scenario.apply(&input, key);
        let variant = match made {
            Ok(v) => v,
            Err(e) => {
                let failed = Message::Failed {
                    seq: p.meta.seq,
                    scenario: i,
                    variants: p.meta.variants,
                    reason: format!("frame {}: {e}", p.meta.id),
                };
                return self.q.msg.send(failed).is_ok();
            }
        };
        let scenario_ms = ms(t);
        let t = Instant::now();
        let view_img = match setup.stage {
            ScenarioStage::ModelInput => variant,
            ScenarioStage::Native => self.view.image(&variant),
        };
        let is_clean = scenario.key() == crate::key::CLEAN;
        let boxes = (is_clean && !p.boxes.is_empty())
            .then(|| crate::geometry::normalised_boxes(&p.boxes, p.base.dimensions()));
        let geometry = if i == 0 { p.geometry_ms } else { 0.0 };
        self.write(
            p.meta.clone(),
            i,
            &view_img,
            scenario_ms,
            ms(t) + geometry,
            boxes,
        )
    }

    /// Scenario `i` of a prepared frame made on the GPU, with its view and batch row, and only
    /// the row brought back, into the batch buffer. A device failure ends the run (every later
    /// variant would fail too). `Some(false)` when the run is ending; `None` when the CPU
    /// scenario refuses the frame (the caller runs it on the CPU, which says why).
    fn gpu_variant(
        &mut self,
        p: &Prepared,
        input: &ScenarioInput,
        i: usize,
        key: RngKey,
    ) -> Option<bool> {
        let setup = self.setup;
        let g = self.gpu.as_mut()?;
        let fatal = |q: &Queues, e: crate::gpu::GpuError| {
            let reason = format!("frame {}: GPU: {e}", p.meta.id);
            let _ = q.msg.send(Message::Fatal(reason));
            false
        };
        let scenario = &setup.plan.scenarios()[i];
        let t = Instant::now();
        match g.make(p.meta.seq, input, scenario.as_ref(), key) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(fatal(&self.q, e)),
        }
        let scenario_ms = ms(t);
        let is_clean = scenario.key() == crate::key::CLEAN;
        let boxes = (is_clean && !p.boxes.is_empty())
            .then(|| crate::geometry::normalised_boxes(&p.boxes, p.base.dimensions()));
        let geometry = if i == 0 { p.geometry_ms } else { 0.0 };
        let queued = Instant::now();
        // Waits while every batch buffer is full or running: the engine's back-pressure.
        let Ok(mut slot) = setup.assembler.claim() else {
            return Some(false);
        };
        let t = Instant::now();
        if let Err(e) = g.row(slot.values()) {
            return Some(fatal(&self.q, e));
        }
        slot.fill(RowMeta {
            meta: p.meta.clone(),
            scenario: i,
            scenario_ms,
            preprocess_ms: ms(t) + geometry,
            queued,
            boxes,
        });
        Some(true)
    }

    /// Normalises `image` into the next batch row. `false` when the assembly is closed.
    fn write(
        &mut self,
        meta: Arc<FrameMeta>,
        scenario: usize,
        image: &RgbImage,
        scenario_ms: f64,
        preprocess_ms: f64,
        boxes: Option<Vec<[f32; 4]>>,
    ) -> bool {
        let queued = Instant::now();
        // Waits while every batch buffer is full or running: the engine's back-pressure.
        let Ok(mut slot) = self.setup.assembler.claim() else {
            return false;
        };
        let t = Instant::now();
        self.norm.write(image, slot.values());
        slot.fill(RowMeta {
            meta,
            scenario,
            scenario_ms,
            preprocess_ms: preprocess_ms + ms(t),
            queued,
            boxes,
        });
        true
    }
}

/// The model's view of a stored variant (see [`Frame::variant`]), following the ImageNet-C
/// leaderboard's `test.py` (docs/imagenet-c.md#evaluation-protocols): a stored corrupted image
/// already at the model's input size (`input` = width, height) is used as it is, since `test.py`
/// only centre-crops 224 from the 224² JPEGs (the identity); stored `clean` frames and images of
/// any other size get the model's view (resize + crop), as `test.py` loads clean images. (augmix
/// instead re-applies Resize(256) + CenterCrop(224) to the corrupted JPEGs; we follow the
/// leaderboard.)
fn stored_view(image: RgbImage, key: &str, input: (u32, u32), view: &mut ModelView) -> RgbImage {
    if key != crate::key::CLEAN && image.dimensions() == input {
        image
    } else {
        view.image(&image)
    }
}

/// A frame's pixels, masks and boxes at the scenario stage ([`at_stage`]).
fn frame_at_stage(
    view: &mut ModelView,
    stage: ScenarioStage,
    frame: &Frame,
    bilinear: bool,
) -> (RgbImage, StageMasks, Vec<BBox>) {
    at_stage(view, stage, &frame.image, frame.regions.as_ref(), bilinear)
}
