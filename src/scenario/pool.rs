//! The background pool: backgrounds taken from the stream itself, for the scenarios that put one
//! frame's object on another frame's background (IN-9 `mixed_same` / `mixed_rand` / `mixed_next`,
//! docs/in9.md#mixed-same-mixed-rand-and-mixed-next, and the adversarial-background challenge,
//! docs/in9.md#challenge-accuracy; XIMAGENET-12's random background,
//! docs/ximagenet.md#random-background; Corner Cases' other-class background,
//! docs/corner-cases.md#composition).
//!
//! The reference builds these from a whole dataset offline; a stream only has the frames seen so far.
//! So the pool is filled **in source order** by the source thread: every frame that has foreground
//! regions (a mask or boxes) is offered after it was read, and frame *k*'s scenarios see a
//! [`PoolView`] of the pool as it was after frames `0..k` were offered (never frame *k* itself, never a
//! later frame). Per class (the frame's truth; unlabelled frames form their own bucket) the pool keeps
//! a bounded reservoir (Algorithm R) whose replacement decisions are drawn from
//! `RngKey::new(seed, frame id, "pool")`, so the pool — and every variant drawn from it — is the same
//! for every worker count and every run with the same seed.
//!
//! Entries keep the frame's pixels and regions; the background itself (IN-9's `only_bg_t` at the run's
//! scenario stage) is made lazily, once, by whichever worker first needs it, through the
//! [`BackgroundMaker`] the pipeline supplies ([`pool_maker`]). It is a pure function of the frame, so who computes it
//! does not matter. XIMAGENET-12's random background takes a **whole** earlier image instead
//! ([`PoolEntry::whole`]): the frame at the scenario stage, made the same lazy way by the pool's
//! whole-image maker ([`BackgroundPool::with_whole_maker`]; without one, the frame's pixels as
//! offered).
//!
//! Warm-up: before the pool holds a suitable background a pool scenario cannot make its variant and
//! reports [`super::ScenarioError::Unsuitable`] ("background pool warming up"); the frame is counted as
//! skipped for that scenario only (see the scenario docs).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use image::RgbImage;
use rand::RngExt;

use super::background::in9::pool_background;
use super::stage::{ScenarioStage, at_stage};
use super::{RngKey, ScenarioRng};
use crate::frame::{Frame, Regions};
use crate::model::ModelDesc;
use crate::view::ModelView;

/// Makes a frame's pool background (at the scenario stage) from its native pixels and regions;
/// `None` when the frame has no usable background (the entry is then never drawn).
pub type BackgroundMaker = dyn Fn(&RgbImage, &Regions) -> Option<RgbImage> + Send + Sync;

/// The pool's background maker: the frame at the scenario stage, then IN-9's `only_bg_t`
/// ([`pool_background`]).
pub(crate) fn pool_maker(model: &ModelDesc, stage: ScenarioStage) -> Arc<BackgroundMaker> {
    let model = model.clone();
    Arc::new(move |image: &RgbImage, regions: &Regions| {
        let mut view = ModelView::new(&model);
        let (base, masks, boxes) = at_stage(&mut view, stage, image, Some(regions), false);
        pool_background(&base, masks.mask.as_ref(), &boxes)
    })
}

/// The pool's whole-image maker (XIMAGENET-12's random background, [`PoolEntry::whole`]): the
/// frame at the scenario stage; `None` at the native stage, where the pool takes the frame as it
/// is.
pub(crate) fn pool_whole_maker(
    model: &ModelDesc,
    stage: ScenarioStage,
) -> Option<Arc<BackgroundMaker>> {
    let model = model.clone();
    (stage == ScenarioStage::ModelInput).then(|| {
        Arc::new(move |image: &RgbImage, _: &Regions| Some(ModelView::new(&model).image(image)))
            as Arc<BackgroundMaker>
    })
}

/// One frame in the pool.
pub struct PoolEntry {
    /// The frame's id (for records and debugging).
    pub(crate) frame_id: String,
    /// The frame's class in the dataset label space; `None` for unlabelled frames.
    pub(crate) class: Option<usize>,
    image: Arc<RgbImage>,
    regions: Regions,
    made: OnceLock<Option<Arc<RgbImage>>>,
    maker: Arc<BackgroundMaker>,
    whole: OnceLock<Arc<RgbImage>>,
    whole_maker: Option<Arc<BackgroundMaker>>,
}

impl std::fmt::Debug for PoolEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolEntry")
            .field("frame_id", &self.frame_id)
            .field("class", &self.class)
            .finish_non_exhaustive()
    }
}

impl PoolEntry {
    /// The entry's background at the scenario stage, made on first use; `None` when the maker found
    /// no usable background in this frame.
    pub fn background(&self) -> Option<Arc<RgbImage>> {
        self.made
            .get_or_init(|| (self.maker)(&self.image, &self.regions).map(Arc::new))
            .clone()
    }

    /// The whole frame at the scenario stage (XIMAGENET-12's random background), made on first use
    /// by the pool's whole-image maker; the frame's pixels as offered when the pool has none, or
    /// when the maker returns `None`.
    pub(crate) fn whole(&self) -> Arc<RgbImage> {
        self.whole
            .get_or_init(|| {
                self.whole_maker
                    .as_ref()
                    .and_then(|m| m(&self.image, &self.regions))
                    .map_or_else(|| self.image.clone(), Arc::new)
            })
            .clone()
    }
}

/// An immutable snapshot of the pool, shared by all variants of one frame.
#[derive(Debug, Default, Clone)]
pub struct PoolView {
    by_class: BTreeMap<Option<usize>, Vec<Arc<PoolEntry>>>,
}

impl PoolView {
    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.by_class.values().map(Vec::len).sum()
    }

    /// Whether the pool is empty.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The labelled classes with at least one entry, ascending.
    pub(crate) fn classes(&self) -> Vec<usize> {
        self.by_class.keys().filter_map(|c| *c).collect()
    }

    /// The entries of one class (`None` = unlabelled frames), in slot order.
    pub(crate) fn of_class(&self, class: Option<usize>) -> &[Arc<PoolEntry>] {
        self.by_class.get(&class).map_or(&[], Vec::as_slice)
    }

    /// Every entry: classes ascending (unlabelled first), slot order within a class.
    pub fn all(&self) -> impl Iterator<Item = &Arc<PoolEntry>> {
        self.by_class.values().flatten()
    }

    /// A uniformly drawn entry among those `keep` accepts, or `None` if there is none.
    pub(crate) fn pick(
        &self,
        rng: &mut ScenarioRng,
        keep: impl Fn(&PoolEntry) -> bool,
    ) -> Option<&Arc<PoolEntry>> {
        let candidates: Vec<&Arc<PoolEntry>> = self.all().filter(|e| keep(e)).collect();
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[rng.random_range(0..candidates.len())])
    }
}

/// The pool being filled by the source thread.
pub struct BackgroundPool {
    capacity: usize,
    seed: u64,
    maker: Arc<BackgroundMaker>,
    whole_maker: Option<Arc<BackgroundMaker>>,
    seen: BTreeMap<Option<usize>, u64>,
    view: Arc<PoolView>,
}

impl BackgroundPool {
    /// An empty pool keeping at most `capacity` frames per class (at least 1), with reservoir
    /// decisions keyed by the run `seed`.
    pub fn new(capacity: usize, seed: u64, maker: Arc<BackgroundMaker>) -> Self {
        Self {
            capacity: capacity.max(1),
            seed,
            maker,
            whole_maker: None,
            seen: BTreeMap::new(),
            view: Arc::new(PoolView::default()),
        }
    }

    /// Sets how entries make their whole image at the scenario stage ([`PoolEntry::whole`]), e.g.
    /// the model's view of the frame; without it the frame's pixels are taken as offered.
    pub(crate) fn with_whole_maker(mut self, maker: Arc<BackgroundMaker>) -> Self {
        self.whole_maker = Some(maker);
        self
    }

    /// The pool as it is now (what the next frame's scenarios see).
    pub fn view(&self) -> Arc<PoolView> {
        self.view.clone()
    }

    /// Offers a frame (call in source order, after taking the frame's own view). Frames without
    /// regions are ignored; the frame's pixels are copied only when it enters the reservoir.
    pub fn offer(&mut self, frame: &Frame) {
        let Some(regions) = &frame.regions else {
            return;
        };
        if regions.mask.is_none() && regions.boxes.is_empty() {
            return;
        }
        let class = frame.truth.map(|t| t.0);
        let seen = self.seen.entry(class).or_insert(0);
        *seen += 1;
        let n = *seen;
        let held = self.view.of_class(class).len();
        let slot = if held < self.capacity {
            Some(held)
        } else {
            // Algorithm R: the n-th item replaces a uniform slot with probability capacity / n.
            let j = RngKey::new(self.seed, &frame.id, "pool")
                .rng()
                .random_range(0..n);
            (j < self.capacity as u64).then_some(j as usize)
        };
        let Some(slot) = slot else { return };
        let entry = Arc::new(PoolEntry {
            frame_id: frame.id.clone(),
            class,
            image: Arc::new(frame.image.clone()),
            regions: regions.clone(),
            made: OnceLock::new(),
            maker: self.maker.clone(),
            whole: OnceLock::new(),
            whole_maker: self.whole_maker.clone(),
        });
        let mut next = (*self.view).clone();
        let list = next.by_class.entry(class).or_default();
        if slot < list.len() {
            list[slot] = entry;
        } else {
            list.push(entry);
        }
        self.view = Arc::new(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Truth;

    fn frame(id: &str, class: Option<usize>, with_regions: bool) -> Frame {
        let mask = image::GrayImage::from_pixel(4, 4, image::Luma([255]));
        Frame {
            truth: class.map(Truth),
            regions: with_regions.then(|| Regions {
                mask: Some(mask),
                boxes: vec![],
            }),
            ..Frame::new(id, 0, RgbImage::from_pixel(4, 4, image::Rgb([1, 2, 3])))
        }
    }

    fn maker() -> Arc<BackgroundMaker> {
        Arc::new(|img: &RgbImage, _: &Regions| Some(img.clone()))
    }

    #[test]
    fn frames_see_only_earlier_frames_and_regions_are_required() {
        let mut pool = BackgroundPool::new(4, 0, maker());
        let before = pool.view();
        pool.offer(&frame("a", Some(1), true));
        pool.offer(&frame("b", Some(1), false));
        pool.offer(&frame("c", None, true));
        assert!(before.is_empty());
        let v = pool.view();
        assert_eq!(v.len(), 2);
        assert_eq!(v.classes(), vec![1]);
        assert_eq!(v.of_class(Some(1))[0].frame_id, "a");
        assert_eq!(v.of_class(None)[0].frame_id, "c");
        assert_eq!(v.all().next().map(|e| e.frame_id.as_str()), Some("c"));
        assert!(v.of_class(Some(1))[0].background().is_some());
        // Whole images: the frame as offered, or what the whole-image maker makes of it.
        assert_eq!(v.of_class(Some(1))[0].whole().get_pixel(3, 3).0, [1, 2, 3]);
        let halve: Arc<BackgroundMaker> =
            Arc::new(|img: &RgbImage, _: &Regions| Some(image::imageops::thumbnail(img, 2, 2)));
        let mut pool = BackgroundPool::new(4, 0, maker()).with_whole_maker(halve);
        pool.offer(&frame("a", Some(1), true));
        let e = pool.view().of_class(Some(1))[0].clone();
        assert_eq!(e.whole().dimensions(), (2, 2));
        assert!(Arc::ptr_eq(&e.whole(), &e.whole()), "made once");
        assert_eq!(e.background().unwrap().dimensions(), (4, 4));
    }

    #[test]
    fn reservoir_is_bounded_deterministic_and_samples_late_frames() {
        let run = |seed| {
            let mut pool = BackgroundPool::new(8, seed, maker());
            for i in 0..400 {
                pool.offer(&frame(&format!("f{i}"), Some(0), true));
            }
            pool.view()
                .of_class(Some(0))
                .iter()
                .map(|e| e.frame_id.clone())
                .collect::<Vec<_>>()
        };
        let a = run(3);
        assert_eq!(a.len(), 8);
        assert_eq!(a, run(3));
        assert_ne!(a, run(4));
        // With 400 offers into 8 slots, keeping only the first 8 frames would mean no replacement.
        let late = a
            .iter()
            .filter(|id| id[1..].parse::<usize>().unwrap() >= 8)
            .count();
        assert!(late >= 6, "{a:?}");
    }

    #[test]
    fn pick_is_uniform_over_accepted_entries_and_none_when_empty() {
        let mut pool = BackgroundPool::new(4, 0, maker());
        for (i, c) in [0, 1, 1, 2].iter().enumerate() {
            pool.offer(&frame(&format!("f{i}"), Some(*c), true));
        }
        let v = pool.view();
        let mut rng = RngKey(9).rng();
        let mut counts = [0usize; 3];
        for _ in 0..3000 {
            let e = v.pick(&mut rng, |e| e.class != Some(0)).unwrap();
            counts[e.class.unwrap()] += 1;
        }
        assert_eq!(counts[0], 0);
        assert!((1800..2200).contains(&counts[1]), "{counts:?}");
        assert!(v.pick(&mut rng, |e| e.class == Some(7)).is_none());
    }
}
