//! Where a run's scenarios are applied ([`ScenarioStage`]) and a frame's pixels, masks and boxes
//! at that stage ([`at_stage`]): the one rule that the pipeline's workers, the background pool's
//! makers and the GPU path follow.

use image::RgbImage;
use serde::{Deserialize, Serialize};

use super::StageMasks;
use crate::frame::{BBox, Regions};
use crate::geometry::stage_boxes;
use crate::view::ModelView;

/// Where scenarios are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioStage {
    /// On the model's view of the frame (after the resize and crop of the model description), then
    /// normalised. At 224×224 this is exactly how ImageNet-C was made
    /// (docs/imagenet-c.md#how-imagenet-c-was-made): Resize(256) → CenterCrop(224) → corrupt.
    #[default]
    ModelInput,
    /// On the frame at its native size, then resized and cropped for the model: the corruption happens
    /// "in the camera". Severity tables are tuned for 224 px, so the effect differs with frame size.
    Native,
}

/// A frame's pixels, masks and boxes at the scenario stage: the model view (image, masks and boxes
/// through the same geometry; the bilinear mask only when `bilinear`) or the native frame. Boxes
/// are the frame's own, else the (nearest) mask's tight box (`geometry::stage_boxes`).
pub(crate) fn at_stage(
    view: &mut ModelView,
    stage: ScenarioStage,
    image: &RgbImage,
    regions: Option<&Regions>,
    bilinear: bool,
) -> (RgbImage, StageMasks, Vec<BBox>) {
    let mask = regions.and_then(|r| r.mask.as_ref());
    let (base, masks) = match stage {
        ScenarioStage::ModelInput => (view.image(image), StageMasks::at_view(view, mask, bilinear)),
        ScenarioStage::Native => (image.clone(), StageMasks::native(mask.cloned())),
    };
    let boxes = regions.map_or(&[][..], |r| &r.boxes);
    let base_boxes = stage_boxes(boxes, masks.mask.as_ref(), |b| match stage {
        ScenarioStage::ModelInput => view.boxes(b, image.dimensions()),
        ScenarioStage::Native => b.to_vec(),
    });
    (base, masks, base_boxes)
}
