use super::*;

crate::kernels::levels_agree! {
    fn fog_blend_levels_agree(|level| {
        let blend = FogBlend {
            min: 0.1,
            range: 0.7,
            strength: 1.5,
            scale: 0.6,
            unit: std::array::from_fn(|v| v as f64 / 255.0),
        };
        let p: Vec<f64> = (0..200).map(|i| 0.1 + (i % 37) as f64 / 53.0).collect();
        let mut rows: Vec<u8> = (0..600).map(|i| (i * 37 % 256) as u8).collect();
        blend.rows_at(level, &mut rows, &p).map(|()| rows)
    });
}

#[test]
fn tables_match_reference() {
    assert_eq!(FOG_PARAMS[0], fog_row(1.5, 2.0));
    assert_eq!(FOG_PARAMS[2], fog_row(2.5, 1.7));
    assert_eq!(FOG_PARAMS[4], fog_row(3.0, 1.4));
    assert_eq!(FROST_PARAMS.map(|p| p.image), [1.0, 0.8, 0.7, 0.65, 0.6]);
    assert_eq!(FROST_PARAMS.map(|p| p.frost), [0.4, 0.6, 0.7, 0.7, 0.75]);
    assert!(!FROST_FILES.contains(&"frost6.jpg"));
}

#[test]
fn map_size_is_next_power_of_two() {
    assert_eq!(fog_map_size(1, 1), 4);
    assert_eq!(fog_map_size(224, 224), 256);
    assert_eq!(fog_map_size(256, 100), 256);
    assert_eq!(fog_map_size(257, 100), 512);
    assert_eq!(fog_map_size(1280, 720), 2048);
}

#[test]
fn plasma_is_normalised_and_deterministic() {
    for n in [1usize, 2, 4, 64, 256] {
        let p = plasma_fractal(n, 1.7, RngKey(3));
        assert_eq!(p.len(), n * n);
        assert!(p.iter().all(|v| (0.0..=1.0).contains(v)));
        if n >= 4 {
            assert_eq!(p.iter().copied().fold(f64::INFINITY, f64::min), 0.0);
            assert_eq!(p.iter().copied().fold(f64::NEG_INFINITY, f64::max), 1.0);
        }
        assert_eq!(p, plasma_fractal(n, 1.7, RngKey(3)));
    }
    assert_ne!(
        plasma_fractal(64, 2.0, RngKey(1)),
        plasma_fractal(64, 2.0, RngKey(2))
    );
}

#[test]
fn plasma_noise_amplitude_is_wibble_squared() {
    // n = 2: one level. Corner (0,0) = 0; the centre = (0 + 0 + 0 + 0)/4 + 100·(100·(2u − 1)) with
    // u the first draw of stream 0: amplitude ~10⁴ (wibble²), not ~10².
    for k in 0..20 {
        let u: f64 = RngKey(k).stream(0).random();
        let raw = plasma_window(2, 2.0, RngKey(k), (2, 2));
        assert_eq!(raw.values[0], 0.0);
        assert_eq!(raw.values[3], 100.0 * (100.0 * (2.0 * u - 1.0)), "key {k}");
        let p = plasma_fractal(2, 2.0, RngKey(k));
        assert_eq!(p[3] > p[0], u > 0.5, "key {k}");
    }
    // Decay: with a large decay the last steps add almost nothing, so neighbours are close
    // (smooth); with decay 1 the finest step still adds full wibble² noise (rough).
    let rough = plasma_fractal(256, 1.0, RngKey(5));
    let smooth = plasma_fractal(256, 3.0, RngKey(5));
    let tv = |p: &[f64]| p.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>();
    assert!(tv(&rough) > 10.0 * tv(&smooth));
}

/// The diamond–square algorithm written directly on the full sparse map, numpy's way (strided
/// views, `roll`), with the documented per-(level, phase, grid row) streams.
fn plasma_direct(n: usize, decay: f64, rng: RngKey) -> Vec<f64> {
    let mut map = vec![0.0f64; n * n];
    let (mut step, mut wibble, mut level) = (n, 100.0f64, 0u64);
    while step >= 2 {
        let (half, g) = (step / 2, n / step);
        let at = |m: &[f64], y: usize, x: usize| m[(y % n) * n + x % n];
        let draw =
            |phase: u64, i: usize| RngKey::stream(rng, ((3 * level + phase) << 32) + i as u64);
        let noise =
            |r: &mut crate::rng::ScenarioRng| wibble * (wibble * (2.0 * r.random::<f64>() - 1.0));
        for i in 0..g {
            let mut r = draw(0, i);
            for j in 0..g {
                let (y, x) = (i * step, j * step);
                let sum = (at(&map, y, x) + at(&map, y + step, x))
                    + (at(&map, y, x + step) + at(&map, y + step, x + step));
                map[(y + half) * n + x + half] = sum / 4.0 + noise(&mut r);
            }
        }
        let snapshot = map.clone();
        for i in 0..g {
            let mut r = draw(1, i);
            for j in 0..g {
                let (y, x) = (i * step, j * step);
                let c = |yy: usize, xx: usize| at(&snapshot, yy + half, xx + half);
                let sum = (c(y, x) + c(y + n - step, x))
                    + (at(&snapshot, y, x) + at(&snapshot, y, x + step));
                map[y * n + x + half] = sum / 4.0 + noise(&mut r);
            }
        }
        for i in 0..g {
            let mut r = draw(2, i);
            for j in 0..g {
                let (y, x) = (i * step, j * step);
                let c = |yy: usize, xx: usize| at(&snapshot, yy + half, xx + half);
                let sum = (c(y, x) + c(y, x + n - step))
                    + (at(&snapshot, y, x) + at(&snapshot, y + step, x));
                map[(y + half) * n + x] = sum / 4.0 + noise(&mut r);
            }
        }
        step /= 2;
        wibble /= decay;
        level += 1;
    }
    map
}

#[test]
fn compact_plasma_equals_the_direct_sparse_map() {
    for n in [1usize, 2, 4, 8, 64, 512] {
        let direct = plasma_direct(n, 1.7, RngKey(11));
        let min = direct.iter().copied().fold(f64::INFINITY, f64::min);
        let max = direct.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        for (w, h) in [(n, n), (n.div_ceil(3), n), (n, n / 2), (1, 1)] {
            let win = plasma_window(n, 1.7, RngKey(11), (w, h));
            assert_eq!((win.min, win.range), (min, max - min), "n {n}");
            let want: Vec<f64> = (0..h)
                .flat_map(|y| direct[y * n..y * n + w].to_vec())
                .collect();
            assert_eq!(win.values, want, "n {n}, window {w}×{h}");
        }
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(
            one.install(|| plasma_fractal(n, 1.7, RngKey(11))),
            plasma_fractal(n, 1.7, RngKey(11))
        );
    }
}

#[test]
fn fog_sizes_and_determinism() {
    for (w, h) in [(1, 1), (32, 32), (37, 23), (1280, 720)] {
        let img = RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 3) as u8, (y * 5) as u8, 90]));
        let a = fog(&img, 2.5, 1.7, RngKey(9));
        assert_eq!(a.dimensions(), (w, h));
        assert_eq!(a, fog(&img, 2.5, 1.7, RngKey(9)));
    }
    let img = RgbImage::from_pixel(64, 64, image::Rgb([100, 120, 140]));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let a = one.install(|| fog(&img, 2.0, 2.0, RngKey(4)));
    assert_eq!(a, fog(&img, 2.0, 2.0, RngKey(4)));
    assert_ne!(a, fog(&img, 2.0, 2.0, RngKey(5)));
    // Black stays black (m = 0).
    let black = RgbImage::new(8, 8);
    assert_eq!(fog(&black, 3.0, 1.4, RngKey(1)), black);
}

#[test]
fn frost_rescale_follows_imagecorruptions() {
    // Texture covers the frame: ×1.1 — 900·1.1 = 990.0000000000001 in f64, so ceil gives 991, as
    // numpy does (checked with imagecorruptions 1.1.2's formula).
    assert_eq!(frost_rescaled_size(900, 600, 224, 224), (991, 660));
    // Height short: H/th·1.1.
    assert_eq!(frost_rescaled_size(560, 315, 400, 630), (1232, 693));
    // Both short: the larger ratio.
    assert_eq!(frost_rescaled_size(560, 315, 1280, 720), (1408, 792));
    for (w, h) in [(1, 1), (1280, 720), (4000, 10)] {
        for (tw, th) in [(900, 600), (560, 315), (527, 350)] {
            let (rw, rh) = frost_rescaled_size(tw, th, w, h);
            assert!(rw > w && rh > h);
        }
    }
}

#[test]
fn frost_choice_range_sizes_and_determinism() {
    // Five distinguishable flat textures: the chosen index shows in the output.
    let tex: Vec<RgbImage> = (0..5)
        .map(|i| RgbImage::from_pixel(30, 20, image::Rgb([i * 50, 0, 0])))
        .collect();
    let img = RgbImage::new(16, 16);
    let mut seen = [0usize; 5];
    for k in 0..500 {
        let out = frost_with(&tex, &img, 1.0, 1.0, RngKey(k));
        seen[usize::from(out.get_pixel(0, 0)[0] / 50)] += 1;
    }
    assert!(seen.iter().all(|&n| n > 60), "{seen:?}");
    for (w, h) in [(1, 1), (32, 32), (37, 23), (1280, 720)] {
        let img = RgbImage::from_fn(w, h, |x, y| image::Rgb([(x * 3) as u8, (y * 5) as u8, 90]));
        let a = frost_with(&tex, &img, 0.7, 0.7, RngKey(2));
        assert_eq!(a.dimensions(), (w, h));
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(
            a,
            one.install(|| frost_with(&tex, &img, 0.7, 0.7, RngKey(2)))
        );
    }
}

#[test]
fn missing_textures_say_how_to_install_them() {
    let e = first_frost_textures(&[PathBuf::from("/nonexistent/frost")]).unwrap_err();
    let FrostError::NotInstalled { tried } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(tried.len(), 1);
    assert!(tried[0].1.is_none(), "no such folder: {e:?}");
    let e = e.to_string();
    assert!(
        e.contains("bash scripts/setup.sh") && e.contains("/nonexistent/frost"),
        "{e}"
    );
    let empty = std::env::temp_dir();
    let e = first_frost_textures(&[empty]).unwrap_err().to_string();
    assert!(e.contains("frost1.png"), "{e}");
}

#[test]
fn frost_errors_are_kinds_with_the_lines_users_saw() {
    let dir = tempfile::tempdir().unwrap();
    for f in FROST_FILES {
        std::fs::write(dir.path().join(f), b"not a png").unwrap();
    }
    let e = load_frost_textures(dir.path()).unwrap_err();
    let FrostError::Undecodable { path, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(path, &dir.path().join("frost1.png"));
    let undecodable = e.to_string();
    assert!(
        undecodable.starts_with(&format!("frost texture {}: ", path.display())),
        "{undecodable}"
    );
    let e = first_frost_textures(&[PathBuf::from("/nonexistent/frost"), dir.path().into()])
        .unwrap_err();
    assert!(matches!(&e, FrostError::NotInstalled { tried } if tried.len() == 2));
    assert_eq!(
        e.to_string(),
        format!(
            "frost needs the ImageNet-C frost textures (frost1.png, frost2.png, frost3.png, \
             frost4.jpg, frost5.jpg); run `bash scripts/setup.sh` to install them into \
             assets/frost, or set ROBUSTREAM_FROST_DIR; tried: /nonexistent/frost (no such \
             folder); {undecodable}"
        )
    );
    // The cached error is a clone: the same line for every caller.
    assert_eq!(e.clone().to_string(), e.to_string());
}

#[test]
fn frost_scenario_is_fallible_not_panicking() {
    use crate::scenario::{Scenario, ScenarioError, ScenarioInput};
    let c = super::super::Corruption::new("frost", 3).expect("listed");
    let img = RgbImage::from_pixel(37, 23, image::Rgb([10, 20, 30]));
    let input = ScenarioInput::new(&img);
    match (c.apply(&input, RngKey(1)), frost_textures()) {
        (Ok(out), Ok(_)) => assert_eq!(out.dimensions(), (37, 23)),
        (Err(ScenarioError::Unsuitable { reason, .. }), Err(_)) => {
            assert!(reason.contains("scripts/setup.sh"))
        }
        (got, tex) => panic!("{got:?} with textures {:?}", tex.map(|t| t.len())),
    }
}

#[test]
fn frost_textures_load_when_installed() {
    // Skipped where scripts/setup.sh has not run (the error must then name it).
    match frost_textures() {
        Ok(t) => {
            assert_eq!(t.len(), 5);
            assert_eq!(t[0].dimensions(), (900, 600));
            assert_eq!(t[1], t[2], "frost2 and frost3 decode to the same picture");
            assert_eq!(t[3].dimensions(), (527, 350));
        }
        Err(e) => assert!(e.to_string().contains("scripts/setup.sh"), "{e}"),
    }
}
