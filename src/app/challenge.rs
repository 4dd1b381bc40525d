//! The adversarial-background challenge (the Backgrounds Challenge,
//! docs/in9.md#challenge-accuracy), run by the engine after the main pass, and the foreground
//! keeping it (and the occlusion saliency pass) needs during the main pass.
//!
//! **What is measured.** Each kept foreground (image `I`, mask `M`, truth `y`) is composited onto
//! backgrounds `B` of every class (its own included): `C = B·(1−M) + M·I`, pixel-wise at the model's
//! view, with the binary mask (non-zero = object) — for a 0/1 mask this is an exact per-pixel choice,
//! computed in u8 before normalisation. Each composite is classified and its top-1 mapped through the
//! run's class map (ImageNet-1k → IN-9 with `configs/in_to_in9.json`; unmapped = wrong). The
//! foreground is **vulnerable** when any composite's mapped prediction differs from `y`; evaluation of
//! a foreground stops after the first engine batch containing one (as the reference stops at its
//! first fooling batch). Challenge accuracy = 1 − vulnerable / foregrounds
//! ([`ChallengeTally::accuracy`]). A foreground the model already gets wrong on most backgrounds is
//! vulnerable, as in the reference.
//!
//! **Which foregrounds.** Frames with a truth and a foreground mask, not stored variants other than
//! `clean` (an IN-9 release read in stored mode has its `original` frames as `clean`; their
//! `fg_mask/val/<class>/<stem>.npy` is read here since the source attaches no masks then). At most
//! `foregrounds` of them are kept: the ones with the smallest keyed rank
//! `RngKey::new(seed, frame id, "challenge/foreground")` (ties by source order; [`BottomK`]), a
//! uniform sample that does not depend on threads and that the shards of a run each keep and
//! `robustream merge` combines exactly (docs/deploy.md#post-passes-in-shards).
//! Kept foregrounds are stored at the model's view (image and mask through the same geometry);
//! frames whose mask leaves no object pixel in the view are not candidates.
//!
//! **Which backgrounds.** For an IN-9 release with an `only_bg_t/val` folder: its images (the
//! reference's exact set, docs/in9.md#challenge-accuracy), brought to the model's view like the
//! `original` frames so that the two line up pixel for pixel. Otherwise the stream's background
//! pool as it is at the end of the main pass (`scenario::pool`, `[pipeline] pool` frames per class,
//! every class; the pool's `only_bg_t` background of each entry, made at the model's view; entries
//! are kept at the model's view, so a pool entry costs width × height × 3 bytes). Where we differ
//! from the reference: it uses every background of the release; a stream only has the frames it
//! saw. When there are more than `backgrounds`, the ones with the smallest keyed rank
//! (`RngKey::new(seed, id, "challenge/background")`) are kept.
//!
//! **Order and batching.** Foregrounds are evaluated in source order; each foreground visits the
//! backgrounds in its own keyed shuffle (`RngKey::new(seed, frame id, "challenge/order")`), in
//! batches of `[pipeline] max_batch` composites. The outcome is a pure function of the seed, the
//! kept frames and the engine.
//!
//! **Cost.** At most `foregrounds × backgrounds` inferences (early stop makes it far fewer when
//! most foregrounds are vulnerable); composition is a u8 select plus the normalisation table, per
//! composite, batched over rayon; inference dominates (see `run.challenge` in `summary.json`:
//! `composite_ms` and `infer_ms` per composite).
//!
//! **Output.** `challenge.jsonl` in the run directory, one line per decided foreground, flushed as
//! produced: `frame`, `truth`, `vulnerable`, `composites`, `fooled_by` (the background id of the
//! first wrong prediction, or null), `pred` (its mapped prediction, -1 = unmapped) and
//! `model_class`. Progress lines on stderr. Ctrl-C stops between batches; the undecided foreground
//! is left out (no line, not counted) and the tally says `complete = false`. `complete` speaks of
//! interruption only: that the bounds sampled fewer foregrounds or backgrounds than the run offered is
//! `run.challenge.sampled` in `summary.json` (with `candidates` and the background source's counts).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use image::{GrayImage, RgbImage};
use rand::RngExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::classmap::ClassMap;
use crate::engine::{Engine, EngineError, try_decode_row};
use crate::frame::Frame;
use crate::metrics::in9::ChallengeTally;
use crate::model::ModelDesc;
use crate::preprocess::Normalizer;
use crate::rng::RngKey;
use crate::scenario::BackgroundPool;
use crate::source::{Source, SourceError, in9};
use crate::view::{MaskResize, ModelView};

/// The file of per-foreground challenge lines in the run directory.
pub(crate) const CHALLENGE_JSONL: &str = "challenge.jsonl";

/// `[challenge]` of a run config (CLI `--challenge` sets `enabled`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct ChallengeConfig {
    /// Run the challenge after the main pass.
    pub(crate) enabled: bool,
    /// Most foregrounds kept (the smallest keyed ranks among the frames with a mask and a truth).
    pub(crate) foregrounds: usize,
    /// Most backgrounds used (all classes).
    pub(crate) backgrounds: usize,
}

impl Default for ChallengeConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            foregrounds: 64,
            backgrounds: 128,
        }
    }
}

impl ChallengeConfig {
    /// Checks the bounds; the message names the key.
    pub(crate) fn validate(&self) -> Result<(), ChallengeConfigError> {
        if self.foregrounds == 0 || self.backgrounds == 0 {
            return Err(ChallengeConfigError::ZeroCount);
        }
        Ok(())
    }
}

/// A `[challenge]` setting out of range; the message names the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChallengeConfigError {
    /// No foreground or no background to composite.
    #[error("`challenge.foregrounds` and `challenge.backgrounds` must be at least 1")]
    ZeroCount,
}

/// One kept foreground at the model's view.
#[derive(Debug, Clone)]
pub(crate) struct Foreground {
    /// Frame id.
    pub(crate) id: String,
    /// Truth in the dataset label space.
    pub(crate) truth: usize,
    /// The frame at the model's view.
    pub(crate) image: RgbImage,
    /// Its mask through the same geometry (non-zero = object).
    pub(crate) mask: GrayImage,
    /// Offer index (source order among candidates).
    order: u64,
    /// Its keyed rank in the sample that kept it ([`rank`]).
    rank: u64,
}

/// The salt of the challenge's foreground ranks ([`rank`]).
pub(crate) const FOREGROUND_SALT: &str = "challenge/foreground";
/// The salt of the saliency pass's frame ranks ([`rank`]).
pub(crate) const SALIENCY_SALT: &str = "saliency/frame";

/// The keyed rank of frame `id` in a [`BottomK`] sample salted `salt`: `RngKey::new(seed, id,
/// salt).0`. The `k` candidates with the smallest ranks (ties by source order) are the sample.
pub(crate) fn rank(seed: u64, id: &str, salt: &str) -> u64 {
    RngKey::new(seed, id, salt).0
}

/// A bounded, seeded sample of foregrounds: the `capacity` candidates with the smallest keyed
/// [`rank`] (ties by source order) — a uniform sample without replacement whose decisions do not
/// depend on threads, and which merges exactly: the bottom `k` of a union is the bottom `k` of the
/// parts' bottom `k`s, so each shard of a run keeps its own and `robustream merge` keeps the
/// smallest ranks of their lines (docs/deploy.md#post-passes-in-shards).
#[derive(Debug)]
struct BottomK {
    capacity: usize,
    seed: u64,
    salt: &'static str,
    seen: u64,
    /// The rank of the candidate [`BottomK::decide`] saw last.
    last_rank: u64,
    slots: Vec<Foreground>,
}

impl BottomK {
    /// An empty sample of at most `capacity` (≥ 1) foregrounds; `salt` separates the ranks of
    /// different samples over the same frames.
    fn new(capacity: usize, seed: u64, salt: &'static str) -> Self {
        Self {
            capacity: capacity.max(1),
            seed,
            salt,
            seen: 0,
            last_rank: 0,
            slots: Vec::new(),
        }
    }

    /// Counts one more candidate with frame id `id` and says which slot it takes, if any (a free
    /// one, or the one holding the largest rank when this candidate's is smaller); the caller then
    /// [`BottomK::place`]s it.
    fn decide(&mut self, id: &str) -> Option<usize> {
        self.seen += 1;
        self.last_rank = rank(self.seed, id, self.salt);
        if self.slots.len() < self.capacity {
            return Some(self.slots.len());
        }
        // The kept candidate with the largest (rank, order); an equal rank loses to it, being
        // later in source order.
        let (slot, worst) = self
            .slots
            .iter()
            .enumerate()
            .max_by_key(|(_, f)| (f.rank, f.order))?;
        (self.last_rank < worst.rank).then_some(slot)
    }

    /// Puts a foreground into the slot [`BottomK::decide`] gave.
    fn place(&mut self, slot: usize, id: &str, truth: usize, image: RgbImage, mask: GrayImage) {
        let fg = Foreground {
            id: id.to_string(),
            truth,
            image,
            mask,
            order: self.seen,
            rank: self.last_rank,
        };
        if slot < self.slots.len() {
            self.slots[slot] = fg;
        } else {
            self.slots.push(fg);
        }
    }

    /// Candidates offered so far.
    fn seen(&self) -> u64 {
        self.seen
    }

    /// The kept foregrounds in source order.
    fn into_foregrounds(self) -> Vec<Foreground> {
        let mut v = self.slots;
        v.sort_by_key(|f| f.order);
        v
    }
}

/// One challenge background at the model's view.
#[derive(Debug, Clone)]
pub(crate) struct Background {
    /// Where it came from: the pool frame's id, or `only_bg_t/<class>/<file>` of an IN-9 release.
    pub(crate) id: String,
    /// Pixels at the model's input size.
    pub(crate) image: RgbImage,
}

/// What the post passes keep during the main pass, and where the frames come from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keep<'a> {
    /// `[challenge]`.
    pub(crate) challenge: &'a ChallengeConfig,
    /// Frames the saliency pass keeps; `None` without a saliency pass.
    pub(crate) saliency_frames: Option<usize>,
    /// The rule the saliency pass's masks are brought to the model's view by (the saliency pass
    /// says which; post.rs passes it on).
    pub(crate) saliency_mask: MaskResize,
    /// The root of the run's source when it is an IN-9 release (its kind settled with the config):
    /// the release brings its own masks and backgrounds.
    pub(crate) in9_root: Option<&'a Path>,
    /// Run seed.
    pub(crate) seed: u64,
    /// Backgrounds per class of the challenge's pool (`[pipeline] pool`).
    pub(crate) pool: usize,
    /// The run's shard: only its frames are foregrounds and saliency frames; every frame read
    /// feeds the pool of backgrounds (docs/deploy.md#post-passes-in-shards).
    pub(crate) shard: Option<crate::shard::Shard>,
}

/// What the post passes keep while the main pass runs (filled on the source thread, in source
/// order, through [`KeepingSource`]).
pub(crate) struct Harvest {
    view: ModelView,
    /// `fg_mask/val` of an IN-9 release read in stored mode (masks are not attached then).
    in9_masks: Option<PathBuf>,
    /// `only_bg_t/val` of an IN-9 release: the challenge's backgrounds.
    in9_backgrounds: Option<PathBuf>,
    challenge: Option<(BottomK, Option<BackgroundPool>)>,
    saliency: Option<BottomK>,
    /// [`Keep::saliency_mask`].
    saliency_mask: MaskResize,
    /// Labelled frames whose mask could not be used (missing, unreadable, empty in the view).
    unusable_masks: u64,
    /// Frames with a mask but no truth (not candidates).
    unlabelled_masks: u64,
    /// [`Keep::shard`].
    shard: Option<crate::shard::Shard>,
}

impl std::fmt::Debug for Harvest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harvest").finish_non_exhaustive()
    }
}

/// A shared [`Harvest`].
pub(crate) type SharedHarvest = Arc<Mutex<Harvest>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves consistent data here (whole-value updates).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Harvest {
    /// What `keep` asks the post passes to keep, or `None` when neither the challenge nor the
    /// saliency pass is enabled.
    pub(crate) fn for_run(keep: &Keep, model: &ModelDesc) -> Option<Self> {
        if !keep.challenge.enabled && keep.saliency_frames.is_none() {
            return None;
        }
        let in9_backgrounds = keep
            .in9_root
            .map(|root| root.join("only_bg_t").join("val"))
            .filter(|bg_dir| bg_dir.is_dir());
        let challenge = keep.challenge.enabled.then(|| {
            let pool = in9_backgrounds.is_none().then(|| {
                BackgroundPool::new(
                    keep.pool,
                    keep.seed,
                    crate::scenario::pool::pool_maker(
                        model,
                        crate::scenario::ScenarioStage::Native,
                    ),
                )
            });
            (
                BottomK::new(keep.challenge.foregrounds, keep.seed, FOREGROUND_SALT),
                pool,
            )
        });
        Some(Self {
            view: ModelView::new(model),
            in9_masks: keep
                .in9_root
                .map(|root| root.join(in9::MASK_FOLDER).join("val")),
            in9_backgrounds,
            challenge,
            saliency: keep
                .saliency_frames
                .map(|n| BottomK::new(n, keep.seed, SALIENCY_SALT)),
            saliency_mask: keep.saliency_mask,
            unusable_masks: 0,
            unlabelled_masks: 0,
            shard: keep.shard,
        })
    }

    /// Whether the keeper needs the frames other shards evaluate: its challenge draws backgrounds
    /// from the stream's pool, which in one run sees every frame.
    pub(crate) fn needs_every_frame(&self) -> bool {
        matches!(self.challenge, Some((_, Some(_))))
    }

    /// Offers one frame read by the source (call in source order).
    fn offer(&mut self, frame: &Frame) {
        let stored = frame.variant.as_deref();
        if stored.is_some_and(|k| k != crate::key::CLEAN) {
            return; // a stored variation is neither a foreground nor a pool frame
        }
        // The frame at the model's view, made at most once.
        let mut view_image: Option<RgbImage> = None;
        if stored.is_none()
            && let Some((_, Some(pool))) = &mut self.challenge
            && let Some(r) = &frame.regions
            && (r.mask.is_some() || !r.boxes.is_empty())
        {
            // The pool keeps the frame at the model's view (150 KB at 224² instead of the native
            // frame); its maker then works on that view as it is (`Native` stage = no geometry),
            // which gives the same background as the pipeline's pool at the model-input stage.
            let image = self.view.image(&frame.image);
            let small = Frame {
                id: frame.id.clone(),
                seq: frame.seq,
                image,
                truth: frame.truth,
                regions: Some(crate::frame::Regions {
                    mask: r
                        .mask
                        .as_ref()
                        .map(|m| self.view.mask(m, MaskResize::Nearest)),
                    boxes: self.view.boxes(&r.boxes, frame.image.dimensions()),
                }),
                variant: None,
                captured: frame.captured,
                decode_ms: frame.decode_ms,
                mask_ms: frame.mask_ms,
                timestamp: frame.timestamp,
                groups: frame.groups.clone(),
            };
            pool.offer(&small);
            view_image = Some(small.image);
        }
        if self.shard.is_some_and(|s| !s.owns(&frame.id)) {
            return; // another shard's foreground (read for the pool above)
        }
        let Some(truth) = frame.truth.map(|t| t.0) else {
            if frame.regions.as_ref().is_some_and(|r| r.mask.is_some()) {
                self.unlabelled_masks += 1;
            }
            return;
        };
        let attached = frame.regions.as_ref().and_then(|r| r.mask.as_ref());
        let loaded;
        let mask = match (attached, &self.in9_masks) {
            (Some(m), _) => m,
            (None, Some(dir)) if stored.is_some() => {
                let path = dir.join(format!("{}.npy", frame.id));
                if !path.is_file() {
                    return; // the release has no mask for this image
                }
                match crate::source::mask::load(
                    &path,
                    Path::new(&frame.id),
                    frame.image.dimensions(),
                ) {
                    Ok(m) => {
                        loaded = m;
                        &loaded
                    }
                    Err(_) => {
                        self.unusable_masks += 1;
                        return;
                    }
                }
            }
            _ => return,
        };
        // Each pass's mask at the view under its reference's rule: the challenge's (IN-9)
        // nearest, the saliency pass's Hard ImageNet bilinear-then-non-zero
        // (docs/hard-imagenet.md#data-and-preprocessing, docs/hard-imagenet.md#saliency-alignment).
        let mut view_mask = |on: bool, rule| {
            on.then(|| self.view.mask(mask, rule))
                .filter(|m| m.as_raw().iter().any(|&v| v != 0))
        };
        let challenge_mask = view_mask(self.challenge.is_some(), MaskResize::Nearest);
        let saliency_mask = view_mask(self.saliency.is_some(), self.saliency_mask);
        if challenge_mask.is_none() && saliency_mask.is_none() {
            self.unusable_masks += 1;
            return;
        }
        let a = match (&mut self.challenge, challenge_mask) {
            (Some((r, _)), Some(m)) => r.decide(&frame.id).map(|s| (s, m)),
            _ => None,
        };
        let b = match (&mut self.saliency, saliency_mask) {
            (Some(r), Some(m)) => r.decide(&frame.id).map(|s| (s, m)),
            _ => None,
        };
        if a.is_none() && b.is_none() {
            return;
        }
        let image = match view_image {
            Some(image) => image,
            None => self.view.image(&frame.image),
        };
        if let (Some((slot, m)), Some((r, _))) = (a, self.challenge.as_mut()) {
            r.place(slot, &frame.id, truth, image.clone(), m);
        }
        if let (Some((slot, m)), Some(r)) = (b, self.saliency.as_mut()) {
            r.place(slot, &frame.id, truth, image, m);
        }
    }

    /// The saliency pass's frames (empty when it is off), in source order.
    pub(crate) fn take_saliency(&mut self) -> Vec<Foreground> {
        self.saliency
            .take()
            .map(BottomK::into_foregrounds)
            .unwrap_or_default()
    }

    /// The challenge's foregrounds and backgrounds (at most `bound`, see the module docs), with a
    /// description of where the backgrounds came from and how many were available before the bound;
    /// `None` when the challenge is off.
    pub(crate) fn take_challenge(
        &mut self,
        model: &ModelDesc,
        seed: u64,
        bound: usize,
    ) -> Option<(Vec<Foreground>, Vec<Background>, String, usize)> {
        let (sample, pool) = self.challenge.take()?;
        let foregrounds = sample.into_foregrounds();
        let (backgrounds, described, available) = match (&self.in9_backgrounds, pool) {
            (Some(dir), _) => {
                let files = list_in9_backgrounds(dir);
                let total = files.len();
                let chosen = keep_ranked(files, seed, bound, |(id, _)| id.as_str());
                let got: Vec<Background> = chosen
                    .par_iter()
                    .map_init(
                        || ModelView::new(model),
                        |view, (id, path)| {
                            crate::source::decode::read_rgb(path)
                                .ok()
                                .map(|img| Background {
                                    id: id.clone(),
                                    image: view.image(&img),
                                })
                        },
                    )
                    .flatten()
                    .collect();
                let unreadable = chosen.len() - got.len();
                (
                    got,
                    format!(
                        "in9 only_bg_t {} ({total} images, {} kept{})",
                        dir.display(),
                        chosen.len(),
                        if unreadable > 0 {
                            format!(", {unreadable} unreadable")
                        } else {
                            String::new()
                        }
                    ),
                    total,
                )
            }
            (None, Some(pool)) => {
                let view = pool.view();
                let entries: Vec<_> = view.all().cloned().collect();
                let total = entries.len();
                let chosen = keep_ranked(entries, seed, bound, |e| e.frame_id.as_str());
                let got: Vec<Background> = chosen
                    .par_iter()
                    .filter_map(|e| {
                        e.background().map(|img| Background {
                            id: e.frame_id.clone(),
                            image: (*img).clone(),
                        })
                    })
                    .collect();
                (
                    got,
                    format!(
                        "stream pool (only_bg_t of {total} pool frames, {} kept)",
                        chosen.len()
                    ),
                    total,
                )
            }
            (None, None) => (Vec::new(), "none".into(), 0),
        };
        Some((foregrounds, backgrounds, described, available))
    }

    /// Labelled frames whose mask could not be used.
    pub(crate) fn unusable_masks(&self) -> u64 {
        self.unusable_masks
    }

    /// Candidate foregrounds the challenge's sample saw.
    pub(crate) fn challenge_candidates(&self) -> u64 {
        self.challenge.as_ref().map_or(0, |(r, _)| r.seen())
    }

    /// Why no frame qualified, for the not-applicable message.
    pub(crate) fn no_foreground_reason(&self) -> String {
        let mut why = "no frame with a foreground mask and a truth".to_string();
        if self.unlabelled_masks > 0 {
            why += &format!(
                " ({} frames had a mask but no truth)",
                self.unlabelled_masks
            );
        }
        if self.unusable_masks > 0 {
            why += &format!(
                " ({} labelled frames had a mask that could not be used)",
                self.unusable_masks
            );
        }
        why
    }
}

/// The image files of `only_bg_t/val/<class>/` as (`only_bg_t/<class>/<file>`, path), class folders
/// and files sorted by name; unreadable folders give nothing.
fn list_in9_backgrounds(dir: &Path) -> Vec<(String, PathBuf)> {
    let sorted = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for class in sorted(dir).into_iter().filter(|p| p.is_dir()) {
        let cname = class
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for file in sorted(&class) {
            if crate::source::decode::has_image_extension(&file)
                && let Some(name) = file.file_name()
            {
                out.push((
                    format!("only_bg_t/{cname}/{}", name.to_string_lossy()),
                    file,
                ));
            }
        }
    }
    out
}

/// The `bound` items with the smallest keyed rank `RngKey::new(seed, id, "challenge/background")`,
/// in their original order (all of them when there are at most `bound`).
fn keep_ranked<T>(items: Vec<T>, seed: u64, bound: usize, id: impl Fn(&T) -> &str) -> Vec<T> {
    if items.len() <= bound {
        return items;
    }
    let mut ranked: Vec<(u64, usize, T)> = items
        .into_iter()
        .enumerate()
        .map(|(i, t)| (RngKey::new(seed, id(&t), "challenge/background").0, i, t))
        .collect();
    ranked.sort_by_key(|&(r, i, _)| (r, i));
    ranked.truncate(bound);
    ranked.sort_by_key(|&(_, i, _)| i);
    ranked.into_iter().map(|(_, _, t)| t).collect()
}

/// A source that hands every frame it yields to a [`Harvest`] first (in source order, on the
/// pipeline's source thread). Frames pass through unchanged.
pub(crate) struct KeepingSource {
    inner: Box<dyn Source>,
    harvest: SharedHarvest,
}

impl KeepingSource {
    /// Wraps `inner`.
    pub(crate) fn new(inner: Box<dyn Source>, harvest: SharedHarvest) -> Self {
        Self { inner, harvest }
    }
}

impl Source for KeepingSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let item = self.inner.next_frame();
        if let Some(Ok(frame)) = &item {
            lock(&self.harvest).offer(frame);
        }
        item
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    /// The frames passed over are the ones the run's selection says the keeper does not need.
    fn pass_over(&mut self, wanted: &crate::source::ItemFilter, max: u64) -> u64 {
        self.inner.pass_over(wanted, max)
    }

    crate::source::forward_to_inner!();
}

/// An engine shared between the pipeline and the post passes (the pipeline owns its engine; the
/// post passes run on the same loaded model afterwards).
#[derive(Clone)]
pub struct SharedEngine(Arc<Mutex<Box<dyn Engine>>>);

impl SharedEngine {
    /// Shares `engine`.
    pub fn new(engine: Box<dyn Engine>) -> Self {
        Self(Arc::new(Mutex::new(engine)))
    }
}

impl Engine for SharedEngine {
    fn describe(&self) -> String {
        lock(&self.0).describe()
    }

    fn infer(&mut self, input: &[f32], batch: usize) -> Result<Vec<f32>, EngineError> {
        lock(&self.0).infer(input, batch)
    }

    fn shapes(&self) -> Option<crate::engine::BatchShapes> {
        lock(&self.0).shapes()
    }

    fn warm_up(&mut self) -> Result<Vec<(usize, f64)>, EngineError> {
        lock(&self.0).warm_up()
    }

    fn batch_buffer(&mut self, rows: usize, per: usize) -> crate::engine::BatchBuffer {
        lock(&self.0).batch_buffer(rows, per)
    }

    fn infer_buffer(
        &mut self,
        buffer: &mut crate::engine::BatchBuffer,
        batch: usize,
    ) -> Result<Vec<f32>, EngineError> {
        lock(&self.0).infer_buffer(buffer, batch)
    }

    fn take_runs(&mut self) -> Vec<crate::engine::RunTiming> {
        lock(&self.0).take_runs()
    }
}

/// A challenge pass failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChallengeError {
    /// The engine failed.
    #[error("challenge: {0}")]
    Engine(#[from] EngineError),
    /// A composite's output row cannot be scored ([`crate::engine::check_row`]).
    #[error("challenge: frame {frame} on background {background}: {message}")]
    Output {
        /// The foreground frame.
        frame: String,
        /// The background it was composited on.
        background: String,
        /// What is wrong with the row and what to do.
        message: String,
    },
    /// `challenge.jsonl` could not be created or written (file, line, cause, fix; a line cut
    /// short is cut off again, [`crate::report::lines::LineFile`]).
    #[error("challenge: {0}")]
    Write(#[from] crate::report::ReportError),
}

/// A line of `challenge.jsonl`: one foreground's outcome
/// (docs/benchmarks-usage.md#adversarial-backgrounds-the-backgrounds-challenge). Written by
/// [`evaluate`], read back by `robustream merge`; a field a line of an older format lacks reads as
/// its default, and one this robustream does not know is kept in [`ChallengeLine::extra`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ChallengeLine {
    /// The foreground's frame id.
    pub(crate) frame: String,
    /// Its label (dataset class index).
    #[serde(default)]
    pub(crate) truth: usize,
    /// Whether a scored composite fooled the model.
    #[serde(default)]
    pub(crate) vulnerable: bool,
    /// Whether it was left undecided ([`ChallengeTally::undecided`]).
    #[serde(default)]
    pub(crate) undecided: bool,
    /// Composites evaluated.
    #[serde(default)]
    pub(crate) composites: u64,
    /// Of those, composites whose output row could not be scored.
    #[serde(default)]
    pub(crate) failed: u64,
    /// The background that fooled it.
    #[serde(default)]
    pub(crate) fooled_by: Option<String>,
    /// The wrong prediction (dataset class, −1 unmapped).
    #[serde(default)]
    pub(crate) pred: Option<i64>,
    /// The model class behind it.
    #[serde(default)]
    pub(crate) model_class: Option<usize>,
    /// Fields this robustream does not know (a newer format's), kept in order.
    #[serde(flatten)]
    pub(crate) extra: serde_json::Map<String, serde_json::Value>,
}

/// What the challenge pass measured.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChallengeReport {
    /// The counts ([`ChallengeTally`]).
    pub(crate) tally: ChallengeTally,
    /// Wall time of the pass, seconds.
    pub(crate) seconds: f64,
    /// Time spent compositing and normalising, milliseconds in all.
    pub(crate) composite_ms: f64,
    /// Time spent in the engine, milliseconds in all.
    pub(crate) infer_ms: f64,
}

/// The settings of one challenge pass.
pub(crate) struct ChallengeRun<'a> {
    /// The model's description (input size, layout, normalisation, output kind).
    pub(crate) model: &'a ModelDesc,
    /// Model classes → dataset labels.
    pub(crate) class_map: &'a ClassMap,
    /// Run seed (background order).
    pub(crate) seed: u64,
    /// Composites per engine batch (≥ 1).
    pub(crate) batch: usize,
    /// Where the per-foreground lines go.
    pub(crate) jsonl: &'a Path,
    /// No progress lines.
    pub(crate) quiet: bool,
    /// `--strict`: an output row that cannot be scored fails the pass (otherwise it is counted in
    /// [`ChallengeTally::failed`] with a warning line per foreground, and not scored).
    pub(crate) strict: bool,
}

/// The keyed order in which foreground `id` visits `n` backgrounds (Fisher–Yates).
fn background_order(seed: u64, id: &str, n: usize) -> Vec<usize> {
    let mut rng = RngKey::new(seed, id, "challenge/order").rng();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = rng.random_range(0..=i);
        order.swap(i, j);
    }
    order
}

/// Writes the composite `bg·(1−m) + m·fg` (binary `m`: non-zero = foreground) into `out`, all three
/// images of one size. docs/in9.md#challenge-accuracy with a 0/1 mask, in u8.
fn composite(fg: &RgbImage, mask: &GrayImage, bg: &RgbImage, out: &mut RgbImage) {
    debug_assert_eq!(fg.dimensions(), bg.dimensions());
    debug_assert_eq!(fg.dimensions(), mask.dimensions());
    if out.dimensions() != fg.dimensions() {
        *out = RgbImage::new(fg.width(), fg.height());
    }
    for (((o, f), b), &m) in out
        .as_mut()
        .chunks_exact_mut(3)
        .zip(fg.as_raw().chunks_exact(3))
        .zip(bg.as_raw().chunks_exact(3))
        .zip(mask.as_raw())
    {
        o.copy_from_slice(if m != 0 { f } else { b });
    }
}

/// Runs the challenge over `foregrounds` × `backgrounds` (module docs), writing `challenge.jsonl`
/// and progress lines; stops between batches when `stop` is raised.
pub(crate) fn evaluate(
    run: &ChallengeRun<'_>,
    engine: &mut dyn Engine,
    foregrounds: &[Foreground],
    backgrounds: &[Background],
    stop: &AtomicBool,
) -> Result<ChallengeReport, ChallengeError> {
    let started = Instant::now();
    let mut file = crate::report::lines::LineFile::create(run.jsonl)?;
    let norm = Normalizer::new(run.model);
    let len = run.model.input_len();
    let classes = run.model.output.classes;
    let kind = run.model.output.kind;
    let batch = run.batch.max(1);
    let (w, h) = (run.model.input.width, run.model.input.height);
    let mut scratch: Vec<RgbImage> = (0..batch).map(|_| RgbImage::new(w, h)).collect();
    let mut input = vec![0f32; batch * len];
    let mut tally = ChallengeTally {
        backgrounds: backgrounds.len() as u64,
        complete: true,
        ..ChallengeTally::default()
    };
    let bound = (foregrounds.len() * backgrounds.len()) as u64;
    let (mut composite_ms, mut infer_ms) = (0.0, 0.0);
    let mut last_line = Instant::now();
    let progress = |t: &ChallengeTally, done_fg: usize| {
        eprintln!(
            "challenge: {}/{} composites (upper bound), {}/{} foregrounds, {} vulnerable",
            t.composites,
            bound,
            done_fg,
            foregrounds.len(),
            t.vulnerable
        );
    };
    'outer: for (k, fg) in foregrounds.iter().enumerate() {
        let order = background_order(run.seed, &fg.id, backgrounds.len());
        let mut evaluated = 0u64;
        let mut fooled: Option<(usize, usize, i64)> = None;
        // Composites of this foreground whose row could not be scored, and the first one's error.
        let mut failed = 0u64;
        let mut first_failure: Option<ChallengeError> = None;
        for chunk in order.chunks(batch) {
            if stop.load(Ordering::Relaxed) {
                tally.complete = false;
                break 'outer;
            }
            let t = Instant::now();
            let n = chunk.len();
            input[..n * len]
                .par_chunks_mut(len)
                .zip(scratch[..n].par_iter_mut())
                .zip(chunk.par_iter())
                .for_each(|((slot, img), &b)| {
                    composite(&fg.image, &fg.mask, &backgrounds[b].image, img);
                    norm.write(img, slot);
                });
            composite_ms += t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            let out = engine.infer(&input[..n * len], n)?;
            infer_ms += t.elapsed().as_secs_f64() * 1e3;
            if out.len() != n * classes {
                return Err(EngineError::Run(format!(
                    "the engine returned {} values for {n} images of {classes} classes",
                    out.len()
                ))
                .into());
            }
            evaluated += n as u64;
            for (row, &b) in out.chunks_exact(classes).zip(chunk) {
                let decoded = match try_decode_row(row, kind, 1) {
                    Ok(d) => d,
                    Err(e) => {
                        // Not scored: neither a wrong nor a right prediction
                        // (docs/in9.md#challenge-accuracy counts predictions), counted like a failed
                        // variant of the main pass.
                        let e = ChallengeError::Output {
                            frame: fg.id.clone(),
                            background: backgrounds[b].id.clone(),
                            message: e.in_model(&run.model.path),
                        };
                        if run.strict {
                            return Err(e);
                        }
                        failed += 1;
                        first_failure.get_or_insert(e);
                        continue;
                    }
                };
                let top = decoded.top.first().copied();
                let pred = top.map_or(-1, |c| run.class_map.pred(c));
                if fooled.is_none() && usize::try_from(pred).ok() != Some(fg.truth) {
                    fooled = Some((b, top.unwrap_or(usize::MAX), pred));
                }
            }
            if fooled.is_some() {
                break;
            }
        }
        // A foreground some of whose composites could not be scored survives nothing it was not
        // scored on: unless a scored composite fooled the model, it is undecided.
        let undecided = failed > 0 && fooled.is_none();
        if let Some(e) = first_failure {
            eprintln!(
                "warning: {e}; {failed} of {evaluated} composites of this foreground not scored{} \
                 (--strict makes this fatal)",
                if undecided {
                    ", the foreground left out of the challenge accuracy"
                } else {
                    ""
                }
            );
        }
        tally.foregrounds += u64::from(!undecided);
        tally.undecided += u64::from(undecided);
        tally.vulnerable += u64::from(fooled.is_some());
        tally.composites += evaluated;
        tally.failed += failed;
        let line = ChallengeLine {
            frame: fg.id.clone(),
            truth: fg.truth,
            vulnerable: fooled.is_some(),
            undecided,
            composites: evaluated,
            failed,
            fooled_by: fooled.map(|(b, _, _)| backgrounds[b].id.clone()),
            pred: fooled.map(|(_, _, p)| p),
            model_class: fooled.and_then(|(_, c, _)| (c != usize::MAX).then_some(c)),
            extra: serde_json::Map::new(),
        };
        file.append(&crate::report::family::to_value(&line).to_string(), || {
            format!("the line of frame `{}`", crate::quote::clip(&fg.id))
        })?;
        if !run.quiet && last_line.elapsed().as_secs_f64() >= 1.0 {
            progress(&tally, k + 1);
            last_line = Instant::now();
        }
    }
    if !run.quiet {
        progress(&tally, tally.foregrounds as usize);
    }
    Ok(ChallengeReport {
        tally,
        seconds: started.elapsed().as_secs_f64(),
        composite_ms,
        infer_ms,
    })
}

/// `v` rounded to three decimals.
pub(crate) fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests;
