//! Preprocessing: the frame brought to the model's view ([`crate::view::ModelView`]) is normalised
//! into the input tensor, per channel and in the model's layout.

use image::RgbImage;

use crate::model::{Layout, ModelDesc};

/// Per-channel affine normalisation into the input tensor: `(x · scale − mean[c]) / std[c]` with x
/// on the 0..255 scale, the channels written in the description's order (`channels`, RGB or BGR;
/// docs/model-description.md#preprocess) and the model's layout.
#[derive(Debug, Clone)]
pub struct Normalizer {
    layout: Layout,
    /// The image channel read for each tensor channel (R, G, B = 0, 1, 2).
    order: [usize; 3],
    /// Per tensor channel: the value of each byte.
    lut: [[f32; 256]; 3],
    /// Per tensor channel: `(scale, mean, std)` of its colour, for values between bytes.
    affine: [(f32, f32, f32); 3],
}

impl Normalizer {
    /// For this model.
    pub fn new(model: &ModelDesc) -> Self {
        let p = &model.preprocess;
        let order = p.channels.order();
        let affine: [(f32, f32, f32); 3] =
            std::array::from_fn(|t| (p.scale, p.mean[order[t]], p.std[order[t]]));
        Self {
            layout: model.input.layout,
            order,
            lut: affine
                .map(|(scale, mean, std)| std::array::from_fn(|v| (v as f32 * scale - mean) / std)),
            affine,
        }
    }

    /// The tensor's layout (the GPU path writes the same layout, `gpu::preprocess`).
    pub(crate) fn layout(&self) -> Layout {
        self.layout
    }

    /// The image channel (R, G, B = 0, 1, 2) read for each tensor channel.
    pub(crate) fn order(&self) -> [usize; 3] {
        self.order
    }

    /// Per tensor channel, the value of each byte: the table the GPU path uploads, so both paths
    /// write the same floats (docs/gpu.md#gpu-resident-scenarios).
    pub(crate) fn lut(&self) -> &[[f32; 256]; 3] {
        &self.lut
    }

    /// The tensor values, per tensor channel, of a pixel whose three colours are all `v` on the
    /// 0..255 scale (fractional allowed: the saliency pass's gray is 127.5).
    pub(crate) fn uniform(&self, v: f32) -> [f32; 3] {
        self.affine
            .map(|(scale, mean, std)| (v * scale - mean) / std)
    }

    /// A new tensor of `image` (3 × width × height values). Built by appending, so the buffer is never
    /// zero-filled first.
    pub fn tensor(&self, image: &RgbImage) -> Vec<f32> {
        let raw = image.as_raw();
        let mut out = Vec::with_capacity(raw.len());
        match self.layout {
            Layout::Nchw => {
                for (&c, lut) in self.order.iter().zip(&self.lut) {
                    out.extend(raw.chunks_exact(3).map(|px| lut[usize::from(px[c])]));
                }
            }
            Layout::Nhwc => out.extend(raw.chunks_exact(3).flat_map(|px| {
                std::array::from_fn::<f32, 3, _>(|t| self.lut[t][usize::from(px[self.order[t]])])
            })),
        }
        out
    }

    /// Writes `image` into `out` (length 3 × width × height).
    pub fn write(&self, image: &RgbImage, out: &mut [f32]) {
        let plane = image.width() as usize * image.height() as usize;
        assert_eq!(
            out.len(),
            plane * 3,
            "tensor slot does not match the image size"
        );
        let raw = image.as_raw();
        let [c0, c1, c2] = self.order;
        match self.layout {
            Layout::Nchw => {
                for ((&c, plane_out), lut) in self
                    .order
                    .iter()
                    .zip(out.chunks_exact_mut(plane))
                    .zip(&self.lut)
                {
                    for (o, px) in plane_out.iter_mut().zip(raw.chunks_exact(3)) {
                        *o = lut[usize::from(px[c])];
                    }
                }
            }
            Layout::Nhwc => {
                for (o, px) in out.chunks_exact_mut(3).zip(raw.chunks_exact(3)) {
                    o[0] = self.lut[0][usize::from(px[c0])];
                    o[1] = self.lut[1][usize::from(px[c1])];
                    o[2] = self.lut[2][usize::from(px[c2])];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizer_writes_planes() {
        let img = RgbImage::from_fn(2, 1, |x, _| image::Rgb([255 * x as u8, 127, 0]));
        let desc_lut = Normalizer {
            layout: Layout::Nchw,
            order: [0, 1, 2],
            affine: [(1.0, 127.0, 128.0); 3],
            lut: std::array::from_fn(|_| std::array::from_fn(|v| (v as f32 - 127.0) / 128.0)),
        };
        let mut out = vec![0f32; 6];
        desc_lut.write(&img, &mut out);
        assert_eq!(desc_lut.tensor(&img), out);
        let nhwc = Normalizer {
            layout: Layout::Nhwc,
            ..desc_lut.clone()
        };
        let mut interleaved = vec![0f32; 6];
        nhwc.write(&img, &mut interleaved);
        assert_eq!(nhwc.tensor(&img), interleaved);
        assert_eq!(interleaved[..3], [out[0], out[2], out[4]]);
        assert_eq!(
            out,
            vec![
                -127.0 / 128.0,
                1.0,
                0.0,
                0.0,
                -127.0 / 128.0,
                -127.0 / 128.0
            ]
        );
    }

    /// A 3×2 model whose `[preprocess]` table is `keys`.
    fn model(keys: &str, layout: &str) -> (ModelDesc, tempfile::TempDir) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("l.txt"), "a\nb\n").unwrap();
        let text = format!(
            "onnx = \"m.onnx\"\nlabels = \"l.txt\"\n[input]\nname = \"i\"\nlayout = \"{layout}\"\n\
             height = 2\nwidth = 3\n[preprocess]\ncrop = \"center\"\n{keys}\n[output]\nname = \"o\"\n\
             kind = \"logits\"\nclasses = 2\n"
        );
        let p = d.path().join("m.toml");
        std::fs::write(&p, text).unwrap();
        (ModelDesc::load(&p).unwrap(), d)
    }

    #[test]
    fn bgr_swaps_the_tensor_channels_and_keeps_each_colours_mean() {
        let img = RgbImage::from_fn(3, 2, |x, y| image::Rgb([10 * x as u8, 50 + y as u8, 200]));
        let norm = "mean = [100.0, 50.0, 20.0]\nstd = [2.0, 4.0, 8.0]";
        for layout in ["nchw", "nhwc"] {
            let (rgb, _d) = model(norm, layout);
            let (bgr, _e) = model(&format!("{norm}\nchannels = \"bgr\""), layout);
            let (a, b) = (Normalizer::new(&rgb), Normalizer::new(&bgr));
            let (ta, tb) = (a.tensor(&img), b.tensor(&img));
            let mut wb = vec![0f32; 18];
            b.write(&img, &mut wb);
            assert_eq!(tb, wb, "{layout}: tensor and write agree");
            // Tensor channel t of the BGR model is colour 2 − t of the RGB one, normalised with
            // that colour's own mean and std.
            let at = |t: &[f32], px: usize, c: usize| match layout {
                "nchw" => t[c * 6 + px],
                _ => t[px * 3 + c],
            };
            for px in 0..6 {
                for c in 0..3 {
                    assert_eq!(at(&tb, px, c), at(&ta, px, 2 - c), "{layout} {px} {c}");
                }
            }
            // Blue (200) is first in BGR: (200 − 20) / 8.
            assert_eq!(at(&tb, 0, 0), 22.5);
            assert_eq!(at(&ta, 0, 0), -50.0);
            // Values between bytes follow the same order.
            assert_eq!(a.uniform(200.0)[2], 22.5);
            assert_eq!(b.uniform(200.0)[0], 22.5);
            assert_eq!(
                b.uniform(127.5),
                [(127.5 - 20.0) / 8.0, 77.5 / 4.0, 27.5 / 2.0]
            );
        }
    }

    #[test]
    fn scale_multiplies_before_the_mean() {
        let img = RgbImage::from_fn(3, 2, |_, _| image::Rgb([255, 0, 51]));
        let (m, _d) = model(
            "scale = 0.00392156863\nmean = [0.5, 0.5, 0.5]\nstd = [0.5, 0.5, 0.5]",
            "nchw",
        );
        let t = Normalizer::new(&m).tensor(&img);
        assert!(
            (t[0] - 1.0).abs() < 1e-6 && (t[6] + 1.0).abs() < 1e-6,
            "{t:?}"
        );
        assert!((t[12] - (0.2 - 0.5) / 0.5).abs() < 1e-6, "{t:?}");
    }
}
