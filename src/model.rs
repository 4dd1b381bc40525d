//! Model descriptions: the small TOML next to each model file that says everything model-specific
//! (input tensor, size, resize/crop policy, normalisation, output kind, class labels, optional class
//! map). Nothing model-specific is hard-coded elsewhere. Every key: docs/model-description.md; the
//! framework presets that fill `[preprocess]` live in `preset`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::frame::LabelSpace;

mod preset;
pub(crate) use preset::Preset;

/// Why a model description could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelDescError {
    /// The file could not be read.
    #[error("cannot read model description {}: {source}; {}", path.display(), read_fix(path, source))]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TOML is malformed or has an unknown/missing key.
    #[error("model description {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, which names the key and line.
        message: String,
    },
    /// A size or preprocessing value is out of range or inconsistent (the kind in `source`).
    #[error("model description {path}: {source}")]
    Value {
        /// The file.
        path: PathBuf,
        /// Which table's value is wrong, and how.
        source: DescValueError,
    },
    /// A value is out of range or inconsistent.
    #[error("model description {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
}

/// A value of a model description's `[input]` or `[preprocess]` table that cannot be used, by the
/// step it is about. Display = the message, naming the key and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DescValueError {
    /// `[input] width` / `height` out of range.
    #[error("{0}")]
    InputSize(String),
    /// `[preprocess] resize_shorter` or `resize` out of range, in conflict, or without effect.
    #[error("{0}")]
    Resize(String),
    /// `[preprocess] mean` / `std` / `scale` not finite, not positive, or on the wrong scale.
    #[error("{0}")]
    Normalize(String),
    /// `[preprocess] preset` together with a shape key that describes another resize or crop than
    /// the preset's (docs/model-description.md#presets).
    #[error("{0}")]
    PresetConflict(String),
    /// A required `[preprocess]` key (`crop`, `mean`, `std`) is absent and no preset fills it.
    #[error("{0}")]
    Missing(String),
}

/// The largest input side and `resize_shorter` a description may give, in pixels: one 8192² image
/// is 805 MB of f32 tensor, far beyond any classifier; a larger value is a typo.
const MAX_SIDE: u32 = 8192;

/// Rejects degenerate input sizes and preprocessing: each message names the key and the fix.
fn check_values(input: &InputDesc, p: &PreprocessDesc) -> Result<(), DescValueError> {
    let (w, h) = (input.width, input.height);
    if w == 0 || h == 0 {
        return Err(DescValueError::InputSize(format!(
            "`[input] width` = {w} and `height` = {h}: both must be positive (the model's input \
             size in pixels)"
        )));
    }
    if w > MAX_SIDE || h > MAX_SIDE {
        return Err(DescValueError::InputSize(format!(
            "`[input] width` = {w} and `height` = {h}: at most {MAX_SIDE} pixels each (one image \
             tensor of that size is already 805 MB); give the model's input size"
        )));
    }
    if let Some(s) = p.resize_shorter {
        if s == 0 {
            return Err(DescValueError::Resize(
                "`[preprocess] resize_shorter` = 0 would shrink every frame to nothing (the model \
                 would see one colour); remove the key for no resize, or give the shorter side \
                 before the crop (e.g. 256 for a 224 input)"
                    .into(),
            ));
        }
        if p.crop == Crop::Squash {
            return Err(DescValueError::Resize(format!(
                "`[preprocess] resize_shorter` = {s} has no effect with `crop = \"squash\"` (the \
                 frame is squashed straight to the input size); remove it, or use \
                 `crop = \"center\"`"
            )));
        }
        if s < w.min(h) {
            return Err(DescValueError::Resize(format!(
                "`[preprocess] resize_shorter` = {s} is smaller than the {w}×{h} input, so the \
                 centre crop would pad every frame with black; make it at least {} (ImageNet \
                 models: 256 for a 224 input)",
                w.min(h)
            )));
        }
        if s > MAX_SIDE {
            return Err(DescValueError::Resize(format!(
                "`[preprocess] resize_shorter` = {s}: at most {MAX_SIDE} pixels (every frame is \
                 resized to it before the crop); give the shorter side the model was trained with"
            )));
        }
    }
    if let Some(r) = p.resize {
        check_resize(r, w, h, p)?;
    }
    if p.mean.iter().any(|m| !m.is_finite()) {
        return Err(DescValueError::Normalize(
            "`[preprocess] mean` must be finite numbers (on the pixel scale `scale` gives, 0..255 by \
             default)"
                .into(),
        ));
    }
    if p.std.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
        return Err(DescValueError::Normalize(format!(
            "`[preprocess] std` = {:?}: each must be a positive number (on the pixel scale \
             `scale` gives, 0..255 by default; the pixels are divided by it)",
            p.std
        )));
    }
    if !(p.scale.is_finite() && p.scale > 0.0) {
        return Err(DescValueError::Normalize(format!(
            "`[preprocess] scale` = {}: must be a number above 0 (the factor from 0..255 pixels to \
             the scale of `mean` and `std`: 0.00392157 = 1/255 for 0..1), or remove it for 1",
            p.scale
        )));
    }
    if p.scale == 1.0
        && p.std.iter().all(|s| *s < 1.0)
        && p.mean.iter().all(|m| (0.0..=1.0).contains(m))
    {
        return Err(DescValueError::Normalize(format!(
            "`[preprocess] mean` = {:?} and `std` = {:?} look like the 0..1 scale, but they are on \
             the 0..255 pixel scale: multiply them by 255 (ImageNet's are mean = [123.675, \
             116.28, 103.53], std = [58.395, 57.12, 57.375]), or add `scale = 0.00392157` (1/255) \
             to keep them",
            p.mean, p.std
        )));
    }
    if p.scale * 255.0 <= 1.0 + 1e-4 && p.mean.iter().any(|m| m.abs() > 2.0) {
        return Err(DescValueError::Normalize(format!(
            "`[preprocess] mean` = {:?} looks like the 0..255 pixel scale, but `scale` = {} brings \
             the pixels to 0..1 first: give mean and std on the 0..1 scale (divide them by 255), \
             or set `scale = 1.0`",
            p.mean, p.scale
        )));
    }
    Ok(())
}

/// Checks `[preprocess] resize` (a squash to a fixed size before the centre crop): each message
/// names the key and the fix.
fn check_resize(r: ResizeDesc, w: u32, h: u32, p: &PreprocessDesc) -> Result<(), DescValueError> {
    let (rw, rh) = (r.width, r.height);
    if let Some(s) = p.resize_shorter {
        return Err(DescValueError::Resize(format!(
            "`[preprocess] resize_shorter` = {s} and `resize` = {{ width = {rw}, height = {rh} }} \
             are two different resizes: keep `resize_shorter` for torchvision `Resize({s})` (aspect \
             ratio kept) or `resize` for `Resize(({rh}, {rw}))` (squash), not both"
        )));
    }
    if p.crop == Crop::Squash {
        return Err(DescValueError::Resize(format!(
            "`[preprocess] resize` = {{ width = {rw}, height = {rh} }} has no effect with `crop = \
             \"squash\"` (the frame is squashed straight to the input size); remove it, or use \
             `crop = \"center\"` to squash to {rw}×{rh} and then centre-crop {w}×{h}"
        )));
    }
    if rw == 0 || rh == 0 || rw > MAX_SIDE || rh > MAX_SIDE {
        return Err(DescValueError::Resize(format!(
            "`[preprocess] resize` = {{ width = {rw}, height = {rh} }}: each side must be 1..={MAX_SIDE} \
             pixels (the size every frame is squashed to before the centre crop; Hard ImageNet: \
             width = 256, height = 256 for a 224 input)"
        )));
    }
    if rw < w || rh < h {
        return Err(DescValueError::Resize(format!(
            "`[preprocess] resize` = {{ width = {rw}, height = {rh} }} is smaller than the {w}×{h} \
             input, so the centre crop would pad every frame with black; make width at least {w} \
             and height at least {h} (Hard ImageNet: 256×256 for a 224 input)"
        )));
    }
    Ok(())
}

/// What to do about a model description that cannot be read.
fn read_fix(path: &Path, e: &std::io::Error) -> &'static str {
    if path
        .extension()
        .is_some_and(|x| x.eq_ignore_ascii_case("onnx"))
    {
        "--model and `model` take the model's description (a .toml naming the .onnx file, like \
         models/efficientnet_lite0.toml), not the .onnx file itself"
    } else if e.kind() == std::io::ErrorKind::NotFound {
        "check --model or `model` in the run config (relative to the config file); the demo \
         model's is assets/models/efficientnet_lite0.toml, installed by `bash scripts/setup.sh`"
    } else {
        "check --model or `model` in the run config: it names a readable model description (.toml)"
    }
}

/// Tensor memory layout of the image input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// batch × channels × height × width (PyTorch exports).
    Nchw,
    /// batch × height × width × channels (TensorFlow exports).
    Nhwc,
}

/// How the frame is brought to the input size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Crop {
    /// Centre crop of the input size after the optional shorter-side resize (torchvision
    /// `CenterCrop`; pads with black if the image is smaller).
    Center,
    /// No crop: squash-resize straight to the input size (aspect ratio not kept).
    Squash,
}

/// What the model's output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputKind {
    /// Unnormalised scores; probabilities are their softmax.
    Logits,
    /// Already probabilities.
    Probabilities,
}

/// `[input]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputDesc {
    /// Input tensor name.
    pub name: String,
    /// Tensor layout.
    pub(crate) layout: Layout,
    /// Input height in pixels.
    pub height: u32,
    /// Input width in pixels.
    pub width: u32,
}

/// `[preprocess]` table, resolved: a `preset`'s values with the keys written next to it in their
/// place (docs/model-description.md#preprocess).
#[derive(Debug, Clone, PartialEq)]
pub struct PreprocessDesc {
    /// The preset the values started from, if any.
    pub(crate) preset: Option<Preset>,
    /// Resize so the shorter side has this many pixels (long side truncated, torchvision `Resize(n)`)
    /// before cropping; absent = no resize before the crop.
    pub resize_shorter: Option<u32>,
    /// Squash every frame to exactly this size before the centre crop (torchvision
    /// `Resize((height, width))`, aspect ratio not kept; Hard ImageNet's 256×256 → 224,
    /// docs/hard-imagenet.md#data-and-preprocessing). Not with `resize_shorter` or
    /// `crop = "squash"`.
    pub resize: Option<ResizeDesc>,
    /// Crop policy.
    pub(crate) crop: Crop,
    /// The resize filter (Pillow-exact, docs/preprocessing.md#pillow-exact-resampling).
    pub(crate) interpolation: Interpolation,
    /// Factor from the 0..255 pixel values to the scale of `mean` and `std` (1 = 0..255,
    /// 1/255 = 0..1).
    pub(crate) scale: f32,
    /// Per-channel mean (R, G, B) on the scale `scale` gives, subtracted first.
    pub mean: [f32; 3],
    /// Per-channel standard deviation (R, G, B) on the scale `scale` gives, divided by after.
    pub std: [f32; 3],
    /// The order the tensor's channels are written in (`mean` and `std` stay R, G, B).
    pub(crate) channels: Channels,
}

/// `[preprocess]` as written: every key optional, so that a preset can fill the rest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreprocess {
    preset: Option<Preset>,
    resize_shorter: Option<u32>,
    resize: Option<ResizeDesc>,
    crop: Option<Crop>,
    interpolation: Option<Interpolation>,
    scale: Option<f32>,
    mean: Option<[f32; 3]>,
    std: Option<[f32; 3]>,
    channels: Option<Channels>,
}

/// The resize filter of `[preprocess] interpolation`, each Pillow's (`PIL.Image.Resampling`) and
/// reproduced bit for bit (docs/preprocessing.md#pillow-exact-resampling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Interpolation {
    /// Pillow `NEAREST` (Keras `load_img`'s default).
    Nearest,
    /// Pillow `BOX` (area average when shrinking).
    Box,
    /// Pillow `BILINEAR`, antialiased (torchvision's default; the default here).
    #[default]
    Bilinear,
    /// Pillow `BICUBIC` (a = −0.5), antialiased (timm's usual choice).
    Bicubic,
    /// Pillow `LANCZOS` (3 lobes), antialiased.
    Lanczos,
}

/// The order the image input's channels are written in (`[preprocess] channels`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Channels {
    /// Red, green, blue (PyTorch and most exports; the default).
    #[default]
    Rgb,
    /// Blue, green, red (Caffe-style models, Keras `preprocess_input` mode "caffe", OpenCV).
    Bgr,
}

impl Channels {
    /// The colour (0 = R, 1 = G, 2 = B) written at each tensor channel.
    pub(crate) fn order(self) -> [usize; 3] {
        match self {
            Channels::Rgb => [0, 1, 2],
            Channels::Bgr => [2, 1, 0],
        }
    }
}

/// The shape rule of a preset, for conflict messages: `shorter side to 256, then a 224×224 centre
/// crop` or `a squash to 224×224`.
fn shape_words(p: &PreprocessDesc, width: u32, height: u32) -> String {
    match p.resize_shorter {
        Some(s) => format!("shorter side to {s}, then a {width}×{height} centre crop"),
        None => format!("a squash to {width}×{height}"),
    }
}

/// `raw` with its preset's values filled in where no key is written; without a preset, `crop`,
/// `mean` and `std` must be written (docs/model-description.md#presets).
fn resolve(raw: RawPreprocess, width: u32, height: u32) -> Result<PreprocessDesc, DescValueError> {
    let Some(preset) = raw.preset else {
        let missing = |key: &str, example: &str| {
            DescValueError::Missing(format!(
                "`[preprocess]` has no `{key}`: give it (e.g. `{key} = {example}`), or a `preset` \
                 that fills it ({})",
                Preset::list()
            ))
        };
        return Ok(PreprocessDesc {
            preset: None,
            resize_shorter: raw.resize_shorter,
            resize: raw.resize,
            crop: raw.crop.ok_or_else(|| missing("crop", "\"center\""))?,
            interpolation: raw.interpolation.unwrap_or_default(),
            scale: raw.scale.unwrap_or(1.0),
            mean: raw
                .mean
                .ok_or_else(|| missing("mean", "[123.675, 116.28, 103.53]"))?,
            std: raw
                .std
                .ok_or_else(|| missing("std", "[58.395, 57.12, 57.375]"))?,
            channels: raw.channels.unwrap_or_default(),
        });
    };
    let base = preset.values(width, height);
    let name = preset.name();
    let conflict = |key: String| {
        DescValueError::PresetConflict(format!(
            "{key} is another resize or crop than preset `{name}`'s ({}): remove it to keep the \
             preset's, or remove `preset` and write every `[preprocess]` key \
             (docs/model-description.md#presets)",
            shape_words(&base, width, height)
        ))
    };
    if let Some(r) = raw.resize {
        return Err(conflict(format!(
            "`[preprocess] resize` = {{ width = {}, height = {} }}",
            r.width, r.height
        )));
    }
    if let Some(crop) = raw.crop.filter(|c| *c != base.crop) {
        return Err(conflict(format!(
            "`[preprocess] crop` = \"{}\"",
            match crop {
                Crop::Center => "center",
                Crop::Squash => "squash",
            }
        )));
    }
    if let (Some(s), None) = (raw.resize_shorter, base.resize_shorter) {
        return Err(conflict(format!("`[preprocess] resize_shorter` = {s}")));
    }
    Ok(PreprocessDesc {
        preset: Some(preset),
        resize_shorter: raw.resize_shorter.or(base.resize_shorter),
        resize: None,
        crop: base.crop,
        interpolation: raw.interpolation.unwrap_or(base.interpolation),
        scale: raw.scale.unwrap_or(base.scale),
        mean: raw.mean.unwrap_or(base.mean),
        std: raw.std.unwrap_or(base.std),
        channels: raw.channels.unwrap_or(base.channels),
    })
}

/// `[preprocess] resize = { width = W, height = H }`: a fixed size, named per side so that the
/// order cannot be mistaken (torchvision writes `Resize((H, W))`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "toml::Value")]
pub struct ResizeDesc {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// What `resize` must look like, for its error messages.
const RESIZE_FORM: &str = "write `resize = { width = 256, height = 256 }` (sides named, since \
    torchvision's `Resize((h, w))` lists the height first)";

impl TryFrom<toml::Value> for ResizeDesc {
    type Error = DescValueError;

    fn try_from(v: toml::Value) -> Result<Self, DescValueError> {
        let form = |message: String| DescValueError::Resize(message);
        let toml::Value::Table(t) = v else {
            return Err(form(format!(
                "`[preprocess] resize` is not a table: {RESIZE_FORM}"
            )));
        };
        if let Some(k) = t.keys().find(|k| *k != "width" && *k != "height") {
            return Err(form(format!(
                "`[preprocess] resize` has an unknown key `{}`: {RESIZE_FORM}",
                crate::quote::clip(k)
            )));
        }
        let side = |name: &str| match t.get(name) {
            Some(toml::Value::Integer(n)) => u32::try_from(*n).map_err(|_| {
                form(format!(
                    "`[preprocess] resize` {name} = {n} is not a pixel count: {RESIZE_FORM}"
                ))
            }),
            Some(_) => Err(form(format!(
                "`[preprocess] resize` {name} must be a whole number of pixels: {RESIZE_FORM}"
            ))),
            None => Err(form(format!(
                "`[preprocess] resize` has no `{name}`: {RESIZE_FORM}"
            ))),
        };
        Ok(Self {
            width: side("width")?,
            height: side("height")?,
        })
    }
}

/// `[output]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputDesc {
    /// Output tensor name.
    pub name: String,
    /// Logits or probabilities.
    pub kind: OutputKind,
    /// Number of classes (the last output dimension).
    pub classes: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDesc {
    onnx: PathBuf,
    labels: PathBuf,
    class_map: Option<PathBuf>,
    input: InputDesc,
    preprocess: RawPreprocess,
    output: OutputDesc,
}

/// A loaded model description with paths resolved against the description's folder.
#[derive(Debug, Clone)]
pub struct ModelDesc {
    /// The description file itself.
    pub(crate) path: PathBuf,
    /// The ONNX file.
    pub onnx: PathBuf,
    /// The model's class names (its output space).
    pub labels: LabelSpace,
    /// Optional class map file (model classes → dataset label space), see `classmap`.
    pub(crate) class_map: Option<PathBuf>,
    /// Input tensor.
    pub input: InputDesc,
    /// Resize/crop/normalisation.
    pub preprocess: PreprocessDesc,
    /// Output tensor.
    pub output: OutputDesc,
}

impl ModelDesc {
    /// Reads and validates a model description; relative paths are resolved against its folder.
    pub fn load(path: &Path) -> Result<Self, ModelDescError> {
        let text =
            crate::fsread::read_text_io(path, crate::fsread::MAX_TEXT_BYTES).map_err(|source| {
                ModelDescError::Read {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Self::parse(&text, path)
    }

    /// Parses description text as if read from `path`.
    fn parse(text: &str, path: &Path) -> Result<Self, ModelDescError> {
        let raw: RawDesc = toml::from_str(text).map_err(|e| ModelDescError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let invalid = |message: String| ModelDescError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let value = |source| ModelDescError::Value {
            path: path.to_path_buf(),
            source,
        };
        let preprocess =
            resolve(raw.preprocess, raw.input.width, raw.input.height).map_err(value)?;
        check_values(&raw.input, &preprocess).map_err(value)?;
        if raw.output.classes == 0 {
            return Err(invalid(
                "`[output] classes` must be positive (the length of the model's output rows)"
                    .into(),
            ));
        }
        let labels_path = dir.join(&raw.labels);
        let labels = LabelSpace::from_file(&labels_path).map_err(|e| {
            invalid(format!(
                "cannot read labels file {}: {e}; check `labels` in the description (relative \
                 to its folder): a text file with one class name per line",
                labels_path.display()
            ))
        })?;
        if labels.len() != raw.output.classes {
            return Err(invalid(format!(
                "labels file {} has {} classes but output.classes = {}",
                labels_path.display(),
                labels.len(),
                raw.output.classes
            )));
        }
        Ok(Self {
            path: path.to_path_buf(),
            onnx: dir.join(raw.onnx),
            labels,
            class_map: raw.class_map.map(|p| dir.join(p)),
            input: raw.input,
            preprocess,
            output: raw.output,
        })
    }

    /// Number of f32 values in one input image tensor (3 × height × width).
    pub fn input_len(&self) -> usize {
        3 * self.input.height as usize * self.input.width as usize
    }
}

#[cfg(test)]
mod tests;
