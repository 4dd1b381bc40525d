use super::*;
use crate::source::test_util::labels;

fn cfg(w: u32, h: u32) -> SyntheticConfig {
    SyntheticConfig {
        width: w,
        height: h,
        frames: Some(5),
        objects: 2,
        seed: 7,
        ..SyntheticConfig::default()
    }
}

#[test]
fn spec_parses_every_part_and_rejects_bad_ones() {
    let c = SyntheticConfig::parse_spec("synthetic:320x240@15/90")
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.width, c.height, c.fps, c.frames),
        (320, 240, 15.0, Some(90))
    );
    let d = SyntheticConfig::parse_spec("synthetic").unwrap().unwrap();
    assert_eq!(d, SyntheticConfig::default());
    let e = SyntheticConfig::parse_spec("synthetic:@10")
        .unwrap()
        .unwrap();
    assert_eq!((e.width, e.fps, e.frames), (640, 10.0, None));
    assert!(SyntheticConfig::parse_spec("photos/").is_none());
    assert!(SyntheticConfig::parse_spec("synthetics").is_none());
    for bad in [
        "synthetic:64",
        "synthetic:0x10",
        "synthetic:8x8@0",
        "synthetic:8x8/x",
        "synthetic:8x8@30/0",
    ] {
        let err = SyntheticConfig::parse_spec(bad)
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(bad) && err.contains("synthetic:640x480"),
            "{err}"
        );
    }
    // No frames at all is no camera: refused, the fix named.
    let err = SyntheticConfig::parse_spec("synthetic:8x8@30/0")
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("frame count of 0"), "{err}");
}

#[test]
fn frames_are_a_function_of_their_index_with_exact_masks() {
    let mut s = open(&cfg(96, 64), &labels()).unwrap();
    let frames: Vec<Frame> = std::iter::from_fn(|| s.next_frame())
        .map(|f| f.unwrap())
        .collect();
    assert_eq!(frames.len(), 5);
    assert!(s.next_frame().is_none());
    let again = open(&cfg(96, 64), &labels()).unwrap();
    for f in &frames {
        let (img, mask, boxes) = again.render(f.seq);
        assert_eq!(img, f.image, "frame {} repeats", f.id);
        let r = f.regions.as_ref().unwrap();
        assert_eq!(r.mask.as_ref(), Some(&mask));
        assert_eq!(r.boxes, boxes);
        assert!(mask.iter().all(|&v| v == 0 || v == 255));
        // Background pixels are the background's, object pixels differ from it somewhere.
        for ((p, b), m) in img.pixels().zip(again.background.pixels()).zip(mask.iter()) {
            if *m == 0 {
                assert_eq!(p, b);
            }
        }
        assert!(!boxes.is_empty());
    }
    assert_eq!(frames[3].id, "synthetic/00000003");
    // The objects move.
    assert_ne!(frames[0].image, frames[4].image);
    // Another seed, another scene.
    let other = open(
        &SyntheticConfig {
            seed: 8,
            ..cfg(96, 64)
        },
        &labels(),
    )
    .unwrap();
    assert_ne!(other.render(0).0, frames[0].image);
}

#[test]
fn paths_bounce_inside_the_frame() {
    let p = Path {
        start: [0.9, 0.1],
        speed: [0.5, -0.5],
    };
    assert!((p.at(0.4)[0] - 0.9).abs() < 1e-12); // 0.9 + 0.2 = 1.1 → 0.9
    assert!((p.at(0.4)[1] - 0.1).abs() < 1e-12); // 0.1 − 0.2 = −0.1 → 0.1
    for i in 0..1000 {
        let [x, y] = p.at(f64::from(i) * 0.037);
        assert!((0.0..=1.0).contains(&x) && (0.0..=1.0).contains(&y));
    }
    // Objects stay inside even on tiny frames.
    let s = open(&cfg(3, 2), &labels()).unwrap();
    for n in 0..50 {
        let (img, mask, _) = s.render(n);
        assert_eq!((img.dimensions(), mask.dimensions()), ((3, 2), (3, 2)));
    }
}

#[test]
fn realtime_paces_at_fps() {
    let c = SyntheticConfig {
        fps: 50.0,
        realtime: true,
        ..cfg(16, 16)
    };
    let mut s = open(&c, &labels()).unwrap();
    let t0 = Instant::now();
    let n = std::iter::from_fn(|| s.next_frame()).count();
    // Frame 4 is due 80 ms after frame 0: pacing can only make it later.
    assert_eq!(n, 5);
    assert!(t0.elapsed() >= Duration::from_millis(80));
}

#[test]
fn bad_label_and_sprite_files_are_one_clear_error() {
    let e = open(
        &SyntheticConfig {
            label: Some("no such class".into()),
            ..cfg(8, 8)
        },
        &labels(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("label `no such class`"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let photo = dir.path().join("p.png");
    let mask = dir.path().join("m.png");
    crate::source::test_util::write_rgb(&photo, 10, 8, [200, 10, 10]);
    crate::source::test_util::write_gray(&mask, 9, 8, 255);
    let c = SyntheticConfig {
        sprite: Some(photo.clone()),
        sprite_mask: Some(mask.clone()),
        ..cfg(40, 30)
    };
    let e = open(&c, &labels()).err().unwrap();
    assert!(
        e.to_string().contains("9x8") && e.to_string().contains("10x8"),
        "{e}"
    );
    crate::source::test_util::write_gray(&mask, 10, 8, 0);
    let e = open(&c, &labels()).err().unwrap();
    assert!(e.to_string().contains("no foreground"), "{e}");
    // A device or a FIFO as the photo or the mask: refused by the bounded reader, not read
    // for ever (/dev/zero) nor opened (a FIFO with no writer blocks the open).
    if std::path::Path::new("/dev/zero").exists() {
        let zero = SyntheticConfig {
            sprite: Some("/dev/zero".into()),
            ..c.clone()
        };
        let e = open(&zero, &labels()).err().unwrap();
        assert_eq!(
            e.to_string(),
            "/dev/zero: sprite photo: is a character device, not an image file; give the \
                 path of an image file"
        );
    }
    let fifo = dir.path().join("pipe.png");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let piped = SyntheticConfig {
            sprite_mask: Some(fifo.clone()),
            ..c.clone()
        };
        let e = open(&piped, &labels()).err().unwrap();
        assert!(
            e.to_string().ends_with(
                "pipe.png: sprite mask: is a FIFO (named pipe), not a mask file; give the \
                     path of a mask file"
            ),
            "{e}"
        );
    }
    crate::source::test_util::write_gray(&mask, 10, 8, 255);
    let s = open(&c, &labels()).unwrap();
    let (img, m, boxes) = s.render(2);
    // The whole sprite is object: its box is its size, its pixels its colour.
    assert_eq!(boxes.len(), 1);
    let b = boxes[0];
    assert_eq!((b.width(), b.height()), (18, 14)); // 0.6 × 30 = 18 on the long side
    assert_eq!(img.get_pixel(b.x0, b.y0).0, [200, 10, 10]);
    assert_eq!(m.iter().filter(|&&v| v == 255).count(), 18 * 14);
    let half = SyntheticConfig {
        sprite: None,
        ..c.clone()
    };
    assert!(open(&half, &labels()).is_err());
}
