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
pub mod clean;
pub mod corruption;
pub mod placement;
pub mod plan;
pub mod pool;
pub mod region_noise;
pub mod rng;
pub mod schedule;

use image::{GrayImage, RgbImage};

use crate::frame::{BBox, Truth};

pub use catalog::{Catalog, CatalogEntry};
pub use plan::Plan;
pub use pool::{BackgroundPool, PoolView};
pub use rng::{RngKey, ScenarioRng};

/// What a scenario gets to work on. Build it with [`ScenarioInput::new`] and the `with_*` methods so
/// that new context (e.g. a background pool) can be added without touching every call site.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioInput<'a> {
    /// The frame's pixels (at the stage the plan applies scenarios: the model's input view or the
    /// native frame, see `pipeline::ScenarioStage`).
    pub image: &'a RgbImage,
    /// Foreground mask of the same size (0 = background, 255 = foreground), when the source has one.
    pub mask: Option<&'a GrayImage>,
    /// Object boxes in the image's pixel coordinates (empty when the source has none).
    pub boxes: &'a [BBox],
    /// The frame's ground truth in the dataset label space, when known.
    pub truth: Option<Truth>,
    /// Backgrounds from earlier frames of the stream (see [`pool`]), when a scenario of the plan uses
    /// them ([`Scenario::uses_pool`]).
    pub pool: Option<&'a PoolView>,
}

impl<'a> ScenarioInput<'a> {
    /// An input with pixels only: no mask, no boxes, no truth.
    pub fn new(image: &'a RgbImage) -> Self {
        Self {
            image,
            mask: None,
            boxes: &[],
            truth: None,
            pool: None,
        }
    }

    /// Attaches a foreground mask (same size as the image).
    pub fn with_mask(mut self, mask: Option<&'a GrayImage>) -> Self {
        self.mask = mask;
        self
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

/// Why a scenario could not produce a variant for a frame.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ScenarioError {
    /// The scenario needs a foreground mask and the frame has none.
    #[error(
        "scenario `{0}` needs a foreground mask; give the source masks (manifest `mask` column)"
    )]
    NeedsMask(String),
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
