//! Every ImageNet-C corruption at every severity on frames the 224-only reference code never saw:
//! 1280×720, 640×427, 32×32 and a 1×1 pixel. No panic, the input's size out, and a sensible picture
//! (changed, but not wiped out).

use image::RgbImage;
use robustream::key::{CORRUPTIONS, SEVERITIES};
use robustream::rng::RngKey;
use robustream::scenario::corruption::Corruption;

/// A smooth synthetic scene with edges (so blurs, Canny-based spatter and JPEG all have work to do).
fn scene(w: u32, h: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let (fx, fy) = (x as f64 / w.max(1) as f64, y as f64 / h.max(1) as f64);
        let disc = ((fx - 0.5).powi(2) + (fy - 0.5).powi(2)).sqrt() < 0.25;
        image::Rgb([
            (40.0 + 180.0 * fx) as u8,
            if disc { 220 } else { (60.0 + 120.0 * fy) as u8 },
            ((x / 8 + y / 8) % 2 * 90 + 40) as u8,
        ])
    })
}

fn mean(img: &RgbImage) -> f64 {
    img.as_raw().iter().map(|&v| f64::from(v)).sum::<f64>() / img.as_raw().len().max(1) as f64
}

#[test]
fn all_corruptions_handle_any_frame_size() {
    for (w, h) in [(1280, 720), (640, 427), (32, 32), (1, 1)] {
        let input = scene(w, h);
        for (name, _) in CORRUPTIONS {
            for sev in SEVERITIES {
                let c = Corruption::new(name, sev).unwrap();
                let out = c.corrupt(&input, RngKey::new(3, "scene", name));
                assert_eq!(out.dimensions(), (w, h), "{name}/{sev} at {w}x{h}");
                if w >= 32 {
                    let changed = out
                        .as_raw()
                        .iter()
                        .zip(input.as_raw())
                        .filter(|(a, b)| a != b)
                        .count();
                    assert!(changed > 0, "{name}/{sev} at {w}x{h} changed nothing");
                    let m = mean(&out);
                    assert!(
                        (5.0..=250.0).contains(&m),
                        "{name}/{sev} at {w}x{h}: mean {m:.1}"
                    );
                }
            }
        }
    }
}
