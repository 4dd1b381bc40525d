//! The noise corruptions' GPU kernels against `scenario::corruption::noise`.

use super::{assert_same_distribution, host_corrupt, test_image};
use crate::rng::RngKey;
use crate::scenario::corruption::Corruption;

#[test]
fn gaussian_noise_matches_the_cpu_in_distribution_at_every_severity() {
    let img = test_image(256, 192);
    for s in 1..=5 {
        let key = RngKey::new(3, "frame", &format!("corruption/gaussian_noise/{s}"));
        let gpu = host_corrupt("gaussian_noise", s, &img, key);
        let cpu = Corruption::new("gaussian_noise", s)
            .unwrap()
            .corrupt(&img, key);
        assert_same_distribution(&format!("gaussian_noise/{s}"), &img, &gpu, &cpu);
    }
}

#[test]
fn gaussian_noise_repeats_and_follows_its_key() {
    let img = test_image(97, 31); // an element count that is not a multiple of 4
    let key = RngKey::new(0, "f", "corruption/gaussian_noise/3");
    let a = host_corrupt("gaussian_noise", 3, &img, key);
    assert_eq!(a, host_corrupt("gaussian_noise", 3, &img, key));
    assert_ne!(
        a,
        host_corrupt("gaussian_noise", 3, &img, RngKey(key.0 ^ 1))
    );
}
