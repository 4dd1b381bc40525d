//! The digital corruptions' GPU kernels against `scenario::corruption::digital`.

use super::{assert_close, flat, host_corrupt, test_image};
use crate::rng::RngKey;
use crate::scenario::corruption::Corruption;

#[test]
fn contrast_matches_the_cpu_at_every_severity() {
    for img in [test_image(224, 224), test_image(61, 17), flat(8, 8, 200)] {
        for s in 1..=5 {
            let key = RngKey(0);
            let gpu = host_corrupt("contrast", s, &img, key);
            let cpu = Corruption::new("contrast", s).unwrap().corrupt(&img, key);
            assert_close(&format!("contrast/{s}"), &gpu, &cpu);
            assert_eq!(
                gpu, cpu,
                "contrast/{s}: the same f64 tables give the same bytes"
            );
        }
    }
}
