//! Model descriptions: the small TOML next to each model file that says everything model-specific
//! (input tensor, size, resize/crop policy, normalisation, output kind, class labels, optional class
//! map). Nothing model-specific is hard-coded elsewhere.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::frame::LabelSpace;

/// Why a model description could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelDescError {
    /// The file could not be read.
    #[error("cannot read model description {path}: {source}")]
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
    /// A value is out of range or inconsistent.
    #[error("model description {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
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
pub enum Crop {
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
    pub layout: Layout,
    /// Input height in pixels.
    pub height: u32,
    /// Input width in pixels.
    pub width: u32,
}

/// `[preprocess]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreprocessDesc {
    /// Resize so the shorter side has this many pixels (long side truncated, torchvision `Resize(n)`)
    /// before cropping; absent = no resize before the crop.
    pub resize_shorter: Option<u32>,
    /// Crop policy.
    pub crop: Crop,
    /// Per-channel mean (R, G, B) on the 0..255 pixel scale, subtracted first.
    pub mean: [f32; 3],
    /// Per-channel standard deviation (R, G, B) on the 0..255 pixel scale, divided by after.
    pub std: [f32; 3],
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
    preprocess: PreprocessDesc,
    output: OutputDesc,
}

/// A loaded model description with paths resolved against the description's folder.
#[derive(Debug, Clone)]
pub struct ModelDesc {
    /// The description file itself.
    pub path: PathBuf,
    /// The ONNX file.
    pub onnx: PathBuf,
    /// The model's class names (its output space).
    pub labels: LabelSpace,
    /// Optional class map file (model classes → dataset label space), see `metrics::classmap`.
    pub class_map: Option<PathBuf>,
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
        let text = std::fs::read_to_string(path).map_err(|source| ModelDescError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses description text as if read from `path`.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ModelDescError> {
        let raw: RawDesc = toml::from_str(text).map_err(|e| ModelDescError::Parse {
            path: path.to_path_buf(),
            message: e.to_string().trim().replace('\n', " "),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let invalid = |message: String| ModelDescError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        if raw.input.height == 0 || raw.input.width == 0 {
            return Err(invalid(
                "input.height and input.width must be positive".into(),
            ));
        }
        if raw
            .preprocess
            .std
            .iter()
            .any(|s| !(s.is_finite() && *s > 0.0))
        {
            return Err(invalid("preprocess.std must be positive numbers".into()));
        }
        if raw.output.classes == 0 {
            return Err(invalid("output.classes must be positive".into()));
        }
        let labels_path = dir.join(&raw.labels);
        let labels = LabelSpace::from_file(&labels_path).map_err(|e| {
            invalid(format!(
                "cannot read labels file {}: {e}",
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
            preprocess: raw.preprocess,
            output: raw.output,
        })
    }

    /// Number of f32 values in one input image tensor (3 × height × width).
    pub fn input_len(&self) -> usize {
        3 * self.input.height as usize * self.input.width as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DESC: &str = r#"
onnx = "m.onnx"
labels = "labels.txt"
[input]
name = "input"
layout = "nchw"
height = 4
width = 6
[preprocess]
resize_shorter = 8
crop = "center"
mean = [127.0, 127.0, 127.0]
std = [128.0, 128.0, 128.0]
[output]
name = "logits"
kind = "logits"
classes = 3
"#;

    fn dir_with_labels(n: usize) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..n).map(|i| format!("class{i}")).collect();
        std::fs::write(d.path().join("labels.txt"), names.join("\n") + "\n").unwrap();
        d
    }

    #[test]
    fn loads_and_resolves_paths() {
        let d = dir_with_labels(3);
        let p = d.path().join("m.toml");
        std::fs::write(&p, DESC).unwrap();
        let m = ModelDesc::load(&p).unwrap();
        assert_eq!(m.onnx, d.path().join("m.onnx"));
        assert_eq!(m.labels.len(), 3);
        assert_eq!(m.input_len(), 72);
        assert_eq!(m.preprocess.resize_shorter, Some(8));
    }

    #[test]
    fn unknown_key_is_named() {
        let d = dir_with_labels(3);
        let p = d.path().join("m.toml");
        let e = ModelDesc::parse(&DESC.replace("layout", "layuot"), &p).unwrap_err();
        assert!(e.to_string().contains("layuot"), "{e}");
        assert!(e.to_string().contains("m.toml"), "{e}");
    }

    #[test]
    fn label_count_must_match_classes() {
        let d = dir_with_labels(5);
        let p = d.path().join("m.toml");
        let e = ModelDesc::parse(DESC, &p).unwrap_err();
        assert!(e.to_string().contains("5 classes"), "{e}");
    }
}
