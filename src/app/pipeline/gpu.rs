//! A worker's GPU (docs/gpu.md#gpu-resident-scenarios): its own CUDA stream and buffers. A frame
//! is uploaded once per worker that makes one of its variants; the variant, its model view and its
//! normalised batch row are made by the GPU kernels, and only the row (float32, as the CPU path
//! writes it) comes back, straight into the batch buffer. Written over any [`Launcher`], so the
//! tests run it on the host build of the kernels.

use std::sync::Arc;

use crate::gpu::launch::{DeviceImage, FRAME_SLOT, Launcher, MASK_SLOT, ROW_SLOT, VARIANT_SLOT};
use crate::gpu::preprocess::{Element, GpuView};
use crate::gpu::scenarios::{self, Extras, Made};
use crate::gpu::{Device, DeviceLauncher, GpuError};
use crate::model::ModelDesc;
use crate::rng::RngKey;
use crate::scenario::{Scenario, ScenarioInput, ScenarioStage};
use crate::view::MaskResize;

/// One worker's stream, buffers, GPU model view and the frame it last uploaded.
pub(super) struct GpuWorker<L = DeviceLauncher> {
    l: L,
    view: GpuView,
    stage: ScenarioStage,
    /// The uploaded frame: its sequence number and image.
    frame: Option<(u64, DeviceImage)>,
    /// The uploaded masks of that frame, by rule (`MASK_SLOT + rule`).
    masks: [Option<u64>; 2],
    /// Where the last variant is ([`GpuWorker::make`]).
    variant: Option<DeviceImage>,
}

impl GpuWorker {
    /// A worker's stream on `device`.
    // Without the `gpu` feature there is no device, so nothing after the stream is reached.
    #[cfg_attr(not(feature = "gpu"), allow(unreachable_code))]
    pub(super) fn open(
        device: &Arc<Device>,
        model: &ModelDesc,
        stage: ScenarioStage,
    ) -> Result<Self, GpuError> {
        Ok(Self::with(DeviceLauncher::new(device)?, model, stage))
    }
}

impl<L: Launcher> GpuWorker<L> {
    /// A worker making its variants through `l`.
    pub(super) fn with(l: L, model: &ModelDesc, stage: ScenarioStage) -> Self {
        Self {
            l,
            // The batch buffers hold float32 whatever the model takes (the engine converts).
            view: GpuView::new(model, Element::F32),
            stage,
            frame: None,
            masks: [None; 2],
            variant: None,
        }
    }

    /// Makes scenario `s`'s variant of frame `seq` (`input`: the frame at the scenario stage with
    /// its masks and boxes, as the CPU scenario would get it) and waits for it (so the scenario's
    /// time is measured). `Ok(false)`: the CPU scenario refuses this frame, so the caller runs it
    /// on the CPU, which says why.
    pub(super) fn make(
        &mut self,
        seq: u64,
        input: &ScenarioInput,
        s: &dyn Scenario,
        key: RngKey,
    ) -> Result<bool, GpuError> {
        let base = input.image;
        let (w, h) = base.dimensions();
        let bytes = base.as_raw().len();
        self.variant = None;
        let src = match self.frame {
            Some((at, img)) if at == seq => img,
            _ => {
                self.frame = None;
                self.masks = [None; 2];
                let buf = self.l.scratch(FRAME_SLOT, bytes)?;
                self.l.upload(buf, base.as_raw())?;
                let img = DeviceImage {
                    buf,
                    width: w,
                    height: h,
                };
                self.frame = Some((seq, img));
                img
            }
        };
        let rule = s.mask_resize();
        let mask = match input.mask_for(rule) {
            Some(m) => {
                let slot = match rule {
                    MaskResize::Nearest => 0,
                    MaskResize::BilinearNonZero => 1,
                };
                let buf = self.l.scratch(MASK_SLOT + slot, m.as_raw().len())?;
                if self.masks[slot] != Some(seq) {
                    self.l.upload(buf, m.as_raw())?;
                    self.masks[slot] = Some(seq);
                }
                Some((m, buf))
            }
            None => None,
        };
        let dst = DeviceImage {
            buf: self.l.scratch(VARIANT_SLOT, bytes)?,
            ..src
        };
        let extras = Extras {
            mask,
            boxes: input.boxes,
        };
        let made = scenarios::apply(&mut self.l, s, src, dst, key, extras)?;
        self.l.synchronize()?;
        self.variant = match made {
            Made::Source => Some(src),
            Made::Destination => Some(dst),
            Made::Cpu => return Ok(false),
        };
        Ok(true)
    }

    /// The last variant's model view, normalised into `row` (a batch row of float32).
    pub(super) fn row(&mut self, row: &mut [f32]) -> Result<(), GpuError> {
        let variant = self
            .variant
            .ok_or_else(|| GpuError::Launch("a row before its variant".into()))?;
        let buf = self.l.scratch(ROW_SLOT, self.view.row_bytes())?;
        self.view
            .variant_into_batch(&mut self.l, self.stage, variant, buf, 0)?;
        self.l.download_f32(buf, row)
    }
}

#[cfg(test)]
mod tests {
    use image::RgbImage;

    use super::*;
    use crate::gpu::host::HostLauncher;
    use crate::preprocess::Normalizer;
    use crate::scenario::{Catalog, Plan, ScenarioInput};
    use crate::view::ModelView;

    /// The worker's GPU path, run on the host build of the kernels, writes the CPU path's rows: the
    /// frame uploaded once for all its variants, `clean` from the frame itself, exact corruptions
    /// bit for bit, at both scenario stages, and a new frame replaces the old one.
    #[test]
    fn rows_are_the_cpu_paths_rows() {
        let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/models/efficientnet_lite0.toml");
        let model = ModelDesc::load(&shipped).unwrap();
        let plan = Plan::from_items(
            &[
                "corruption/contrast/3",
                "corruption/jpeg_compression/2",
                "corruption/gaussian_blur/1",
            ],
            &Catalog::builtin(),
        )
        .unwrap();
        let frame = |w: u32, h: u32, k: u32| {
            RgbImage::from_fn(w, h, |x, y| {
                image::Rgb([
                    (x * k) as u8,
                    (y * 3) as u8,
                    ((x * 7 + y * 13 * k) % 256) as u8,
                ])
            })
        };
        let frames = [frame(320, 240, 1), frame(301, 199, 2)];
        let norm = Normalizer::new(&model);
        for stage in [ScenarioStage::ModelInput, ScenarioStage::Native] {
            let mut view = ModelView::new(&model);
            let mut g = GpuWorker::with(HostLauncher::new(), &model, stage);
            for (seq, frame) in frames.iter().enumerate() {
                let base = match stage {
                    ScenarioStage::ModelInput => view.image(frame),
                    ScenarioStage::Native => frame.clone(),
                };
                for s in plan.scenarios() {
                    let key = RngKey::new(0, "f", s.key());
                    assert!(
                        g.make(seq as u64, &ScenarioInput::new(&base), s.as_ref(), key)
                            .unwrap()
                    );
                    let mut row = vec![0f32; norm.tensor(&view.image(&base)).len()];
                    g.row(&mut row).unwrap();
                    let variant = s.apply(&ScenarioInput::new(&base), key).unwrap();
                    let cpu = match stage {
                        ScenarioStage::ModelInput => norm.tensor(&variant),
                        ScenarioStage::Native => norm.tensor(&view.image(&variant)),
                    };
                    assert!(
                        row.iter()
                            .zip(&cpu)
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                        "{stage:?} frame {seq} {}: the GPU path's row differs",
                        s.key()
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod mask_tests {
    use image::{GrayImage, RgbImage};

    use super::*;
    use crate::gpu::host::HostLauncher;
    use crate::preprocess::Normalizer;
    use crate::scenario::{Catalog, Plan};

    /// Mask-based scenarios through the worker's GPU path on the host build: the frame's mask
    /// reaches them as the CPU scenario would see it (uploaded once per frame), their rows are the
    /// CPU path's bit for bit, and a frame the CPU scenario refuses (an empty mask) is left to the
    /// CPU.
    #[test]
    fn mask_scenarios_get_the_frames_mask_and_refused_frames_go_to_the_cpu() {
        let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/models/efficientnet_lite0.toml");
        let model = ModelDesc::load(&shipped).unwrap();
        let keys = [
            "ablation/gray",
            "ablation/gray_bbox",
            "ablation/tile",
            "background/only_fg",
            "background/no_fg",
            "background/only_bg_t",
            "background/color_grey",
        ];
        let plan = Plan::from_items(&keys, &Catalog::builtin()).unwrap();
        let scene = crate::scene::random_scene(224, 224, 7);
        let norm = Normalizer::new(&model);
        let mut g = GpuWorker::with(HostLauncher::new(), &model, ScenarioStage::ModelInput);
        let empty = GrayImage::new(224, 224);
        for (seq, mask) in [(0u64, &scene.mask), (1, &empty), (2, &scene.mask)] {
            let input = ScenarioInput::new(&scene.image)
                .with_mask(Some(mask))
                .with_boxes(if seq == 1 { &[] } else { &scene.boxes });
            for s in plan.scenarios().iter().skip(1) {
                let key = RngKey::new(0, "f", s.key());
                let made = g.make(seq, &input, s.as_ref(), key).unwrap();
                let cpu: Result<RgbImage, _> = s.apply(&input, key);
                if seq == 1 {
                    assert!(!made, "{}: an empty mask is the CPU's to refuse", s.key());
                    assert!(cpu.is_err(), "{}", s.key());
                    continue;
                }
                assert!(made, "{}", s.key());
                let mut row = vec![0f32; norm.tensor(&scene.image).len()];
                g.row(&mut row).unwrap();
                let want = norm.tensor(&cpu.unwrap());
                assert!(
                    row.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "frame {seq} {}: the GPU path's row differs",
                    s.key()
                );
            }
        }
    }
}

#[cfg(all(test, feature = "gpu"))]
mod device_tests {
    use image::RgbImage;

    use super::*;
    use crate::gpu::cuda::{device_count, open};
    use crate::gpu::host::HostLauncher;
    use crate::scenario::{Catalog, Plan};

    /// The worker's last variant, downloaded.
    fn variant<L: Launcher>(g: &mut GpuWorker<L>) -> RgbImage {
        let v = g.variant.expect("a variant");
        let mut out = vec![0; v.width as usize * v.height as usize * 3];
        g.l.download(v.buf, &mut out).expect("download");
        RgbImage::from_raw(v.width, v.height, out).expect("whole image")
    }

    /// On a machine with a CUDA device: every scenario with GPU kernels (ImageNet-C, with and
    /// without the stored-as-JPEG round trip, the Hard ImageNet ablations, RFS noise, the IN-9 and
    /// XIMAGENET-12 mask scenarios) through a worker on the device and a worker on the host build,
    /// at both scenario stages, on a procedural scene with its mask and boxes: the same frames are
    /// refused, the variants agree within the fixtures' tolerance (mean ≤ 0.5, max ≤ 2 levels; 9
    /// after a JPEG round trip, see below) and the normalised rows within 0.05 (0.1). Every case runs and prints its distances; the test fails
    /// at the end listing those out of tolerance. Skipped, with the reason, without a device.
    #[test]
    fn device_workers_make_the_host_workers_variants_and_rows() {
        match device_count() {
            Ok(n) if n > 0 => {}
            other => {
                eprintln!("skipped: no CUDA device here ({other:?})");
                return;
            }
        }
        let device = open(0).unwrap();
        let toml = crate::assets::candidates("models/efficientnet_lite0.toml")
            .into_iter()
            .find(|p| p.exists())
            .expect("the demo model's description (bash scripts/assets.sh)");
        let model = ModelDesc::load(&toml).unwrap();
        let groups = [
            "imagenet-c-all",
            "hard-imagenet",
            "rfs-all",
            "in9",
            "ximagenet12",
        ];
        let plain = Plan::from_items(&groups, &Catalog::builtin()).unwrap();
        let jpeg = Catalog::builtin().with_corruption_jpeg(Some(85));
        let jpeg = Plan::from_items(&["imagenet-c-all"], &jpeg).unwrap();
        let mut failed = Vec::new();
        let mut cases = 0;
        // After the JPEG round trip a one-level difference before it (float rounding of the
        // kernels: measured on an H200, at most 1 level on a few pixels) can move a quantised DCT
        // coefficient by one step. At quality 85 the largest step of the standard tables is
        // 121 × 0.3 ≈ 36, which one 8×8 block spreads as at most 36 / 4 = 9 levels on a pixel.
        for (stage, scene, plan, label, max_levels, row_limit) in [
            (
                ScenarioStage::ModelInput,
                (224, 224, 7),
                &plain,
                "model-input",
                2,
                0.05,
            ),
            (
                ScenarioStage::Native,
                (301, 199, 3),
                &plain,
                "native",
                2,
                0.05,
            ),
            (
                ScenarioStage::ModelInput,
                (224, 224, 5),
                &jpeg,
                "model-input+jpeg85",
                9,
                0.1,
            ),
        ] {
            let scene = crate::scene::random_scene(scene.0, scene.1, scene.2);
            let mut dev = GpuWorker::open(&device, &model, stage).unwrap();
            let mut host = GpuWorker::with(HostLauncher::new(), &model, stage);
            let input = ScenarioInput::new(&scene.image)
                .with_mask(Some(&scene.mask))
                .with_boxes(&scene.boxes);
            let mut rows = (Vec::new(), Vec::new());
            for s in plan.scenarios() {
                if !scenarios::on_gpu(s.as_ref()) {
                    continue;
                }
                cases += 1;
                let what = format!("{label} {}", s.key());
                let key = RngKey::new(0, "device", s.key());
                let made = match dev.make(0, &input, s.as_ref(), key) {
                    Ok(m) => m,
                    Err(e) => {
                        eprintln!("{what}: FAILED to run: {e}");
                        failed.push(format!("{what}: {e}"));
                        continue;
                    }
                };
                let want = host.make(0, &input, s.as_ref(), key).unwrap();
                if made != want {
                    failed.push(format!(
                        "{what}: made on the device {made}, on the host {want}"
                    ));
                    continue;
                }
                if !made {
                    eprintln!("{what}: refused on both (left to the CPU)");
                    continue;
                }
                let (a, b) = (variant(&mut dev), variant(&mut host));
                let (mean, max, n) = crate::gpu::tests::levels_apart(&a, &b);
                let len = host.view.row_bytes() / 4;
                rows.0.resize(len, 0.0);
                rows.1.resize(len, 0.0);
                let row = dev.row(&mut rows.0).and_then(|()| host.row(&mut rows.1));
                let row_max = rows
                    .0
                    .iter()
                    .zip(&rows.1)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0f32, f32::max);
                eprintln!(
                    "{what}: variant mean {mean:.4} max {max} differing {n}; row max {row_max:.5}"
                );
                if let Err(e) = row {
                    failed.push(format!("{what}: row: {e}"));
                } else if mean > 0.5 || max > max_levels || row_max > row_limit {
                    failed.push(format!(
                        "{what}: variant mean {mean:.4} max {max}; row max {row_max:.5}"
                    ));
                }
            }
        }
        eprintln!("{cases} cases, {} out of tolerance", failed.len());
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}
