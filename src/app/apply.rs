//! `robustream apply`: one scenario on one image, written losslessly — the same pixels a run produces
//! for that frame id (with `--model`, after the model's resize and crop, as with
//! `stage = "model_input"`). The image, its regions, its class and the `--background` pool are read
//! as `preview` reads them ([`crate::app::one_image`]). A group or `prefix/*` applies each of its
//! scenarios and writes one file per key into the output folder. The output's extension picks the
//! format (PNG, BMP, TIFF, WebP, all lossless; none = PNG); a JPEG is refused, since it would change
//! the pixels a run scores.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::app::one_image::{
    background_pool, labels_of, model_view_input, read_input, resolve_class,
};
use crate::geometry::stage_boxes;
use crate::model::ModelDesc;
use crate::rng::RngKey;
use crate::scenario::ScenarioStage;
use crate::scenario::{Catalog, ScenarioInput, StageMasks, needs_bilinear_mask};
use crate::view::ModelView;

/// What to apply to which image.
#[derive(Debug, Clone)]
pub struct ApplyRequest {
    /// Scenario key, group or `prefix/*`.
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
    /// Output image (one key), or the folder of one image per key (several).
    pub output: PathBuf,
    /// JPEG quality corruption outputs are stored at (as `jpeg_after_corruption` in a run config).
    pub jpeg_after_corruption: Option<u8>,
    /// Backgrounds for the pool scenarios, `IMG[:CLASS]` or a manifest `.csv` (module docs).
    pub backgrounds: Vec<String>,
    /// The input's class (an index, or with `--model` a label name), as a run's ground truth.
    pub class: Option<String>,
}

/// The image format the extension of `path` asks for: PNG, BMP, TIFF or WebP (lossless), PNG
/// without an extension; a lossy or unknown one is an error naming the file and the fix.
fn output_format(path: &Path) -> anyhow::Result<image::ImageFormat> {
    use image::ImageFormat;
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return Ok(ImageFormat::Png);
    };
    match ImageFormat::from_extension(ext) {
        Some(f @ (ImageFormat::Png | ImageFormat::Bmp | ImageFormat::Tiff | ImageFormat::WebP)) => {
            Ok(f)
        }
        Some(ImageFormat::Jpeg) => bail!(
            "{}: a JPEG would re-compress the scenario's pixels (a run scores them exactly); name \
             the output .png (or .bmp, .tiff, .webp)",
            path.display()
        ),
        _ => bail!(
            "{}: `.{}` is not an image format apply writes; name the output .png (or .bmp, .tiff, \
             .webp)",
            path.display(),
            crate::quote::clip(ext)
        ),
    }
}

/// The file a key's image goes to when an item names several keys: `<folder>/<key with / as _>.png`.
fn key_file(folder: &Path, key: &str) -> PathBuf {
    folder.join(format!("{}.png", key.replace('/', "_")))
}

/// Applies the scenario (or each scenario of a group) and writes the images; returns the files
/// written, in the group's order.
pub fn apply(req: &ApplyRequest) -> anyhow::Result<Vec<PathBuf>> {
    let catalog = Catalog::builtin().with_corruption_jpeg(req.jpeg_after_corruption);
    let item = req.scenario.trim();
    // An unknown item: named with the closest known name, as a run's plan does.
    if let Err(e) = crate::scenario::Plan::from_items(&[item], &catalog) {
        bail!(
            "unknown scenario `{}` (--scenario takes a key, a group or `prefix/*`); run \
             `robustream scenarios` for the list{}",
            crate::quote::clip(item),
            e.suggestion
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default()
        );
    }
    let mut keys = catalog.expand(item).unwrap_or_default();
    keys.dedup();
    let single = keys.len() == 1;
    let format = match single {
        true => output_format(&req.output)?,
        false => image::ImageFormat::Png,
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
    let frame_id = match &req.frame_id {
        Some(id) => id.clone(),
        None => req
            .input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .context("the input path has no file name; pass --frame-id")?,
    };
    if !single {
        // Made once the inputs are read, so a bad input leaves no empty folder behind.
        std::fs::create_dir_all(&req.output).with_context(|| {
            format!(
                "`{item}` names {} scenarios, written one file each into {}, which cannot be \
                 made a folder",
                keys.len(),
                req.output.display()
            )
        })?;
    }
    let mut view = model.as_ref().map(ModelView::new);
    let mut written = Vec::with_capacity(keys.len());
    for key in &keys {
        let Some(scenario) = catalog.build(key) else {
            bail!("unknown scenario `{key}`; run `robustream scenarios` for the list");
        };
        let (image, masks, boxes) = match view.as_mut() {
            Some(view) => {
                let bilinear = needs_bilinear_mask([scenario.as_ref()]);
                model_view_input(view, &image, mask.as_ref(), &boxes, bilinear)
            }
            None => {
                let boxes = stage_boxes(&boxes, mask.as_ref(), <[_]>::to_vec);
                (image.clone(), StageMasks::native(mask.clone()), boxes)
            }
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
        let path = match single {
            true => req.output.clone(),
            false => key_file(&req.output, key),
        };
        out.save_with_format(&path, format)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}
