//! `robustream apply`: one scenario on one image, written as PNG — the same pixels a run produces for
//! that frame id (with `--model`, after the model's resize and crop, as with `stage = "model_input"`).
//! The image, its regions, its class and the `--background` pool are read as `preview` reads them
//! ([`crate::one_image`]).

use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::geometry::stage_boxes;
use crate::model::ModelDesc;
use crate::one_image::{background_pool, labels_of, model_view_input, read_input, resolve_class};
use crate::pipeline::ScenarioStage;
use crate::rng::RngKey;
use crate::scenario::{Catalog, ScenarioInput, StageMasks, needs_bilinear_mask};
use crate::view::ModelView;

/// What to apply to which image.
#[derive(Debug, Clone)]
pub struct ApplyRequest {
    /// Scenario key.
    pub scenario: String,
    /// Run seed.
    pub seed: u64,
    /// Optional foreground mask of the input's size.
    pub mask: Option<PathBuf>,
    /// Optional object boxes, normalised xyxy in the manifest `boxes` format
    /// ([`crate::source::regions::parse_norm_boxes`]).
    pub boxes: Option<String>,
    /// Optional Pascal VOC annotation with the object boxes.
    pub annotation: Option<PathBuf>,
    /// Frame id keying the randomness; default the input's file name.
    pub frame_id: Option<String>,
    /// Optional model description whose view (resize + crop) is taken first.
    pub model: Option<PathBuf>,
    /// Input image.
    pub input: PathBuf,
    /// Output PNG.
    pub output: PathBuf,
    /// JPEG quality corruption outputs are stored at (as `jpeg_after_corruption` in a run config).
    pub jpeg_after_corruption: Option<u8>,
    /// Backgrounds for the pool scenarios, `IMG[:CLASS]` or a manifest `.csv` (module docs).
    pub backgrounds: Vec<String>,
    /// The input's class (an index, or with `--model` a label name), as a run's ground truth.
    pub class: Option<String>,
}

/// Applies the scenario and writes the PNG.
pub fn apply(req: &ApplyRequest) -> anyhow::Result<()> {
    let catalog = Catalog::builtin().with_corruption_jpeg(req.jpeg_after_corruption);
    let Some(scenario) = catalog.build(&req.scenario) else {
        bail!(
            "unknown scenario `{}`; run `robustream scenarios` for the list",
            req.scenario
        );
    };
    let (image, mask, boxes) = read_input(
        &req.input,
        req.mask.as_ref(),
        req.boxes.as_deref(),
        req.annotation.as_ref(),
    )?;
    let model = req.model.as_deref().map(ModelDesc::load).transpose()?;
    let labels = labels_of(model.as_ref());
    let truth = resolve_class(req.class.as_deref(), &labels, "--class")?;
    let stage = model.as_ref().map(|m| (m, ScenarioStage::ModelInput));
    let pool = background_pool(&req.backgrounds, &labels, stage, req.seed)?;
    let (image, masks, boxes) = match &model {
        Some(model) => {
            let mut view = ModelView::new(model);
            let bilinear = needs_bilinear_mask([scenario.as_ref()]);
            model_view_input(&mut view, &image, mask.as_ref(), &boxes, bilinear)
        }
        None => {
            let boxes = stage_boxes(&boxes, mask.as_ref(), <[_]>::to_vec);
            (image, StageMasks::native(mask), boxes)
        }
    };
    let frame_id = match &req.frame_id {
        Some(id) => id.clone(),
        None => req
            .input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .context("the input path has no file name; pass --frame-id")?,
    };
    let input = masks
        .attach(ScenarioInput::new(&image))
        .with_boxes(&boxes)
        .with_truth(truth)
        .with_pool(pool.as_ref());
    let out = scenario
        .apply(&input, RngKey::new(req.seed, &frame_id, scenario.rng_key()))
        .map_err(|e| match &e {
            crate::scenario::ScenarioError::NoPool { .. } => anyhow::anyhow!(
                "{e}; or give it backgrounds here with --background IMG[:CLASS] (and --class)"
            ),
            _ => e.into(),
        })?;
    out.save_with_format(&req.output, image::ImageFormat::Png)
        .with_context(|| format!("cannot write {}", req.output.display()))?;
    Ok(())
}
