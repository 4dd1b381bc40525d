//! Background scenarios, `background/<name>`: what a classifier makes of an object when its background
//! is removed, replaced, blurred or recoloured.
//!
//! - **IN-9** (Backgrounds Challenge, docs/in9.md#how-the-variations-are-built; group `in9`,
//!   [`in9`]): `only_fg`, `no_fg`, `only_bg_b`, `only_bg_t` and the composites `mixed_same`,
//!   `mixed_rand`, `mixed_next`.
//! - **XIMAGENET-12** (docs/ximagenet.md#scenarios; group `ximagenet12`, [`ximagenet`]): blurred
//!   background / object, background recoloured red / green / blue / grey / rainbow, bright
//!   background / object, segmented object, transparent image (alpha dropped as the reference's
//!   loader does, or composited on a matte), random background (the published saturating *sum* and
//!   a clean paste), on OpenCV-exact kernels ([`crate::kernels::opencv`]). Group `ximagenet12-table2`: the paper's
//!   eight Table 2 scenarios ([`TABLE2`]), whose σ²_cross compares with the paper
//!   (`metrics::volatility`).
//!
//! # Regions
//!
//! Scenarios need the frame's foreground: a mask (`ScenarioInput::mask`, 0 = background, 255 =
//! object, same size as the image) and/or object boxes. Without what a scenario needs it reports
//! [`ScenarioError::NeedsMask`]; with an empty mask (no pixel > 0), or a mask of another size, it
//! reports [`ScenarioError::Unsuitable`] saying so.
//!
//! - IN-9 multiplies by the mask (`only_fg` = image × mask): a mask value m counts as weight m / 255,
//!   which for the reference's binary masks is exactly its operation; soft edges blend.
//! - XIMAGENET-12 standardises its masks to 0/255 (any non-zero → object) before every operation; so do
//!   its scenarios here: object = mask > 0.
//! - IN-9's box (`only_bg_b`, `only_bg_t`, the pool's backgrounds) is [`in9::object_box`]: the frame's
//!   box when it has exactly one (IN-9 keeps only images with one box), else the tight box of the
//!   mask (pixels > 0), else the union of its boxes.
//!
//! # Backgrounds from the stream
//!
//! `mixed_*` and `random_bg_*` draw another frame's background from the stream's
//! [`BackgroundPool`](super::BackgroundPool) (see [`super::pool`]): a bounded, seeded per-class
//! reservoir of **earlier** frames. For `mixed_*` and the `random_bg_*_bgt` options each entry's
//! background is IN-9's `only_bg_t` of that frame, made by [`pool_background`] (the pipeline's
//! maker). `random_bg_add` / `random_bg_paste` follow XIMAGENET-12's `generated_background.py`
//! instead: the background is a **whole** earlier image ([`draw_whole`],
//! [`super::pool::PoolEntry::whole`]: the frame at the scenario stage, its own objects included, as
//! the reference takes whole photos of another class folder), and the segmented object (object on
//! black) is squashed to that image's size with OpenCV's bilinear resize
//! ([`crate::kernels::opencv::resize_linear`]); the result has the **background's size**, as the reference's file
//! does, and reaches the model through the model's usual resize and crop. At the model-input stage
//! every frame has the model's input size, so nothing is resized; at the native stage a background
//! of another size than the frame gives a variant of its size. Which entry ([`draw_background`],
//! [`draw_whole`]):
//!
//! - `mixed_same`: an entry of the frame's own class (needs the frame's truth);
//! - `mixed_next`: an entry of the next class *present in the pool* after the frame's class, cyclically
//!   by class index. IN-9 uses class (y + 1) mod 9; a scenario does not know the label space's size, and
//!   a stream has not necessarily seen every class yet, so the next class that has a usable background
//!   is taken (the same as IN-9's once every class has been seen, for consecutive class indices);
//! - `mixed_rand` and `random_bg_*`: a uniformly drawn entry of any class, unlabelled frames included
//!   (IN-9's Mixed-Rand: the background of a random image; XIMAGENET-12 pairs shuffled lists of
//!   objects and backgrounds 1:1); no truth needed.
//!
//! The draw is uniform over the entries of the chosen class(es), keyed by the variant's [`RngKey`];
//! an entry without a usable background (its frame's box covers the whole frame) is skipped. Until a
//! suitable entry exists — the first frames of a stream, or of a new class — the scenario reports
//! [`ScenarioError::Unsuitable`] with a reason starting "background pool warming up", and the frame
//! counts as skipped for that scenario only. `robustream apply` and `preview` have a single image: their
//! pool is the backgrounds given with `--background` (built as a run's pool builds them); without
//! any, these scenarios report that they need a stream or backgrounds.
//!
//! An Only-BG-T background of another size than the frame (frames of different sizes at the native
//! stage; `mixed_*`, `random_bg_*_bgt`) is fitted as IN-9 fits everything to its 256² composites,
//! generalised to W×H: Pillow NEAREST resize so that it covers W×H with its aspect ratio kept (the
//! side that binds becomes exactly W or H, the other truncated), then a centred W×H crop
//! (torchvision offsets). At the model-input stage every frame has
//! the same size and nothing is resized.
//!
//! # Geometry
//!
//! IN-9 builds `only_bg_*` on the original image and composites at 256×256; XIMAGENET-12 works at the
//! image's own size. Here every scenario works on the frame at the run's scenario stage, at its size,
//! and returns an image of that size — except `random_bg_add` / `random_bg_paste`, whose result has
//! the drawn background's size (above); the only size-dependent rule, the tile strip of
//! `only_bg_t`, is already defined for any W×H.

pub(crate) mod in9;
mod ximagenet;

#[cfg(test)]
mod fixture_tests;

use std::borrow::Cow;
use std::sync::Arc;

use image::{GrayImage, RgbImage};
use rand::RngExt;

use super::pool::PoolEntry;
use super::{RngKey, Scenario, ScenarioError, ScenarioInput, ScenarioRng};
use crate::kernels::resample::{Filter, Resampler, Window};
use crate::key::ScenarioKey;

pub use in9::pool_background;
pub(crate) use ximagenet::Colour;

/// The IN-9 scenarios (group `in9`): key leaf under `background/` and one-line description.
pub const IN9: &[(&str, &str)] = &[
    (
        "only_fg",
        "IN-9 Only-FG: the object alone on black, image × mask \
         (docs/in9.md#foreground-masks-only-fg-and-no-fg; needs a mask)",
    ),
    (
        "no_fg",
        "IN-9 No-FG: the object blacked out, image × (1 − mask) \
         (docs/in9.md#foreground-masks-only-fg-and-no-fg; needs a mask)",
    ),
    (
        "only_bg_b",
        "IN-9 Only-BG-B: the object's box filled black \
         (docs/in9.md#only-bg-b; needs a box or a mask)",
    ),
    (
        "only_bg_t",
        "IN-9 Only-BG-T: the object's box filled with tiles of the largest background strip \
         (docs/in9.md#only-bg-t; needs a box or a mask)",
    ),
    (
        "mixed_same",
        "IN-9 Mixed-Same: the object on the Only-BG-T background of an earlier frame of its class \
         (docs/in9.md#mixed-same-mixed-rand-and-mixed-next; needs a mask, labels and a stream)",
    ),
    (
        "mixed_rand",
        "IN-9 Mixed-Rand: the object on the Only-BG-T background of a random earlier frame \
         (docs/in9.md#mixed-same-mixed-rand-and-mixed-next; needs a mask and a stream)",
    ),
    (
        "mixed_next",
        "IN-9 Mixed-Next: the object on the Only-BG-T background of an earlier frame of the next class \
         seen (docs/in9.md#mixed-same-mixed-rand-and-mixed-next; \
         needs a mask, labels and a stream)",
    ),
];

/// The XIMAGENET-12 scenarios (group `ximagenet12`): key leaf under `background/` and one-line
/// description.
pub const XIMAGENET12: &[(&str, &str)] = &[
    (
        "blur_bg",
        "XIMAGENET-12 blurred background: OpenCV GaussianBlur 15×15 σ 3 outside the mask \
         (docs/ximagenet.md#blurred-background-and-blurred-object)",
    ),
    (
        "blur_obj",
        "XIMAGENET-12 blurred object: OpenCV GaussianBlur 15×15 σ 3 inside the mask \
         (docs/ximagenet.md#blurred-background-and-blurred-object)",
    ),
    (
        "color_r",
        "XIMAGENET-12 red background: every background hue set to one random red \
         (OpenCV 8-bit hue 0..29 or 150..180, docs/ximagenet.md#coloured-backgrounds)",
    ),
    (
        "color_g",
        "XIMAGENET-12 green background: every background hue set to one random green \
         (hue 30..89, docs/ximagenet.md#coloured-backgrounds)",
    ),
    (
        "color_b",
        "XIMAGENET-12 blue background: every background hue set to one random blue \
         (hue 90..149, docs/ximagenet.md#coloured-backgrounds)",
    ),
    (
        "color_grey",
        "XIMAGENET-12 grey background: OpenCV RGB→GRAY outside the mask (the reference lists it without \
         code; docs/ximagenet.md#grayscale-background)",
    ),
    (
        "color_rainbow",
        "XIMAGENET-12 rainbow background: background hues shifted by one random 0..90, with the \
         reference's u8 wrap (docs/ximagenet.md#rainbow-background)",
    ),
    (
        "bright_bg",
        "XIMAGENET-12 bright background: addWeighted(image 1.5, 9×9 σ 4 blur 0.9, +1.9) outside the mask \
         (docs/ximagenet.md#bright-background-and-bright-object)",
    ),
    (
        "bright_obj",
        "XIMAGENET-12 bright object: addWeighted(image 1.5, 9×9 σ 4 blur 0.9, +1.9) inside the mask \
         (docs/ximagenet.md#bright-background-and-bright-object)",
    ),
    (
        "segmented",
        "XIMAGENET-12 segmented image: the object on black \
         (docs/ximagenet.md#segmented-image; needs a mask)",
    ),
    (
        "transparent",
        "XIMAGENET-12 transparent image as its loader sees it: alpha dropped (Pillow convert RGB), i.e. \
         the original image, a control (docs/ximagenet.md#transparent-image; needs a mask)",
    ),
    (
        "random_bg_add",
        "XIMAGENET-12 random background as published: the segmented object squashed to a random \
         earlier whole image (OpenCV bilinear) and added to it (saturating u8 sum); the variant has \
         that image's size (docs/ximagenet.md#random-background; needs a mask and a stream)",
    ),
    (
        "random_bg_paste",
        "random background, clean paste: the object squashed to a random earlier whole image and \
         pasted onto it (XIMAGENET-12 variant, docs/ximagenet.md#random-background; needs a mask and a stream)",
    ),
];

/// XIMAGENET-12 options outside the `ximagenet12` group: the transparent image composited on a
/// matte (`transparent_on/<black|white|grey|RRGGBB>`; any hex colour builds, these are listed) and
/// the random backgrounds on an earlier frame's Only-BG-T fitted to the frame (the behaviour before
/// `random_bg_*` followed the reference).
pub(crate) const XIMAGENET12_OPTIONS: &[(&str, &str)] = &[
    (
        "transparent_on/black",
        "XIMAGENET-12 transparent image composited on black (0, 0, 0): object kept, background black \
         (docs/ximagenet.md#transparent-image; needs a mask; any matte: transparent_on/RRGGBB)",
    ),
    (
        "transparent_on/white",
        "XIMAGENET-12 transparent image composited on white (255, 255, 255) (docs/ximagenet.md#transparent-image; needs a mask)",
    ),
    (
        "transparent_on/grey",
        "XIMAGENET-12 transparent image composited on grey (128, 128, 128) (docs/ximagenet.md#transparent-image; needs a mask)",
    ),
    (
        "random_bg_add_bgt",
        "random background, sum, on a random earlier frame's Only-BG-T fitted to the frame (IN-9 style \
         background instead of XIMAGENET-12's whole image; needs a mask and a stream)",
    ),
    (
        "random_bg_paste_bgt",
        "random background, clean paste, on a random earlier frame's Only-BG-T fitted to the frame \
         (needs a mask and a stream)",
    ),
];

/// The paper's eight Table 2 scenarios (group `ximagenet12-table2`), in its column order: Blur_bg,
/// Blur_obj, Color_g, Color_b, Color_grey, Color_r, Rand_bg, Seg_img
/// (docs/ximagenet.md#robustness-score).
pub(crate) const TABLE2: [&str; 8] = [
    "blur_bg",
    "blur_obj",
    "color_g",
    "color_b",
    "color_grey",
    "color_r",
    "random_bg_add",
    "segmented",
];

/// Every background scenario's kind ([`Background::kind`]): which variation it makes (the key
/// leaves of [`IN9`], [`XIMAGENET12`] and [`XIMAGENET12_OPTIONS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// IN-9 `only_fg`.
    OnlyFg,
    /// IN-9 `no_fg`.
    NoFg,
    /// IN-9 `only_bg_b`.
    OnlyBgB,
    /// IN-9 `only_bg_t`.
    OnlyBgT,
    /// IN-9 `mixed_same` / `mixed_rand` / `mixed_next` (a background from the pool).
    Mixed(Pick),
    /// XIMAGENET-12 `blur_bg`.
    BlurBg,
    /// XIMAGENET-12 `blur_obj`.
    BlurObj,
    /// XIMAGENET-12 `color_*`.
    Colour(Colour),
    /// XIMAGENET-12 `bright_bg`.
    BrightBg,
    /// XIMAGENET-12 `bright_obj`.
    BrightObj,
    /// XIMAGENET-12 `segmented`.
    Segmented,
    /// The transparent image: alpha dropped (`None`) or composited on a matte colour.
    Transparent(Option<[u8; 3]>),
    /// Random background: `paste` (else the published sum), on a whole earlier image (`whole`, the
    /// reference) or on an earlier frame's Only-BG-T fitted to the frame.
    RandomBg {
        /// The clean paste (else the published saturating sum).
        paste: bool,
        /// On a whole earlier image (else an earlier frame's Only-BG-T fitted to the frame).
        whole: bool,
    },
}

impl Kind {
    fn from_leaf(leaf: &str) -> Option<Self> {
        Some(match leaf {
            "only_fg" => Kind::OnlyFg,
            "no_fg" => Kind::NoFg,
            "only_bg_b" => Kind::OnlyBgB,
            "only_bg_t" => Kind::OnlyBgT,
            "mixed_same" => Kind::Mixed(Pick::SameClass),
            "mixed_rand" => Kind::Mixed(Pick::Any),
            "mixed_next" => Kind::Mixed(Pick::NextClass),
            "blur_bg" => Kind::BlurBg,
            "blur_obj" => Kind::BlurObj,
            "color_r" => Kind::Colour(Colour::Red),
            "color_g" => Kind::Colour(Colour::Green),
            "color_b" => Kind::Colour(Colour::Blue),
            "color_grey" => Kind::Colour(Colour::Grey),
            "color_rainbow" => Kind::Colour(Colour::Rainbow),
            "bright_bg" => Kind::BrightBg,
            "bright_obj" => Kind::BrightObj,
            "segmented" => Kind::Segmented,
            "transparent" => Kind::Transparent(None),
            "random_bg_add" => Kind::RandomBg {
                paste: false,
                whole: true,
            },
            "random_bg_paste" => Kind::RandomBg {
                paste: true,
                whole: true,
            },
            "random_bg_add_bgt" => Kind::RandomBg {
                paste: false,
                whole: false,
            },
            "random_bg_paste_bgt" => Kind::RandomBg {
                paste: true,
                whole: false,
            },
            _ => Kind::Transparent(Some(matte(leaf.strip_prefix("transparent_on/")?)?)),
        })
    }
}

/// A matte colour: `black`, `white`, `grey` (128, 128, 128) or six hex digits `RRGGBB`.
fn matte(name: &str) -> Option<[u8; 3]> {
    Some(match name {
        "black" => [0, 0, 0],
        "white" => [255, 255, 255],
        "grey" => [128, 128, 128],
        hex if hex.len() == 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            let v = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
            [v(0)?, v(2)?, v(4)?]
        }
        _ => return None,
    })
}

/// A background scenario (`background/<name>`, see the module doc).
#[derive(Debug, Clone)]
pub struct Background {
    key: String,
    kind: Kind,
}

impl Background {
    /// The scenario `background/<leaf>`, `None` for an unknown leaf.
    pub(crate) fn new(leaf: &str) -> Option<Self> {
        Kind::from_leaf(leaf).map(|kind| Self {
            key: ScenarioKey::Background { leaf }.to_string(),
            kind,
        })
    }

    /// Which variation this scenario makes (read by the GPU path, docs/gpu.md#mask-based-scenarios).
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }
}

/// Builds the background scenario with this exact key (`background/<leaf>`); `None` if unknown.
pub fn build(key: &str) -> Option<Arc<dyn Scenario>> {
    build_key(ScenarioKey::parse(key))
}

/// [`build`] of a parsed key; `None` for other families.
pub(crate) fn build_key(key: ScenarioKey<'_>) -> Option<Arc<dyn Scenario>> {
    let ScenarioKey::Background { leaf } = key else {
        return None;
    };
    Background::new(leaf).map(|s| Arc::new(s) as Arc<dyn Scenario>)
}

impl Scenario for Background {
    fn key(&self) -> &str {
        &self.key
    }

    fn uses_pool(&self) -> bool {
        matches!(self.kind, Kind::Mixed(_) | Kind::RandomBg { .. })
    }

    fn as_background(&self) -> Option<&Background> {
        Some(self)
    }

    fn apply(&self, input: &ScenarioInput<'_>, rng: RngKey) -> Result<RgbImage, ScenarioError> {
        let image = input.image;
        Ok(match self.kind {
            Kind::OnlyFg => in9::only_fg(image, self.mask(input)?),
            Kind::NoFg => in9::no_fg(image, self.mask(input)?),
            Kind::OnlyBgB => in9::only_bg_b(image, self.object_box(input)?),
            Kind::OnlyBgT => {
                let b = self.object_box(input)?;
                in9::only_bg_t(image, b).ok_or_else(|| {
                    self.unsuitable(
                        "the object's box leaves no background strip to tile (it spans the frame)",
                    )
                })?
            }
            Kind::Mixed(pick) => {
                let mask = self.mask(input)?;
                let bg = draw_background(&self.key, input, pick, &mut rng.rng())?;
                in9::mixed(
                    image,
                    mask,
                    &fit_background(&bg, image.width(), image.height()),
                )
            }
            Kind::BlurBg => ximagenet::blur_background(image, self.mask(input)?),
            Kind::BlurObj => ximagenet::blur_object(image, self.mask(input)?),
            Kind::Colour(c) => {
                let mask = self.mask(input)?;
                ximagenet::colour_background(image, mask, c, &mut rng.rng())
            }
            Kind::BrightBg => ximagenet::bright(image, self.mask(input)?, true),
            Kind::BrightObj => ximagenet::bright(image, self.mask(input)?, false),
            Kind::Segmented => ximagenet::segmented(image, self.mask(input)?),
            Kind::Transparent(matte) => ximagenet::transparent(image, self.mask(input)?, matte),
            Kind::RandomBg { paste, whole } => {
                let mask = self.mask(input)?;
                let mut rng = rng.rng();
                let drawn = match whole {
                    true => draw_whole(&self.key, input, &mut rng)?,
                    false => draw_background(&self.key, input, Pick::Any, &mut rng)?,
                };
                let bg = match whole {
                    true => Cow::Borrowed(drawn.as_ref()),
                    false => fit_background(&drawn, image.width(), image.height()),
                };
                match paste {
                    false => ximagenet::random_background_add(image, mask, &bg),
                    true => ximagenet::random_background_paste(image, mask, &bg),
                }
            }
        })
    }
}

impl Background {
    fn unsuitable(&self, reason: &str) -> ScenarioError {
        ScenarioError::Unsuitable {
            key: self.key.clone(),
            reason: reason.into(),
        }
    }

    /// The frame's mask, or why it cannot be used.
    fn mask<'a>(&self, input: &ScenarioInput<'a>) -> Result<&'a GrayImage, ScenarioError> {
        let mask = self
            .sized_mask(input)?
            .ok_or_else(|| ScenarioError::NeedsMask(self.key.clone()))?;
        if mask.as_raw().iter().all(|&m| m == 0) {
            return Err(self.unsuitable(
                "the foreground mask is empty (no pixel > 0): no object to separate from the background",
            ));
        }
        Ok(mask)
    }

    /// The frame's mask if it has one of the image's size.
    fn sized_mask<'a>(
        &self,
        input: &ScenarioInput<'a>,
    ) -> Result<Option<&'a GrayImage>, ScenarioError> {
        match input.mask {
            Some(m) if m.dimensions() != input.image.dimensions() => {
                Err(self.unsuitable(&format!(
                    "the mask is {}x{} but the image is {}x{}; give a mask of the image's size",
                    m.width(),
                    m.height(),
                    input.image.width(),
                    input.image.height()
                )))
            }
            m => Ok(m),
        }
    }

    /// IN-9's object box ([`in9::object_box`]), or why there is none.
    fn object_box(&self, input: &ScenarioInput<'_>) -> Result<crate::frame::BBox, ScenarioError> {
        let mask = self.sized_mask(input)?;
        if mask.is_none() && input.boxes.is_empty() {
            return Err(ScenarioError::NeedsMask(self.key.clone()));
        }
        in9::object_box(input.image.dimensions(), mask, input.boxes).ok_or_else(|| {
            self.unsuitable(
                "no object region: the mask is empty (no pixel > 0) and the boxes, if any, lie \
                 outside the frame",
            )
        })
    }
}

/// Which pool entries a scenario may draw its background from (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The frame's own class (IN-9 `mixed_same`).
    SameClass,
    /// The next class present in the pool after the frame's class, cyclically (IN-9 `mixed_next`).
    NextClass,
    /// Any entry (IN-9 `mixed_rand`, XIMAGENET-12's random background).
    Any,
}

/// Draws a background for the variant `key` of `input` from its pool (see the module doc): uniformly
/// among the entries `pick` allows, skipping entries without a usable background.
///
/// Errors: [`ScenarioError::NoPool`] when no pool is attached (apply / preview without
/// `--background`); [`ScenarioError::Unsuitable`] when the frame's truth is missing and `pick` needs
/// a class, or no suitable entry is there yet (reason starting "background pool warming up").
fn draw_background(
    key: &str,
    input: &ScenarioInput<'_>,
    pick: Pick,
    rng: &mut ScenarioRng,
) -> Result<Arc<RgbImage>, ScenarioError> {
    let unsuitable = |reason: String| ScenarioError::Unsuitable {
        key: key.to_string(),
        reason,
    };
    let Some(pool) = input.pool else {
        return Err(ScenarioError::NoPool {
            key: key.to_string(),
            what: "backgrounds",
        });
    };
    let class = match pick {
        Pick::Any => None,
        Pick::SameClass | Pick::NextClass => Some(input.truth.map(|t| t.0).ok_or_else(|| {
            unsuitable(
                "needs the frame's class (ground truth) to choose the background's class; give the \
                 source labels"
                    .into(),
            )
        })?),
    };
    match (pick, class) {
        (Pick::SameClass, Some(y)) => draw_among(pool.of_class(Some(y)).iter().collect(), rng)
            .ok_or_else(|| {
                unsuitable(format!(
                    "background pool warming up: no earlier frame of class {y} with a usable \
                     background yet"
                ))
            }),
        (Pick::NextClass, Some(y)) => {
            let classes = pool.classes();
            let order = classes
                .iter()
                .filter(|&&c| c > y)
                .chain(classes.iter().filter(|&&c| c < y));
            for &c in order {
                if let Some(bg) = draw_among(pool.of_class(Some(c)).iter().collect(), rng) {
                    return Ok(bg);
                }
            }
            Err(unsuitable(format!(
                "background pool warming up: no earlier frame of a class other than {y} with a usable \
                 background yet"
            )))
        }
        _ => draw_among(pool.all().collect(), rng).ok_or_else(|| {
            unsuitable(
                "background pool warming up: no earlier frame with a usable background yet".into(),
            )
        }),
    }
}

/// Draws a whole earlier image for the variant `key` of `input` (XIMAGENET-12's random background,
/// see the module doc): uniformly among all pool entries, any class.
///
/// Errors: [`ScenarioError::NoPool`] when no pool is attached; [`ScenarioError::Unsuitable`] for an
/// empty pool (reason starting "background pool warming up").
fn draw_whole(
    key: &str,
    input: &ScenarioInput<'_>,
    rng: &mut ScenarioRng,
) -> Result<Arc<RgbImage>, ScenarioError> {
    let unsuitable = |reason: &str| ScenarioError::Unsuitable {
        key: key.to_string(),
        reason: reason.into(),
    };
    let pool = input.pool.ok_or_else(|| ScenarioError::NoPool {
        key: key.to_string(),
        what: "whole images",
    })?;
    pool.pick(rng, |_| true)
        .map(|e| e.whole())
        .ok_or_else(|| unsuitable("background pool warming up: no earlier frame with regions yet"))
}

/// A uniformly drawn usable background among `entries`: draw, and if that entry has no background,
/// drop it and draw again.
fn draw_among(mut entries: Vec<&Arc<PoolEntry>>, rng: &mut ScenarioRng) -> Option<Arc<RgbImage>> {
    while !entries.is_empty() {
        let i = rng.random_range(0..entries.len());
        if let Some(bg) = entries[i].background() {
            return Some(bg);
        }
        entries.remove(i);
    }
    None
}

/// `bg` fitted to `width × height` (see the module doc): unchanged when it already has that size, else
/// Pillow NEAREST resize covering the target with the aspect ratio kept, then a centred crop.
fn fit_background(bg: &RgbImage, width: u32, height: u32) -> Cow<'_, RgbImage> {
    let (bw, bh) = bg.dimensions();
    if (bw, bh) == (width, height) {
        return Cow::Borrowed(bg);
    }
    if bw == 0 || bh == 0 {
        return Cow::Owned(RgbImage::new(width, height));
    }
    // Cover: the side whose ratio binds becomes the target's, the other is truncated (≥ the target's).
    let (rw, rh) = if u64::from(bw) * u64::from(height) >= u64::from(bh) * u64::from(width) {
        (
            (u64::from(height) * u64::from(bw) / u64::from(bh)) as u32,
            height,
        )
    } else {
        (
            width,
            (u64::from(width) * u64::from(bh) / u64::from(bw)) as u32,
        )
    };
    let window = Window {
        x: crate::view::center_offset(rw, width).max(0) as u32,
        y: crate::view::center_offset(rh, height).max(0) as u32,
        width,
        height,
    };
    Cow::Owned(Resampler::new().resize_rgb_window(bg, rw, rh, window, Filter::Nearest))
}

#[cfg(test)]
mod tests;
