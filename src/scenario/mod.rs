//! Scenarios: named, parameterised transforms of a frame (`clean`, `corruption/<name>/<severity>`,
//! later `background/...`, `ablation/...`, `region_noise/...`, `placement/...`), the catalogue of every
//! key and group, and the [`Plan`] built from a config.
//!
//! A scenario sees pixels only (an RGB image and, when the source has one, a foreground mask); it never
//! knows about engines or metrics. Randomness comes from a [`RngKey`] derived from
//! `(run seed, frame id, scenario key)`.

pub mod ablation;
pub mod background;
pub mod catalog;
mod clean;
pub mod corruption;
pub mod placement;
mod plan;
pub mod pool;
pub(crate) mod region_noise;
pub mod schedule;
pub(crate) mod stage;

use image::{GrayImage, RgbImage};

use crate::frame::{BBox, Truth};
use crate::view::{MaskResize, ModelView};

use crate::rng::{RngKey, ScenarioRng};
pub use catalog::{Catalog, CatalogEntry};
pub use plan::Plan;
pub use pool::{BackgroundPool, PoolView};
pub use stage::ScenarioStage;

/// What a scenario gets to work on. Build it with [`ScenarioInput::new`] and the `with_*` methods so
/// that new context (e.g. a background pool) can be added without touching every call site.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioInput<'a> {
    /// The frame's pixels (at the stage the plan applies scenarios: the model's input view or the
    /// native frame, see [`ScenarioStage`]).
    pub(crate) image: &'a RgbImage,
    /// Foreground mask of the same size (0 = background, 255 = foreground), when the source has one.
    /// Where masks were resized to the model's view this is the [`MaskResize::Nearest`] one; use
    /// [`ScenarioInput::mask_for`] with the scenario's [`Scenario::mask_resize`].
    pub(crate) mask: Option<&'a GrayImage>,
    /// The masks resized to the model's view under rules other than [`MaskResize::Nearest`]
    /// (`Some` only when `mask` was resized: see [`ScenarioInput::with_view_masks`]).
    pub(crate) view_masks: Option<ViewMasks<'a>>,
    /// Object boxes in the image's pixel coordinates (empty when the source has none).
    pub(crate) boxes: &'a [BBox],
    /// The frame's ground truth in the dataset label space, when known.
    pub(crate) truth: Option<Truth>,
    /// Backgrounds from earlier frames of the stream (see [`pool`]), when a scenario of the plan uses
    /// them ([`Scenario::uses_pool`]).
    pub(crate) pool: Option<&'a PoolView>,
}

impl<'a> ScenarioInput<'a> {
    /// An input with pixels only: no mask, no boxes, no truth.
    pub fn new(image: &'a RgbImage) -> Self {
        Self {
            image,
            mask: None,
            view_masks: None,
            boxes: &[],
            truth: None,
            pool: None,
        }
    }

    /// Attaches a foreground mask (same size as the image) that was not resized (the native frame's,
    /// or one made at the image's size): every [`MaskResize`] rule sees it as it is.
    pub fn with_mask(mut self, mask: Option<&'a GrayImage>) -> Self {
        self.mask = mask;
        self.view_masks = None;
        self
    }

    /// Attaches the masks resized to the model's view: `nearest` ([`MaskResize::Nearest`]) and the
    /// others in `masks` (each made only when some scenario asks for it).
    fn with_view_masks(mut self, nearest: Option<&'a GrayImage>, masks: ViewMasks<'a>) -> Self {
        self.mask = nearest;
        self.view_masks = Some(masks);
        self
    }

    /// The mask resized by `rule`: `mask` itself where it was not resized or the rule is
    /// [`MaskResize::Nearest`]; `None` without a mask, or where the caller did not make the mask
    /// under this rule (a caller bug, so debug builds stop there).
    pub(crate) fn mask_for(&self, rule: MaskResize) -> Option<&'a GrayImage> {
        match (self.view_masks, rule) {
            (None, _) | (_, MaskResize::Nearest) => self.mask,
            (Some(v), MaskResize::BilinearNonZero) => {
                debug_assert!(
                    self.mask.is_none() || v.bilinear_nonzero.is_some(),
                    "the bilinear mask was not made for a scenario that needs it"
                );
                v.bilinear_nonzero
            }
        }
    }

    /// Attaches object boxes (in the image's pixel coordinates).
    pub fn with_boxes(mut self, boxes: &'a [BBox]) -> Self {
        self.boxes = boxes;
        self
    }

    /// Attaches the background pool as it was before this frame.
    pub fn with_pool(mut self, pool: Option<&'a PoolView>) -> Self {
        self.pool = pool;
        self
    }

    /// Attaches the frame's ground truth.
    pub fn with_truth(mut self, truth: Option<Truth>) -> Self {
        self.truth = truth;
        self
    }
}

/// A frame's mask at the model's view under the rules other than [`MaskResize::Nearest`] (see
/// [`ScenarioInput::with_view_masks`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ViewMasks<'a> {
    /// [`MaskResize::BilinearNonZero`] (Hard ImageNet), when a scenario of the plan needs it.
    pub(crate) bilinear_nonzero: Option<&'a GrayImage>,
}

/// A frame's mask at the scenario stage, owned: at the model view under [`MaskResize::Nearest`]
/// (always; it also gives the boxes) and under [`MaskResize::BilinearNonZero`] when asked for; at
/// the native stage the frame's own mask, which every rule sees as it is.
#[derive(Debug, Default, Clone)]
pub(crate) struct StageMasks {
    /// The nearest (view) or native mask.
    pub(crate) mask: Option<GrayImage>,
    /// Whether `mask` was resized to the model view (then the other rules' masks are below).
    resized: bool,
    /// The [`MaskResize::BilinearNonZero`] mask at the view, when asked for.
    bilinear_nonzero: Option<GrayImage>,
}

impl StageMasks {
    /// A native-stage mask (not resized).
    pub(crate) fn native(mask: Option<GrayImage>) -> Self {
        Self {
            mask,
            resized: false,
            bilinear_nonzero: None,
        }
    }

    /// `mask` at `view`: the nearest mask, and the bilinear one when `bilinear` (see
    /// [`needs_bilinear_mask`]).
    pub(crate) fn at_view(view: &mut ModelView, mask: Option<&GrayImage>, bilinear: bool) -> Self {
        Self {
            mask: mask.map(|m| view.mask(m, MaskResize::Nearest)),
            resized: true,
            bilinear_nonzero: mask
                .filter(|_| bilinear)
                .map(|m| view.mask(m, MaskResize::BilinearNonZero)),
        }
    }

    /// `input` with these masks attached.
    pub(crate) fn attach<'a>(&'a self, input: ScenarioInput<'a>) -> ScenarioInput<'a> {
        if self.resized {
            input.with_view_masks(
                self.mask.as_ref(),
                ViewMasks {
                    bilinear_nonzero: self.bilinear_nonzero.as_ref(),
                },
            )
        } else {
            input.with_mask(self.mask.as_ref())
        }
    }
}

/// Which mask rules a set of scenarios needs beyond [`MaskResize::Nearest`] (always made, it also
/// gives the boxes): whether any of them asks for [`MaskResize::BilinearNonZero`].
pub(crate) fn needs_bilinear_mask<'s>(
    scenarios: impl IntoIterator<Item = &'s dyn Scenario>,
) -> bool {
    scenarios
        .into_iter()
        .any(|s| s.mask_resize() == MaskResize::BilinearNonZero)
}

/// Why a scenario could not produce a variant for a frame.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ScenarioError {
    /// The scenario needs a foreground mask and the frame has none.
    #[error(
        "scenario `{0}` needs a foreground mask; give the source masks (manifest `mask` column)"
    )]
    NeedsMask(String),
    /// The scenario draws from the stream's background pool ([`pool`]) and the caller has none: a
    /// run always keeps one when its plan needs it, so this is `apply` or `preview` without
    /// `--background`, which tell the user so.
    #[error(
        "scenario `{key}` needs {what} from earlier frames of a stream (the background pool), \
         which `apply` and `preview` do not have; evaluate it with `robustream run`"
    )]
    NoPool {
        /// Scenario key.
        key: String,
        /// What it draws from the pool ("backgrounds", "whole images").
        what: &'static str,
    },
    /// The frame is too small or otherwise unsuitable.
    #[error("scenario `{key}`: {reason}")]
    Unsuitable {
        /// Scenario key.
        key: String,
        /// What is wrong and what to do.
        reason: String,
    },
}

/// A named transform of a frame. Implementations must be pure functions of `(input, rng key)`.
pub trait Scenario: Send + Sync {
    /// The scenario key, e.g. `corruption/gaussian_noise/3`.
    fn key(&self) -> &str;
    /// Applies the transform. The output may have a different size than the input only where the
    /// scenario's doc says so.
    fn apply(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError>;
    /// Whether the scenario draws backgrounds from the stream's [`pool`] (the pipeline only keeps a
    /// pool when some scenario of the plan does).
    fn uses_pool(&self) -> bool {
        false
    }
    /// The key the variant's randomness is derived from: every caller builds
    /// `RngKey::new(seed, frame id, scenario.rng_key())`. Defaults to [`Scenario::key`]; scenarios
    /// whose variants must share their noise return a common key (RFS's `fg` and `bg` versions of
    /// one norm, level and trial, docs/hard-imagenet.md#region-noise, see [`region_noise`]).
    fn rng_key(&self) -> &str {
        self.key()
    }
    /// How its benchmark's reference resizes masks to the model's view (the pipeline, `apply` and
    /// `preview` give it [`ScenarioInput::mask_for`] this rule). Defaults to
    /// [`MaskResize::Nearest`]; Hard ImageNet's ablations and RFS noise use
    /// [`MaskResize::BilinearNonZero`] (docs/hard-imagenet.md#data-and-preprocessing).
    fn mask_resize(&self) -> MaskResize {
        MaskResize::Nearest
    }
    /// The ImageNet-C corruption this scenario is, if it is one (the GPU path makes such variants
    /// with its own kernels, docs/gpu.md#gpu-resident-scenarios).
    fn as_corruption(&self) -> Option<&corruption::Corruption> {
        None
    }
    /// The Hard ImageNet ablation this scenario is, if it is one (the GPU path reads its kind,
    /// docs/gpu.md#mask-based-scenarios).
    fn as_ablation(&self) -> Option<&ablation::Ablation> {
        None
    }
    /// The RFS region noise this scenario is, if it is one (the GPU path reads its region, norm
    /// and level, docs/gpu.md#mask-based-scenarios).
    fn as_region_noise(&self) -> Option<&region_noise::RegionNoise> {
        None
    }
    /// The IN-9 / XIMAGENET-12 background scenario this scenario is, if it is one (the GPU path
    /// makes some of its variants with its own kernels, docs/gpu.md#mask-based-scenarios).
    fn as_background(&self) -> Option<&background::Background> {
        None
    }
}

/// Helpers shared by the scenario modules' unit tests.
#[cfg(test)]
pub(crate) mod test_util {
    use image::RgbImage;

    use super::ScenarioError;

    /// `unwrap_err` without printing the image when there is no error.
    pub(crate) trait ExpectFailure {
        fn expect_failure(self) -> ScenarioError;
    }

    impl ExpectFailure for Result<RgbImage, ScenarioError> {
        fn expect_failure(self) -> ScenarioError {
            match self {
                Ok(img) => panic!("expected an error, got a {:?} image", img.dimensions()),
                Err(e) => e,
            }
        }
    }
}
