//! The preview's text renderer: the 8×8 bitmap font of `font8x8` (printable ASCII and Latin-1),
//! text measured, fitted into a width, word-wrapped and drawn at an integer scale, clipped to a
//! [`Rect`].

use image::RgbImage;

use super::{GLYPH, Rect};

/// The 8×8 glyph of `c` (rows top to bottom, bit 0 = leftmost pixel): printable ASCII and Latin-1
/// from `font8x8`; anything else draws as `?`.
pub fn glyph(c: char) -> [u8; 8] {
    use font8x8::legacy::{BASIC_LEGACY, LATIN_LEGACY};
    match c as u32 {
        code @ 0x20..=0x7e => BASIC_LEGACY[code as usize],
        code @ 0xa0..=0xff => LATIN_LEGACY[(code - 0xa0) as usize],
        _ => BASIC_LEGACY[usize::from(b'?')],
    }
}

/// Width in pixels of `text` drawn at `scale` (every glyph advances `8 · scale`).
pub fn text_width(text: &str, scale: u32) -> u32 {
    text.chars().count() as u32 * GLYPH * scale
}

/// The text and scale to draw `text` within `max_width` pixels: at `scale` if it fits, else at ×1,
/// else shortened to fit at ×1 and ended with `..`.
///
/// ```
/// use robustream::app::preview::fit_text;
/// assert_eq!(fit_text("fog", 160, 2), ("fog".to_string(), 2));
/// assert_eq!(fit_text("gaussian_noise", 160, 2), ("gaussian_noise".to_string(), 1));
/// assert_eq!(fit_text("gaussian_noise", 64, 2), ("gaussi..".to_string(), 1));
/// ```
pub fn fit_text(text: &str, max_width: u32, scale: u32) -> (String, u32) {
    if text_width(text, scale) <= max_width {
        return (text.to_string(), scale);
    }
    if text_width(text, 1) <= max_width {
        return (text.to_string(), 1);
    }
    let room = (max_width / GLYPH) as usize;
    if room <= 2 {
        return (text.chars().take(room).collect(), 1);
    }
    let mut s: String = text.chars().take(room - 2).collect();
    s.push_str("..");
    (s, 1)
}

/// Greedy word wrap of `text` into at most `max_lines` lines of at most `max_chars` characters; words
/// longer than a line are split; text that does not fit ends with `..`.
pub fn wrap(text: &str, max_chars: usize, max_lines: usize) -> Vec<String> {
    if max_chars == 0 || max_lines == 0 {
        return Vec::new();
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let sep = usize::from(used > 0);
            if used + sep + word.len() <= max_chars {
                if sep == 1 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            // A word longer than a whole line: split it.
            let rest = word.split_off(max_chars);
            lines.push(word.iter().collect());
            word = rest;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        let last = &mut lines[max_lines - 1];
        let keep = max_chars.saturating_sub(2).min(last.chars().count());
        *last = last.chars().take(keep).collect::<String>() + "..";
    }
    lines
}

/// Draws `text` with its top-left corner at `(x, y)`, each font pixel a `scale × scale` block of
/// `colour`, clipped to `clip` and to the image.
pub fn draw_text(
    image: &mut RgbImage,
    x: u32,
    y: u32,
    text: &str,
    scale: u32,
    colour: [u8; 3],
    clip: Rect,
) {
    let x1 = clip.right().min(image.width());
    let y1 = clip.bottom().min(image.height());
    for (i, c) in text.chars().enumerate() {
        let gx = x + i as u32 * GLYPH * scale;
        if gx >= x1 {
            break;
        }
        for (row, bits) in glyph(c).iter().enumerate() {
            for col in 0..GLYPH {
                if bits >> col & 1 == 0 {
                    continue;
                }
                let px = gx + col * scale;
                let py = y + row as u32 * scale;
                for dy in 0..scale {
                    for dx in 0..scale {
                        let (u, v) = (px + dx, py + dy);
                        if u >= clip.x && v >= clip.y && u < x1 && v < y1 {
                            image.put_pixel(u, v, image::Rgb(colour));
                        }
                    }
                }
            }
        }
    }
}

/// Draws `text` centred horizontally in `r` (top-aligned), fitted with [`fit_text`].
pub(super) fn draw_centred(image: &mut RgbImage, r: Rect, text: &str, scale: u32, colour: [u8; 3]) {
    let (t, s) = fit_text(text, r.width, scale);
    let w = text_width(&t, s);
    let x = r.x + (r.width - w.min(r.width)) / 2;
    // ×1 text in a ×2 band sits on the band's lower half, next to what it labels.
    let y = r.y + (r.height.saturating_sub(GLYPH * s));
    draw_text(image, x, y, &t, s, colour, r);
}
