//! Scenarios: named, parameterised transforms of a frame (`clean`, `corruption/<name>/<severity>`,
//! later `background/...`, `ablation/...`, `region_noise/...`, `placement/...`), the catalogue of every
//! key and group, and the [`Plan`] built from a config.
//!
//! A scenario sees pixels only (an RGB image and, when the source has one, a foreground mask); it never
//! knows about engines or metrics. Randomness comes from a [`RngKey`] derived from
//! `(run seed, frame id, scenario key)`.

pub mod catalog;
pub mod clean;
pub mod corruption;
pub mod plan;
pub mod rng;

use image::{GrayImage, RgbImage};

pub use catalog::{Catalog, CatalogEntry};
pub use plan::Plan;
pub use rng::{RngKey, ScenarioRng};

/// What a scenario gets to work on.
#[derive(Debug, Clone, Copy)]
pub struct ScenarioInput<'a> {
    /// The frame's pixels (at the stage the plan applies scenarios: the model's input view or the
    /// native frame, see `config::ScenarioStage`).
    pub image: &'a RgbImage,
    /// Foreground mask of the same size (0 = background, 255 = foreground), when the source has one.
    pub mask: Option<&'a GrayImage>,
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
}
