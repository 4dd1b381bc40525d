//! `[preprocess] preset`: each framework's evaluation transform as the values of a model
//! description's `[preprocess]` table (docs/preprocessing.md#presets, where each is cited with its
//! repository, file and function).

use serde::Deserialize;

use super::{Channels, Crop, Interpolation, PreprocessDesc};

/// `[preprocess] preset`: a framework's own evaluation transform, every preprocessing key filled
/// from it (docs/preprocessing.md#presets, where each is cited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub(crate) enum Preset {
    /// torchvision `ImageClassification`: shorter side to 256/224 of the input, centre crop,
    /// bilinear, 0..1, ImageNet mean/std, RGB.
    Torchvision,
    /// timm `transforms_imagenet_eval` with `resolve_data_config`'s defaults: shorter side to
    /// input / 0.875 (floored), centre crop, bicubic, 0..1, ImageNet mean/std, RGB.
    Timm,
    /// Keras `load_img(target_size)` (squash, nearest) and `preprocess_input`'s default mode,
    /// "caffe": BGR, ImageNet mean subtracted on 0..255, no division.
    Keras,
    /// Keras squash with `preprocess_input` mode "tf": −1..1.
    KerasTf,
    /// Keras squash with `preprocess_input` mode "torch": 0..1, ImageNet mean/std.
    KerasTorch,
    /// Ultralytics `classify_transforms`: shorter side to the input (crop fraction 1), centre crop,
    /// bilinear, 0..1, mean 0, std 1, RGB.
    UltralyticsCls,
    /// tensorflow/tpu EfficientNet-Lite evaluation: the centre crop of size / (size + padding), the
    /// padding round(size / 7) (32 at 224), as a shorter-side resize then crop; bicubic,
    /// (x − 127) / 128 on 0..255, RGB.
    EfficientnetLite,
}

/// ImageNet's mean and std on the 0..1 scale (torchvision, timm `IMAGENET_DEFAULT_*`).
const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
/// See [`IMAGENET_MEAN`].
const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

impl Preset {
    /// Every preset, in the order the docs list them.
    pub(crate) const ALL: [Preset; 7] = [
        Preset::Torchvision,
        Preset::Timm,
        Preset::Keras,
        Preset::KerasTf,
        Preset::KerasTorch,
        Preset::UltralyticsCls,
        Preset::EfficientnetLite,
    ];

    /// Every preset's name, backticked: `` `torchvision`, `timm`, … ``.
    pub(super) fn list() -> String {
        Preset::ALL.map(|p| format!("`{}`", p.name())).join(", ")
    }

    /// The name as written in a description.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Preset::Torchvision => "torchvision",
            Preset::Timm => "timm",
            Preset::Keras => "keras",
            Preset::KerasTf => "keras-tf",
            Preset::KerasTorch => "keras-torch",
            Preset::UltralyticsCls => "ultralytics-cls",
            Preset::EfficientnetLite => "efficientnet-lite",
        }
    }

    /// The shorter side the frame is resized to before the centre crop, for an input whose shorter
    /// side is `side` pixels; `None` for the presets that squash (docs/preprocessing.md#presets).
    fn resize_shorter(self, side: u32) -> Option<u32> {
        let s = u64::from(side);
        let r = match self {
            // torchvision's 256 for a 224 crop, scaled: round(side · 256 / 224) (299 → 342, as
            // torchvision's Inception v3 weights).
            Preset::Torchvision => (s * 256 + 112) / 224,
            // timm: floor(side / crop_pct) with crop_pct 0.875 = 7/8.
            Preset::Timm => s * 8 / 7,
            Preset::Keras | Preset::KerasTf | Preset::KerasTorch => return None,
            // crop_fraction 1.0: floor(side / 1.0).
            Preset::UltralyticsCls => s,
            // side + round(side · (1/0.875 − 1)) = side + round(side / 7).
            Preset::EfficientnetLite => s + (2 * s + 7) / 14,
        };
        Some(u32::try_from(r).unwrap_or(u32::MAX))
    }

    /// The preset's `[preprocess]` for an input of `width` × `height`.
    pub(crate) fn values(self, width: u32, height: u32) -> PreprocessDesc {
        let resize_shorter = self.resize_shorter(width.min(height));
        let crop = match resize_shorter {
            Some(_) => Crop::Center,
            None => Crop::Squash,
        };
        let (interpolation, scale, mean, std, channels) = match self {
            Preset::Torchvision => (
                Interpolation::Bilinear,
                1.0 / 255.0,
                IMAGENET_MEAN,
                IMAGENET_STD,
                Channels::Rgb,
            ),
            Preset::Timm => (
                Interpolation::Bicubic,
                1.0 / 255.0,
                IMAGENET_MEAN,
                IMAGENET_STD,
                Channels::Rgb,
            ),
            // Keras' caffe mean is written B, G, R in its code; here R, G, B.
            Preset::Keras => (
                Interpolation::Nearest,
                1.0,
                [123.68, 116.779, 103.939],
                [1.0; 3],
                Channels::Bgr,
            ),
            Preset::KerasTf => (
                Interpolation::Nearest,
                1.0 / 127.5,
                [1.0; 3],
                [1.0; 3],
                Channels::Rgb,
            ),
            Preset::KerasTorch => (
                Interpolation::Nearest,
                1.0 / 255.0,
                IMAGENET_MEAN,
                IMAGENET_STD,
                Channels::Rgb,
            ),
            Preset::UltralyticsCls => (
                Interpolation::Bilinear,
                1.0 / 255.0,
                [0.0; 3],
                [1.0; 3],
                Channels::Rgb,
            ),
            Preset::EfficientnetLite => (
                Interpolation::Bicubic,
                1.0,
                [127.0; 3],
                [128.0; 3],
                Channels::Rgb,
            ),
        };
        PreprocessDesc {
            preset: Some(self),
            resize_shorter,
            resize: None,
            crop,
            interpolation,
            scale,
            mean,
            std,
            channels,
        }
    }
}

impl TryFrom<String> for Preset {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        if let Some(p) = Preset::ALL.into_iter().find(|p| p.name() == name) {
            return Ok(p);
        }
        let hint = crate::quote::closest(&name, Preset::ALL.map(Preset::name))
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        Err(format!(
            "unknown `[preprocess] preset` `{}`{hint}; the presets are {} \
             (docs/preprocessing.md#presets)",
            crate::quote::clip(&name),
            Preset::list(),
        ))
    }
}
