//! Preprocessing: the frame brought to the model's view ([`crate::view::ModelView`]) is normalised
//! into the input tensor, per channel and in the model's layout.

use image::RgbImage;

use crate::model::{Layout, ModelDesc};

/// Per-channel affine normalisation into the input tensor: `(x − mean[c]) / std[c]` with x on the
/// 0..255 scale, written in the model's layout.
#[derive(Debug, Clone)]
pub struct Normalizer {
    layout: Layout,
    lut: [[f32; 256]; 3],
}

impl Normalizer {
    /// For this model.
    pub fn new(model: &ModelDesc) -> Self {
        let p = &model.preprocess;
        Self {
            layout: model.input.layout,
            lut: std::array::from_fn(|c| {
                std::array::from_fn(|v| (v as f32 - p.mean[c]) / p.std[c])
            }),
        }
    }

    /// A new tensor of `image` (3 × width × height values). Built by appending, so the buffer is never
    /// zero-filled first.
    pub fn tensor(&self, image: &RgbImage) -> Vec<f32> {
        let raw = image.as_raw();
        let mut out = Vec::with_capacity(raw.len());
        match self.layout {
            Layout::Nchw => {
                for (c, lut) in self.lut.iter().enumerate() {
                    out.extend(raw.chunks_exact(3).map(|px| lut[usize::from(px[c])]));
                }
            }
            Layout::Nhwc => out.extend(raw.chunks_exact(3).flat_map(|px| {
                std::array::from_fn::<f32, 3, _>(|c| self.lut[c][usize::from(px[c])])
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
        match self.layout {
            Layout::Nchw => {
                for (c, (plane_out, lut)) in out.chunks_exact_mut(plane).zip(&self.lut).enumerate()
                {
                    for (o, px) in plane_out.iter_mut().zip(raw.chunks_exact(3)) {
                        *o = lut[usize::from(px[c])];
                    }
                }
            }
            Layout::Nhwc => {
                for (o, px) in out.chunks_exact_mut(3).zip(raw.chunks_exact(3)) {
                    o[0] = self.lut[0][usize::from(px[0])];
                    o[1] = self.lut[1][usize::from(px[1])];
                    o[2] = self.lut[2][usize::from(px[2])];
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
}
