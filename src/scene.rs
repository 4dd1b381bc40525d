//! Procedural scenes with exact foreground masks: objects of known shape and colour on textured
//! backgrounds, at any size, deterministic from their description (and seed). For exact pixel tests
//! and benchmarks of the mask- and box-based scenarios (docs/README.md), which need frames whose
//! foreground is known to the pixel.
//!
//! A pixel belongs to an object when its centre `(x + 0.5, y + 0.5)` lies inside the object's shape
//! (closed boundary). The mask is 255 exactly on the pixels of the objects and 0 elsewhere, and those
//! pixels have exactly the object's colour; later objects paint over earlier ones.
//!
//! ```
//! use robustream::frame::BBox;
//! use robustream::scene::{Background, Object, Shape, render};
//! let s = render(64, 48, &Background::checker([20, 20, 20], [90, 90, 90], 8), &[
//!     Object::new(Shape::Rect, BBox::new(10, 8, 30, 20), [250, 0, 0]),
//! ]);
//! assert_eq!(s.boxes, vec![BBox::new(10, 8, 30, 20)]);
//! assert_eq!(s.mask.get_pixel(10, 8).0, [255]);
//! assert_eq!(s.image.get_pixel(29, 19).0, [250, 0, 0]);
//! assert_eq!(s.mask.get_pixel(30, 19).0, [0]);
//! ```

use image::{GrayImage, RgbImage};
use rand::{Rng, RngExt};

use crate::frame::BBox;
use crate::rng::RngKey;

/// The shape of an object, inscribed in its box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The whole box.
    Rect,
    /// The ellipse inscribed in the box (a disc when the box is square).
    Disc,
    /// The triangle with its apex at the middle of the box's top edge and its base on the bottom
    /// edge.
    Triangle,
}

/// One object of a scene.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Object {
    /// Its shape.
    pub(crate) shape: Shape,
    /// The box the shape is inscribed in, in pixels (exclusive ends; may reach outside the image,
    /// the object is then cut at the border).
    pub(crate) frame: BBox,
    /// Its colour (RGB), uniform over the object.
    pub(crate) color: [u8; 3],
}

impl Object {
    /// An object of `shape` inscribed in `frame`, painted `color`.
    pub fn new(shape: Shape, frame: BBox, color: [u8; 3]) -> Self {
        Self {
            shape,
            frame,
            color,
        }
    }

    /// True when the pixel `(x, y)` belongs to the object (its centre lies in the shape).
    fn covers(&self, x: u32, y: u32) -> bool {
        let f = self.frame;
        if x < f.x0 || x >= f.x1 || y < f.y0 || y >= f.y1 {
            return false;
        }
        let (px, py) = (f64::from(x) + 0.5, f64::from(y) + 0.5);
        let (x0, y0, x1, y1) = (
            f64::from(f.x0),
            f64::from(f.y0),
            f64::from(f.x1),
            f64::from(f.y1),
        );
        match self.shape {
            Shape::Rect => true,
            Shape::Disc => {
                let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
                let (rx, ry) = ((x1 - x0) / 2.0, (y1 - y0) / 2.0);
                let (dx, dy) = ((px - cx) / rx, (py - cy) / ry);
                dx * dx + dy * dy <= 1.0
            }
            Shape::Triangle => {
                // Inside the two slanted edges from the apex (cx, y0) to (x0, y1) and (x1, y1); the
                // base is the box's bottom edge, which every pixel centre of the box is above.
                let cx = (x0 + x1) / 2.0;
                let (h, half) = (y1 - y0, (x1 - x0) / 2.0);
                // Half-width of the triangle at height py.
                let reach = half * (py - y0) / h;
                (px - cx).abs() <= reach
            }
        }
    }
}

/// The texture behind the objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// One colour.
    Solid([u8; 3]),
    /// Vertical stripes `width` pixels wide, alternating the two colours from the left edge.
    Stripes {
        /// The two colours.
        colors: [[u8; 3]; 2],
        /// Stripe width in pixels (at least 1).
        width: u32,
    },
    /// A checkerboard of `cell`-pixel squares, the first colour at the top-left.
    Checker {
        /// The two colours.
        colors: [[u8; 3]; 2],
        /// Square size in pixels (at least 1).
        cell: u32,
    },
    /// A horizontal linear gradient from the left colour to the right one (rounded to the nearest
    /// integer per channel).
    Gradient {
        /// Colour of the leftmost column.
        from: [u8; 3],
        /// Colour of the rightmost column.
        to: [u8; 3],
    },
    /// Uniform random bytes per pixel and channel, keyed by `seed` (row `y` draws from
    /// `RngKey::new(seed, "scene", "noise").stream(y)`).
    Noise {
        /// Seed of the texture.
        seed: u64,
    },
}

impl Background {
    /// Vertical stripes (see [`Background::Stripes`]).
    pub fn stripes(a: [u8; 3], b: [u8; 3], width: u32) -> Self {
        Self::Stripes {
            colors: [a, b],
            width,
        }
    }

    /// A checkerboard (see [`Background::Checker`]).
    pub fn checker(a: [u8; 3], b: [u8; 3], cell: u32) -> Self {
        Self::Checker {
            colors: [a, b],
            cell,
        }
    }

    /// Paints row `y` of a `width`-pixel image (3 bytes per pixel) into `row`.
    fn paint_row(&self, y: u32, width: u32, row: &mut [u8]) {
        match *self {
            Background::Solid(c) => row.chunks_exact_mut(3).for_each(|p| p.copy_from_slice(&c)),
            Background::Stripes { colors, width: w } => {
                for (x, p) in row.chunks_exact_mut(3).enumerate() {
                    p.copy_from_slice(&colors[(x as u32 / w.max(1)) as usize % 2]);
                }
            }
            Background::Checker { colors, cell } => {
                let cy = y / cell.max(1);
                for (x, p) in row.chunks_exact_mut(3).enumerate() {
                    p.copy_from_slice(&colors[((x as u32 / cell.max(1) + cy) % 2) as usize]);
                }
            }
            Background::Gradient { from, to } => {
                let span = f64::from(width.saturating_sub(1).max(1));
                for (x, p) in row.chunks_exact_mut(3).enumerate() {
                    let t = x as f64 / span;
                    for c in 0..3 {
                        let (a, b) = (f64::from(from[c]), f64::from(to[c]));
                        p[c] = (a + (b - a) * t).round() as u8;
                    }
                }
            }
            Background::Noise { seed } => {
                RngKey::new(seed, "scene", "noise")
                    .stream(u64::from(y))
                    .fill_bytes(row);
            }
        }
    }
}

/// A rendered scene: the picture, its exact foreground mask and the objects' boxes.
#[derive(Debug, Clone, PartialEq)]
pub struct Scene {
    /// The pixels.
    pub image: RgbImage,
    /// 255 on the objects' pixels, 0 elsewhere; the image's size.
    pub mask: GrayImage,
    /// The tight box of each object's pixels (exclusive ends, inside the image), in the order of
    /// the objects; an object with no pixel in the image has no box.
    pub boxes: Vec<BBox>,
}

/// Renders `objects` over `background` on a `width`×`height` canvas (see the module docs for the
/// pixel rule).
pub fn render(width: u32, height: u32, background: &Background, objects: &[Object]) -> Scene {
    let mut image = RgbImage::new(width, height);
    let row_len = width as usize * 3;
    if row_len > 0 {
        for (y, row) in image.chunks_exact_mut(row_len).enumerate() {
            background.paint_row(y as u32, width, row);
        }
    }
    let mut mask = GrayImage::new(width, height);
    let boxes = paint_objects(&mut image, &mut mask, objects);
    Scene { image, mask, boxes }
}

/// Paints `objects` over `image` (whatever it holds) and sets their pixels to 255 in `mask` (same
/// size), by the module's pixel rule; returns the tight box of each object's pixels (objects with
/// no pixel in the image have none). [`render`] is this over a painted background.
pub(crate) fn paint_objects(
    image: &mut RgbImage,
    mask: &mut GrayImage,
    objects: &[Object],
) -> Vec<BBox> {
    let (width, height) = image.dimensions();
    let mut boxes = Vec::with_capacity(objects.len());
    for o in objects {
        let Some(f) = o.frame.clip(width, height) else {
            continue;
        };
        let mut tight: Option<BBox> = None;
        for y in f.y0..f.y1 {
            for x in f.x0..f.x1 {
                if !o.covers(x, y) {
                    continue;
                }
                image.put_pixel(x, y, image::Rgb(o.color));
                mask.put_pixel(x, y, image::Luma([255]));
                tight = Some(match tight {
                    None => BBox::new(x, y, x + 1, y + 1),
                    Some(b) => BBox::new(b.x0.min(x), b.y0, b.x1.max(x + 1), y + 1),
                });
            }
        }
        boxes.extend(tight);
    }
    boxes
}

/// A random scene, the same for the same `(width, height, seed)`: one object (random shape, a
/// saturated colour, 30–60 % of the shorter side, wholly inside the frame) on a random background
/// (stripes, checker, gradient or noise, in darker tones than the object). Frames smaller than 4×4
/// pixels get a one-pixel object.
pub fn random_scene(width: u32, height: u32, seed: u64) -> Scene {
    let mut rng = RngKey::new(seed, "scene", &format!("{width}x{height}")).rng();
    let dark = |rng: &mut crate::rng::ScenarioRng| -> [u8; 3] {
        [
            rng.random_range(0..120),
            rng.random_range(0..120),
            rng.random_range(0..120),
        ]
    };
    let (a, b) = (dark(&mut rng), dark(&mut rng));
    let background = match rng.random_range(0..4) {
        0 => Background::stripes(a, b, rng.random_range(2..12)),
        1 => Background::checker(a, b, rng.random_range(2..16)),
        2 => Background::Gradient { from: a, to: b },
        _ => Background::Noise {
            seed: rng.next_u64(),
        },
    };
    let shape = [Shape::Rect, Shape::Disc, Shape::Triangle][rng.random_range(0..3)];
    // A saturated colour: one channel high, the others anywhere.
    let mut color = [
        rng.random_range(0..=255),
        rng.random_range(0..=255),
        rng.random_range(0..=255),
    ];
    color[rng.random_range(0..3)] = rng.random_range(200..=255);
    let short = width.min(height);
    let frame = if short < 4 {
        BBox::new(0, 0, 1.min(width), 1.min(height))
    } else {
        let lo = (short * 3 / 10).max(2);
        let hi = (short * 6 / 10).max(lo + 1);
        let (w, h) = (rng.random_range(lo..hi), rng.random_range(lo..hi));
        let x0 = rng.random_range(0..=width - w);
        let y0 = rng.random_range(0..=height - h);
        BBox::new(x0, y0, x0 + w, y0 + h)
    };
    render(
        width,
        height,
        &background,
        &[Object::new(shape, frame, color)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::{Connectivity, component_boxes, tight_box};

    #[test]
    fn shapes_have_the_expected_pixels() {
        let bg = Background::Solid([0, 0, 0]);
        let disc = render(
            9,
            9,
            &bg,
            &[Object::new(Shape::Disc, BBox::new(0, 0, 9, 9), [9, 9, 9])],
        );
        // Radius 4.5 around (4.5, 4.5): the corners are out, the edge midpoints in.
        assert_eq!(disc.mask.get_pixel(0, 0).0, [0]);
        assert_eq!(disc.mask.get_pixel(4, 0).0, [255]);
        assert_eq!(disc.mask.get_pixel(0, 4).0, [255]);
        assert_eq!(disc.boxes, vec![BBox::new(0, 0, 9, 9)]);
        let area = disc.mask.as_raw().iter().filter(|&&v| v == 255).count();
        // π·4.5² ≈ 63.6
        assert!((57..=69).contains(&area), "{area}");

        let tri = render(
            8,
            4,
            &bg,
            &[Object::new(
                Shape::Triangle,
                BBox::new(0, 0, 8, 4),
                [1, 1, 1],
            )],
        );
        let rows: Vec<String> = tri
            .mask
            .as_raw()
            .chunks_exact(8)
            .map(|r| {
                r.iter()
                    .map(|&v| if v == 255 { '#' } else { '.' })
                    .collect()
            })
            .collect();
        // Half-width at pixel-centre height y + 0.5 is (y + 0.5), around x = 4.
        assert_eq!(rows, ["...##...", "..####..", ".######.", "########"]);
        assert_eq!(tri.boxes, vec![BBox::new(0, 0, 8, 4)]);
    }

    #[test]
    fn mask_image_and_boxes_agree_exactly() {
        let bg = Background::checker([10, 20, 30], [40, 50, 60], 3);
        let objects = [
            Object::new(Shape::Rect, BBox::new(2, 3, 12, 9), [255, 0, 0]),
            Object::new(Shape::Disc, BBox::new(20, 5, 31, 16), [0, 255, 0]),
            Object::new(Shape::Triangle, BBox::new(30, 20, 50, 40), [0, 0, 255]), // cut at the border
            Object::new(Shape::Rect, BBox::new(100, 100, 120, 120), [1, 2, 3]),   // outside: no box
        ];
        let s = render(40, 30, &bg, &objects);
        assert_eq!(s.boxes.len(), 3);
        assert_eq!(s.boxes[0], BBox::new(2, 3, 12, 9));
        for (x, y, px) in s.image.enumerate_pixels() {
            let owner = objects.iter().rev().find(|o| o.covers(x, y));
            assert_eq!(s.mask.get_pixel(x, y).0[0] == 255, owner.is_some());
            match owner {
                Some(o) => assert_eq!(px.0, o.color),
                None => assert!(px.0 == [10, 20, 30] || px.0 == [40, 50, 60]),
            }
        }
        // Separate objects are separate components with the same boxes.
        assert_eq!(component_boxes(&s.mask, Connectivity::Four), s.boxes);
        assert_eq!(tight_box(&s.mask), Some(BBox::new(2, 3, 40, 30)));
    }

    #[test]
    fn backgrounds_are_as_described() {
        let mut row = vec![0u8; 5 * 3];
        Background::stripes([1, 1, 1], [2, 2, 2], 2).paint_row(0, 5, &mut row);
        assert_eq!(row, [1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 1, 1, 1]);
        Background::checker([1, 1, 1], [2, 2, 2], 2).paint_row(2, 5, &mut row);
        assert_eq!(row[..9], [2, 2, 2, 2, 2, 2, 1, 1, 1]);
        Background::Gradient {
            from: [0, 100, 255],
            to: [255, 100, 0],
        }
        .paint_row(0, 5, &mut row);
        assert_eq!(row[..3], [0, 100, 255]);
        assert_eq!(row[6..9], [128, 100, 128]); // 127.5 rounds half away from zero
        assert_eq!(row[12..], [255, 100, 0]);
        let n = render(16, 8, &Background::Noise { seed: 7 }, &[]);
        assert_eq!(n, render(16, 8, &Background::Noise { seed: 7 }, &[]));
        assert_ne!(
            n.image,
            render(16, 8, &Background::Noise { seed: 8 }, &[]).image
        );
        assert!(n.boxes.is_empty() && tight_box(&n.mask).is_none());
        // Rows are independent streams: a taller image starts with the same rows.
        let tall = render(16, 12, &Background::Noise { seed: 7 }, &[]);
        assert_eq!(n.image.as_raw()[..], tall.image.as_raw()[..16 * 8 * 3]);
    }

    #[test]
    fn random_scenes_are_deterministic_and_inside_the_frame() {
        for (w, h) in [(224u32, 224u32), (640, 427), (33, 71), (3, 2), (1, 1)] {
            for seed in 0..20 {
                let s = random_scene(w, h, seed);
                assert_eq!(s, random_scene(w, h, seed));
                assert_eq!(s.image.dimensions(), (w, h));
                assert_eq!(s.boxes.len(), 1, "{w}x{h} seed {seed}");
                assert_eq!(tight_box(&s.mask), Some(s.boxes[0]));
            }
        }
        assert_ne!(random_scene(64, 64, 0).image, random_scene(64, 64, 1).image);
    }
}
