//! The synthetic camera: a procedural scene in motion with exact foreground masks, at a chosen size
//! and frame rate, for demos, tests and soak runs without a camera.
//!
//! The scene is a static textured background (like a fixed line camera's view) with objects moving
//! across it on straight lines that bounce off the frame edges. Objects are either procedural shapes
//! of known colour ([`crate::scene`]) or a *sprite*: a real photo cut out by its mask (e.g. the
//! demo's quokka), which gives a real model something to recognise and the frames a truth label.
//!
//! Every frame is a pure function of `(config, frame index)`: positions follow closed-form
//! triangle waves, so frame `n` renders the same whatever was rendered before it and however many
//! threads run. With `realtime = true` the source paces itself at `fps` (frame `n` is released no
//! earlier than `n / fps` seconds after the first), as a camera would; otherwise frames come as fast
//! as they are asked for.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use image::{GrayImage, RgbImage, imageops::FilterType};
use rand::RngExt;

use super::{Source, SourceError, SourceErrorKind};
use crate::frame::{BBox, Frame, LabelSpace, Regions, Truth};
use crate::geometry::tight_box;
use crate::rng::RngKey;
use crate::scene::{Background, Object, Shape, paint_objects, render};

/// `[source.synthetic]`: what the synthetic camera shows and how fast.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticConfig {
    /// Frame width in pixels (default 640).
    #[serde(default = "default_width")]
    pub(crate) width: u32,
    /// Frame height in pixels (default 480).
    #[serde(default = "default_height")]
    pub(crate) height: u32,
    /// Frames per second: the speed of the motion (objects move a fixed fraction of the frame per
    /// second) and, with `realtime`, the pace (default 30).
    #[serde(default = "default_fps")]
    pub(crate) fps: f64,
    /// Number of frames; absent = endless (until Ctrl-C or `--limit`).
    #[serde(default)]
    pub(crate) frames: Option<u64>,
    /// Release frames at `fps` like a camera (default false: as fast as they are read).
    #[serde(default)]
    pub(crate) realtime: bool,
    /// Number of procedural objects when there is no sprite (default 1).
    #[serde(default = "default_objects")]
    pub(crate) objects: u32,
    /// Seed of the scene (background, shapes, colours, paths); the run's scenario seed is separate.
    #[serde(default)]
    pub(crate) seed: u64,
    /// A photo to move across the scene instead of procedural shapes, cut out by `sprite_mask`.
    #[serde(default)]
    pub(crate) sprite: Option<PathBuf>,
    /// The sprite's mask (same size as the photo; non-zero = object). Required with `sprite`.
    #[serde(default)]
    pub(crate) sprite_mask: Option<PathBuf>,
    /// The sprite's size: its longer side as a fraction of the frame's shorter side (default 0.6).
    #[serde(default = "default_sprite_size")]
    pub(crate) sprite_size: f64,
    /// The truth of every frame (a class name, alias or index of the run's label space); absent =
    /// unlabelled frames.
    #[serde(default)]
    pub(crate) label: Option<String>,
}

fn default_width() -> u32 {
    640
}
fn default_height() -> u32 {
    480
}
fn default_fps() -> f64 {
    30.0
}
fn default_objects() -> u32 {
    1
}
fn default_sprite_size() -> f64 {
    0.6
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        Self {
            width: default_width(),
            height: default_height(),
            fps: default_fps(),
            frames: None,
            realtime: false,
            objects: default_objects(),
            seed: 0,
            sprite: None,
            sprite_mask: None,
            sprite_size: default_sprite_size(),
            label: None,
        }
    }
}

impl SyntheticConfig {
    /// Parses the short form of `--source synthetic:WxH[@FPS][/N]` (e.g. `synthetic:640x480@30/300`:
    /// 640×480 at 30 fps, 300 frames; every part after `synthetic:` is optional). `None` when `spec`
    /// does not start with `synthetic`; `Some(Err(_))` names the bad part.
    pub(crate) fn parse_spec(spec: &str) -> Option<Result<Self, SyntheticError>> {
        let rest = spec.strip_prefix("synthetic")?;
        let rest = match rest {
            "" => "",
            r => r.strip_prefix(':')?,
        };
        Some(
            Self::parse_rest(rest).map_err(|problem| SyntheticError::Spec {
                spec: spec.to_string(),
                problem: Box::new(problem),
            }),
        )
    }

    fn parse_rest(rest: &str) -> Result<Self, SyntheticError> {
        let mut c = Self::default();
        let (rest, frames) = match rest.split_once('/') {
            Some((a, n)) => (a, Some(n)),
            None => (rest, None),
        };
        let (size, fps) = match rest.split_once('@') {
            Some((s, f)) => (s, Some(f)),
            None => (rest, None),
        };
        let unparsed = |part, written: &str| SyntheticError::Unparsed {
            part,
            written: written.to_string(),
        };
        if !size.is_empty() {
            let (w, h) = size.split_once('x').ok_or_else(|| unparsed("size", size))?;
            c.width = w.parse().map_err(|_| unparsed("width", w))?;
            c.height = h.parse().map_err(|_| unparsed("height", h))?;
        }
        if let Some(f) = fps {
            c.fps = f.parse().map_err(|_| unparsed("fps", f))?;
        }
        if let Some(n) = frames {
            c.frames = Some(n.parse().map_err(|_| unparsed("frame count", n))?);
        }
        c.check()?;
        Ok(c)
    }

    /// Checks the values a scene can be made from (sizes ≥ 1 and ≤ 16384, fps finite and > 0, a
    /// frame count ≥ 1 when given, sprite size in (0, 1], a mask with a sprite).
    pub(crate) fn check(&self) -> Result<(), SyntheticError> {
        let invalid = |setting, message: String| Err(SyntheticError::Invalid { setting, message });
        if !(1..=16384).contains(&self.width) || !(1..=16384).contains(&self.height) {
            return invalid(
                "size",
                format!(
                    "frame size {}x{} is outside 1..16384",
                    self.width, self.height
                ),
            );
        }
        if !(self.fps.is_finite() && self.fps > 0.0) {
            return invalid("fps", format!("fps {} must be a number above 0", self.fps));
        }
        if self.frames == Some(0) {
            return invalid(
                "frames",
                "a frame count of 0 gives no frames; give at least 1, or none for an endless \
                 camera"
                    .into(),
            );
        }
        if !(self.sprite_size > 0.0 && self.sprite_size <= 1.0) {
            return invalid(
                "sprite_size",
                format!("sprite_size {} must be in (0, 1]", self.sprite_size),
            );
        }
        if self.sprite.is_some() != self.sprite_mask.is_some() {
            return invalid(
                "sprite",
                "`sprite` and `sprite_mask` go together; give both or neither".into(),
            );
        }
        Ok(())
    }
}

/// Settings a synthetic camera cannot be made from. Display = the message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SyntheticError {
    /// A part of a `synthetic:…` spec that does not parse.
    #[error(
        "{part} `{written}` is not {}",
        if *part == "size" { "WIDTHxHEIGHT" } else { "a number" }
    )]
    Unparsed {
        /// "size", "width", "height", "fps" or "frame count".
        part: &'static str,
        /// The part as written.
        written: String,
    },
    /// A setting outside what a scene can be made from.
    #[error("{message}")]
    Invalid {
        /// The setting ("size", "fps", "frames", "sprite_size", "sprite").
        setting: &'static str,
        /// What is wrong and what to do.
        message: String,
    },
    /// A `synthetic:…` spec that does not parse or check: the problem and how to write one.
    #[error(
        "bad synthetic source `{spec}`: {problem}; write synthetic:WIDTHxHEIGHT@FPS/FRAMES, e.g. \
         synthetic:640x480@30/300"
    )]
    Spec {
        /// The spec as written.
        spec: String,
        /// What is wrong with it.
        #[source]
        problem: Box<SyntheticError>,
    },
}

/// A cut-out photo: its pixels and mask at the size it is drawn.
struct Sprite {
    image: RgbImage,
    mask: GrayImage,
}

/// One moving thing: where its path starts and how fast it goes, in fractions of the free room per
/// second.
#[derive(Debug, Clone, Copy)]
struct Path {
    start: [f64; 2],
    speed: [f64; 2],
}

impl Path {
    /// Position in [0, 1]² at time `t` seconds: a triangle wave per axis (bounces off the edges).
    fn at(&self, t: f64) -> [f64; 2] {
        let tri = |p: f64| {
            let p = p.rem_euclid(2.0);
            if p <= 1.0 { p } else { 2.0 - p }
        };
        [
            tri(self.start[0] + self.speed[0] * t),
            tri(self.start[1] + self.speed[1] * t),
        ]
    }
}

/// The synthetic camera (see the module docs).
pub(crate) struct SyntheticSource {
    config: SyntheticConfig,
    background: RgbImage,
    shapes: Vec<(Shape, [u32; 2], [u8; 3])>,
    sprite: Option<Sprite>,
    paths: Vec<Path>,
    truth: Option<Truth>,
    next_seq: u64,
    started: Option<Instant>,
}

/// Opens the synthetic camera: renders its background, cuts out the sprite, resolves the label.
pub(crate) fn open(
    config: &SyntheticConfig,
    labels: &LabelSpace,
) -> Result<SyntheticSource, SourceError> {
    let item = "synthetic source";
    config.check().map_err(|e| {
        SourceError::new(SourceErrorKind::Settings, item, e.to_string()).caused_by(e)
    })?;
    let truth = match &config.label {
        None => None,
        Some(l) => Some(Truth(labels.resolve(l).ok_or_else(|| {
            SourceError::new(
                SourceErrorKind::Label,
                item,
                format!(
                    "label `{}` is not a class of the model; give a class name or index \
                     (`robustream labels` lists them)",
                    crate::quote::clip(l)
                ),
            )
        })?)),
    };
    let (w, h) = (config.width, config.height);
    let mut rng = RngKey::new(config.seed, "synthetic", &format!("{w}x{h}")).rng();
    let dark = |rng: &mut crate::rng::ScenarioRng| -> [u8; 3] {
        [
            rng.random_range(20..110),
            rng.random_range(20..110),
            rng.random_range(20..110),
        ]
    };
    let (a, b) = (dark(&mut rng), dark(&mut rng));
    let background = match rng.random_range(0..3) {
        0 => Background::checker(a, b, (w.min(h) / 12).max(2)),
        1 => Background::stripes(a, b, (w.min(h) / 16).max(2)),
        _ => Background::Noise {
            seed: rng.random_range(0..u64::MAX),
        },
    };
    let background = render(w, h, &background, &[]).image;
    let sprite = match (&config.sprite, &config.sprite_mask) {
        (Some(p), Some(m)) => Some(load_sprite(p, m, config)?),
        _ => None,
    };
    let short = w.min(h);
    let count = if sprite.is_some() { 1 } else { config.objects };
    let mut shapes = Vec::new();
    let mut paths = Vec::new();
    for _ in 0..count {
        if sprite.is_none() {
            let lo = (short / 6).max(1);
            let hi = (short * 2 / 5).max(lo + 1);
            let size = [rng.random_range(lo..hi), rng.random_range(lo..hi)];
            let shape = [Shape::Rect, Shape::Disc, Shape::Triangle][rng.random_range(0..3)];
            let mut color = [
                rng.random_range(0..=255u8),
                rng.random_range(0..=255u8),
                rng.random_range(0..=255u8),
            ];
            color[rng.random_range(0..3)] = rng.random_range(200..=255);
            shapes.push((shape, size, color));
        }
        // 0.05–0.25 of the free room per second along each axis, either direction.
        let mut speed = [
            rng.random_range(0.05..0.25f64),
            rng.random_range(0.05..0.25f64),
        ];
        for s in &mut speed {
            if rng.random_range(0..2) == 0 {
                *s = -*s;
            }
        }
        paths.push(Path {
            start: [rng.random_range(0.0..1.0), rng.random_range(0.0..1.0)],
            speed,
        });
    }
    Ok(SyntheticSource {
        config: config.clone(),
        background,
        shapes,
        sprite,
        paths,
        truth,
        next_seq: 0,
        started: None,
    })
}

/// Reads the sprite photo and mask and scales both so the longer side is `sprite_size` of the
/// frame's shorter side (Lanczos for the photo, nearest for the mask so it stays a hard 0/255 cut).
fn load_sprite(
    photo: &std::path::Path,
    mask: &std::path::Path,
    config: &SyntheticConfig,
) -> Result<Sprite, SourceError> {
    // Through the bounded reader and the checked decoders, like every image and mask: a FIFO, a
    // device, a huge file or a truncated image is refused with one line saying what to do.
    fn at<E: std::error::Error + Send + Sync + 'static>(
        path: &std::path::Path,
        what: &'static str,
    ) -> impl FnOnce(E) -> SourceError {
        move |why| {
            SourceError::at(SourceErrorKind::Unreadable, path, format!("{what}: {why}"))
                .caused_by(why)
        }
    }
    let bytes = super::decode::read_file(photo, "image").map_err(at(photo, "sprite photo"))?;
    let image = super::decode::decode_bytes(&bytes)
        .map_err(at(photo, "sprite photo"))?
        .into_rgb8();
    let bytes = super::decode::read_file(mask, "mask").map_err(at(mask, "sprite mask"))?;
    let m = super::mask::decode_mask(&bytes).map_err(at(mask, "sprite mask"))?;
    if m.dimensions() != image.dimensions() {
        return Err(SourceError::at(
            SourceErrorKind::Annotation,
            mask,
            format!(
                "sprite mask is {}x{} but the photo is {}x{}; give the photo's own mask",
                m.width(),
                m.height(),
                image.width(),
                image.height()
            ),
        ));
    }
    if m.as_raw().iter().all(|&v| v == 0) {
        return Err(SourceError::at(
            SourceErrorKind::Annotation,
            mask,
            "sprite mask has no foreground pixel; give a mask with the object non-zero",
        ));
    }
    let target = (f64::from(config.width.min(config.height)) * config.sprite_size).max(1.0);
    let scale = target / f64::from(image.width().max(image.height()));
    let sw = ((f64::from(image.width()) * scale).round() as u32).clamp(1, config.width);
    let sh = ((f64::from(image.height()) * scale).round() as u32).clamp(1, config.height);
    let image = image::imageops::resize(&image, sw, sh, FilterType::Lanczos3);
    let mut mask = image::imageops::resize(&m, sw, sh, FilterType::Nearest);
    for v in mask.iter_mut() {
        *v = if *v > 0 { 255 } else { 0 };
    }
    Ok(Sprite { image, mask })
}

impl SyntheticSource {
    /// Renders frame `n`: the background with every object at its position at time `n / fps`,
    /// the exact mask (255 on object pixels) and the objects' tight boxes.
    fn render(&self, n: u64) -> (RgbImage, GrayImage, Vec<BBox>) {
        let (w, h) = (self.config.width, self.config.height);
        let t = n as f64 / self.config.fps;
        if let Some(s) = &self.sprite {
            let [px, py] = self.paths[0].at(t);
            let x0 = (px * f64::from(w - s.image.width())).round() as u32;
            let y0 = (py * f64::from(h - s.image.height())).round() as u32;
            let mut image = self.background.clone();
            let mut mask = GrayImage::new(w, h);
            for (y, (srow, mrow)) in s.image.rows().zip(s.mask.rows()).enumerate() {
                for (x, (p, m)) in srow.zip(mrow).enumerate() {
                    if m.0[0] != 0 {
                        let (fx, fy) = (x0 + x as u32, y0 + y as u32);
                        image.put_pixel(fx, fy, *p);
                        mask.put_pixel(fx, fy, image::Luma([255]));
                    }
                }
            }
            let boxes = tight_box(&mask).into_iter().collect();
            return (image, mask, boxes);
        }
        let objects: Vec<Object> = self
            .shapes
            .iter()
            .zip(&self.paths)
            .map(|(&(shape, [ow, oh], color), path)| {
                let [px, py] = path.at(t);
                let x0 = (px * f64::from(w.saturating_sub(ow))).round() as u32;
                let y0 = (py * f64::from(h.saturating_sub(oh))).round() as u32;
                Object::new(shape, BBox::new(x0, y0, x0 + ow, y0 + oh), color)
            })
            .collect();
        let mut image = self.background.clone();
        let mut mask = GrayImage::new(w, h);
        let boxes = paint_objects(&mut image, &mut mask, &objects);
        (image, mask, boxes)
    }
}

impl Source for SyntheticSource {
    fn next_frame(&mut self) -> Option<Result<Frame, SourceError>> {
        let n = self.next_seq;
        if self.config.frames.is_some_and(|limit| n >= limit) {
            return None;
        }
        if self.config.realtime {
            let start = *self.started.get_or_insert_with(Instant::now);
            let due = start + Duration::from_secs_f64(n as f64 / self.config.fps);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let t0 = Instant::now();
        let (image, mask, boxes) = self.render(n);
        let decode_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.next_seq += 1;
        Some(Ok(Frame {
            truth: self.truth,
            regions: Some(Regions {
                mask: Some(mask),
                boxes,
            }),
            captured: t0,
            decode_ms,
            timestamp: Some(n as f64 / self.config.fps),
            ..Frame::new(format!("synthetic/{n:08}"), n, image)
        }))
    }

    fn len_hint(&self) -> Option<usize> {
        self.config.frames.and_then(|n| usize::try_from(n).ok())
    }

    fn is_live(&self) -> bool {
        self.config.realtime
    }

    fn fps(&self) -> Option<f64> {
        Some(self.config.fps)
    }

    fn describe(&self) -> String {
        let c = &self.config;
        let what = match &c.sprite {
            Some(p) => format!("sprite {}", p.display()),
            None => format!("{} object(s)", c.objects),
        };
        let frames = c
            .frames
            .map_or_else(|| "endless".to_string(), |n| format!("{n} frames"));
        let pace = if c.realtime { ", real time" } else { "" };
        format!(
            "synthetic camera {}x{} @ {} fps, {what}, {frames}{pace}, seed {}",
            c.width, c.height, c.fps, c.seed
        )
    }

    /// The synthetic camera stands in for a camera: `synthetic`.
    fn camera(&self) -> Option<String> {
        Some("synthetic".into())
    }
}

#[cfg(test)]
mod tests;
