//! The one image `robustream apply` and `robustream preview` take: the image with its mask and boxes,
//! its class, and the backgrounds of `--background` for the pool scenarios.
//!
//! **Backgrounds** (`--background`, also used by `robustream preview`): a run's pool scenarios
//! (`background/mixed_same|mixed_rand|mixed_next`, `background/random_bg_add|random_bg_paste`,
//! `placement/other/…`) draw backgrounds from earlier frames of the stream (`scenario::pool`,
//! docs/in9.md#mixed-same-mixed-rand-and-mixed-next, docs/ximagenet.md#random-background,
//! docs/corner-cases.md#composition). A single image has no stream, so these scenarios fail unless
//! backgrounds are given: [`background_pool`] fills a pool with them for this one frame, exactly as
//! the pipeline fills it (each background enters the pool in the order given, keyed by its file
//! name; the draw among them is the run's keyed draw). Each `--background` is
//! - `IMG[:CLASS]`: an image, with its mask `<stem>.mask.png|npy` next to it when there is one (as in
//!   a folder source). With a mask the pool background is IN-9's Only-BG-T of the image (the object's
//!   box tiled over, [`pool_background`], as in a run; XIMAGENET-12's `random_bg_add|paste` take
//!   the whole image, as in a run); **without one the whole image is taken as the
//!   background** (a run never does this: its pool only holds frames with regions; here it lets any
//!   photo serve as a background). `CLASS` (after the last `:`) is the background's class: an index,
//!   or with `--model` a name of the model's labels;
//! - a manifest `.csv` (`path,label[,mask,boxes,annotation]`, as a run's manifest): every row is a
//!   background, the label its class, with its mask / boxes.
//!
//! The frame's own class (`--class`) chooses among them as in a run: `mixed_same` takes a background
//! of the same class, `mixed_next` of the next class present, `placement/other` of another class.

use std::path::{Path, PathBuf};

use std::sync::Arc;

use image::{GrayImage, RgbImage};

use crate::frame::{BBox, Frame, LabelSpace, Regions, Truth};
use crate::geometry::stage_boxes;
use crate::model::ModelDesc;
use crate::scenario::ScenarioStage;
use crate::scenario::background::pool_background;
use crate::scenario::pool::BackgroundMaker;
use crate::scenario::{BackgroundPool, PoolView, StageMasks};
use crate::source::regions::{BoxError, BoxSpec, parse_norm_boxes, resolve_boxes};
use crate::source::{Source, SourceError};
use crate::view::ModelView;

/// A failure reading the one image of `apply` / `preview`, its class or its `--background`s. Each
/// message is the one line the command reports (`robustream::error_line`), as it always read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OneImageError {
    /// The image, its mask, its boxes or a background image could not be read (the file, what is
    /// wrong, what to do).
    #[error(transparent)]
    Source(#[from] SourceError),
    /// `--boxes` is not a list of normalised boxes.
    #[error("--boxes: {0}")]
    Boxes(#[source] BoxError),
    /// A class that is not an index, given without a model whose labels would name it.
    #[error("{flag} `{text}`: without --model give the class as an index")]
    ClassNotIndex {
        /// The option the class came with (`--class`, `--background IMG:CLASS`).
        flag: String,
        /// The class as given.
        text: String,
    },
    /// A class that is none of the model's labels.
    #[error("{flag} `{text}` is not a class of the model's labels (a name, alias or index)")]
    UnknownClass {
        /// The option the class came with (`--class`, `--background IMG:CLASS`).
        flag: String,
        /// The class as given.
        text: String,
    },
    /// A `--background` manifest given a `:CLASS` (its rows carry their own).
    #[error("--background {spec}: a manifest's classes are its `label` column; drop `:CLASS`")]
    ManifestClass {
        /// The `--background` value as given.
        spec: String,
    },
    /// A `--background` manifest could not be opened.
    #[error("--background {}", path.display())]
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// Why.
        source: SourceError,
    },
    /// A row of a `--background` manifest could not be read; `needs_model` when class names came
    /// without a model to name them.
    #[error(
        "--background {}{}",
        path.display(),
        if *needs_model { " (class names need --model)" } else { "" }
    )]
    ManifestRow {
        /// The manifest.
        path: PathBuf,
        /// Whether the run has no labels (no `--model`).
        needs_model: bool,
        /// Why.
        source: SourceError,
    },
}

/// Reads a single input as `apply` and `preview` take it: the image, its mask (checked against the
/// image's size) and its boxes (`--boxes` normalised xyxy, else a VOC `--annotation`), all at the
/// image's native size.
pub(crate) fn read_input(
    input: &Path,
    mask: Option<&PathBuf>,
    boxes: Option<&str>,
    annotation: Option<&PathBuf>,
) -> Result<(RgbImage, Option<GrayImage>, Vec<BBox>), OneImageError> {
    let image = crate::source::decode::read_rgb(input)?;
    let mask = match mask {
        Some(path) => Some(crate::source::mask::load(path, input, image.dimensions())?),
        None => None,
    };
    let spec = match (boxes, annotation) {
        (Some(text), _) => Some(BoxSpec::Normalized(
            parse_norm_boxes(text).map_err(OneImageError::Boxes)?,
        )),
        (None, Some(xml)) => Some(BoxSpec::Voc(xml.clone())),
        (None, None) => None,
    };
    let boxes = match &spec {
        Some(spec) => resolve_boxes(spec, input, image.dimensions())?,
        None => Vec::new(),
    };
    Ok((image, mask, boxes))
}

/// The model's view of a native input: image, masks and boxes through the same geometry (the
/// bilinear mask only when `bilinear`, see [`crate::scenario::needs_bilinear_mask`]); without boxes the scenarios get
/// the (nearest) mask's tight box at the view (as in a run).
pub(crate) fn model_view_input(
    view: &mut ModelView,
    image: &RgbImage,
    mask: Option<&GrayImage>,
    boxes: &[BBox],
    bilinear: bool,
) -> (RgbImage, StageMasks, Vec<BBox>) {
    let size = image.dimensions();
    let masks = StageMasks::at_view(view, mask, bilinear);
    let boxes = stage_boxes(boxes, masks.mask.as_ref(), |b| view.boxes(b, size));
    (view.image(image), masks, boxes)
}

/// The label space classes are named in: the model's labels, or none without a model (then classes
/// are indices).
pub(crate) fn labels_of(model: Option<&ModelDesc>) -> LabelSpace {
    model.map_or_else(|| LabelSpace::new(Vec::new()), |m| m.labels.clone())
}

/// A class given on the command line: an index, or a name of `labels` (the model's).
pub(crate) fn resolve_class(
    class: Option<&str>,
    labels: &LabelSpace,
    flag: &str,
) -> Result<Option<Truth>, OneImageError> {
    let Some(text) = class else { return Ok(None) };
    if labels.is_empty() {
        return match text.trim().parse::<usize>() {
            Ok(i) => Ok(Some(Truth(i))),
            Err(_) => Err(OneImageError::ClassNotIndex {
                flag: flag.to_string(),
                text: text.to_string(),
            }),
        };
    }
    labels
        .resolve(text)
        .map(|i| Some(Truth(i)))
        .ok_or_else(|| OneImageError::UnknownClass {
            flag: flag.to_string(),
            text: text.to_string(),
        })
}

/// Splits `IMG[:CLASS]`: the class is what follows the last `:` when that is not empty and holds no
/// path separator; otherwise the whole text is the image path.
///
/// ```
/// # use robustream::app::one_image::split_background;
/// assert_eq!(split_background("bg/a.png:3"), ("bg/a.png", Some("3")));
/// assert_eq!(split_background("bg/a.png:tabby cat"), ("bg/a.png", Some("tabby cat")));
/// assert_eq!(split_background("c:/x/a.png"), ("c:/x/a.png", None));
/// assert_eq!(split_background("a.png"), ("a.png", None));
/// ```
pub fn split_background(spec: &str) -> (&str, Option<&str>) {
    match spec.rsplit_once(':') {
        Some((path, class)) if !path.is_empty() && !class.is_empty() && !class.contains('/') => {
            (path, Some(class))
        }
        _ => (spec, None),
    }
}

/// The mask next to an image (`<stem>.mask.png` or `<stem>.mask.npy`, the folder-source rule).
fn mask_next_to(image: &Path) -> Option<PathBuf> {
    let stem = image.file_stem()?.to_string_lossy().into_owned();
    let dir = image.parent().unwrap_or(Path::new(""));
    [".mask.png", ".mask.npy"]
        .iter()
        .map(|suffix| dir.join(format!("{stem}{suffix}")))
        .find(|p| p.is_file())
}

/// The frames the `--background` options name, in order (module docs): images with their mask next
/// to them (or an empty mask, meaning "the whole image is background"), and manifest rows.
fn background_frames(specs: &[String], labels: &LabelSpace) -> Result<Vec<Frame>, OneImageError> {
    let mut frames = Vec::new();
    for spec in specs {
        let (path, class) = split_background(spec);
        let path = Path::new(path);
        let is_csv = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        if is_csv {
            if class.is_some() {
                return Err(OneImageError::ManifestClass { spec: spec.clone() });
            }
            let mut source = crate::source::manifest::open(path, labels).map_err(|source| {
                OneImageError::Manifest {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
            while let Some(frame) = source.next_frame() {
                let mut frame = frame.map_err(|source| OneImageError::ManifestRow {
                    path: path.to_path_buf(),
                    needs_model: labels.is_empty(),
                    source,
                })?;
                // A row without regions: the whole image is the background (see below).
                if frame.regions.is_none() {
                    frame.regions = Some(whole_background(&frame.image));
                }
                frames.push(frame);
            }
            continue;
        }
        let image = crate::source::decode::read_rgb(path)?;
        let regions = match mask_next_to(path) {
            Some(m) => Regions {
                mask: Some(crate::source::mask::load(&m, path, image.dimensions())?),
                boxes: Vec::new(),
            },
            None => whole_background(&image),
        };
        let label = format!("--background {spec}");
        frames.push(Frame {
            truth: resolve_class(class, labels, &label)?,
            regions: Some(regions),
            ..Frame::new(
                path.file_name()
                    .map_or_else(|| spec.clone(), |n| n.to_string_lossy().into_owned()),
                frames.len() as u64,
                image,
            )
        });
    }
    Ok(frames)
}

/// The regions marking a background given without mask or boxes: an all-zero mask (no foreground),
/// which [`background_maker`] reads as "the whole image is the background". The pool only admits
/// frames with regions, so this is how such an image gets in.
fn whole_background(image: &RgbImage) -> Regions {
    Regions {
        mask: Some(GrayImage::new(image.width(), image.height())),
        boxes: Vec::new(),
    }
}

/// The pool's background maker for `apply` / `preview`: the background at the scenario stage
/// (`stage`: the model and where scenarios apply; `None` = the image as it is), then IN-9's
/// Only-BG-T ([`pool_background`], as the pipeline's maker does); a background marked by
/// [`whole_background`] is taken whole.
fn background_maker(stage: Option<(&ModelDesc, ScenarioStage)>) -> Arc<BackgroundMaker> {
    let view_model = match stage {
        Some((m, ScenarioStage::ModelInput)) => Some(m.clone()),
        _ => None,
    };
    Arc::new(move |image: &RgbImage, regions: &Regions| {
        let whole = regions.boxes.is_empty()
            && regions
                .mask
                .as_ref()
                .is_some_and(|m| m.as_raw().iter().all(|&v| v == 0));
        let (base, mask, boxes) = match &view_model {
            Some(m) => {
                let mut view = ModelView::new(m);
                let (base, masks, boxes) = model_view_input(
                    &mut view,
                    image,
                    regions.mask.as_ref(),
                    &regions.boxes,
                    false,
                );
                (base, masks.mask, boxes)
            }
            None => {
                let boxes = stage_boxes(&regions.boxes, regions.mask.as_ref(), <[_]>::to_vec);
                (image.clone(), regions.mask.clone(), boxes)
            }
        };
        match whole {
            true => Some(base),
            false => pool_background(&base, mask.as_ref(), &boxes),
        }
    })
}

/// A background pool holding the `--background` images (module docs) for one frame, or `None` when
/// none are given (pool scenarios then report that they need a stream). `stage`: the model and where
/// scenarios apply (`None`: the images as they are); `seed`: the run seed (the pool's reservoir is
/// sized to keep every background, so it does not matter here, but the pool is built as a run's is).
pub(crate) fn background_pool(
    specs: &[String],
    labels: &LabelSpace,
    stage: Option<(&ModelDesc, ScenarioStage)>,
    seed: u64,
) -> Result<Option<PoolView>, OneImageError> {
    if specs.is_empty() {
        return Ok(None);
    }
    let frames = background_frames(specs, labels)?;
    let mut pool = BackgroundPool::new(frames.len(), seed, background_maker(stage));
    if let Some(whole) = stage.and_then(|(m, s)| crate::scenario::pool::pool_whole_maker(m, s)) {
        pool = pool.with_whole_maker(whole);
    }
    for frame in &frames {
        pool.offer(frame);
    }
    Ok(Some((*pool.view()).clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_the_labels_cannot_name_is_its_kind() {
        let none = LabelSpace::new(Vec::new());
        let e = resolve_class(Some("cat"), &none, "--class").unwrap_err();
        assert!(matches!(&e, OneImageError::ClassNotIndex { text, .. } if text == "cat"));
        assert_eq!(
            crate::error_line(&e),
            "--class `cat`: without --model give the class as an index"
        );
        let abc = LabelSpace::new(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(
            resolve_class(Some("b"), &abc, "--class").unwrap(),
            Some(Truth(1))
        );
        let e = resolve_class(Some("dog"), &abc, "--class").unwrap_err();
        assert!(matches!(e, OneImageError::UnknownClass { .. }));
        assert_eq!(
            crate::error_line(&e),
            "--class `dog` is not a class of the model's labels (a name, alias or index)"
        );
        let specs = vec!["list.csv:3".to_string()];
        let e = background_pool(&specs, &abc, None, 0).err().unwrap();
        assert!(matches!(e, OneImageError::ManifestClass { .. }), "{e}");
    }
}
