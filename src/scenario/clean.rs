//! The `clean` scenario: the frame as it is. Always first in a plan; the reference for accuracy drop
//! and prediction agreement.

use image::RgbImage;

use super::{RngKey, Scenario, ScenarioError, ScenarioInput};

/// The identity scenario, key `clean`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Clean;

impl Scenario for Clean {
    fn key(&self) -> &str {
        crate::key::CLEAN
    }

    fn apply(&self, input: &ScenarioInput<'_>, _rng: RngKey) -> Result<RgbImage, ScenarioError> {
        Ok(input.image.clone())
    }
}
