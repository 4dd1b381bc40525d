//! Scenario scheduling for live streams (issue 5): which of the plan's scenarios a frame is
//! evaluated under.
//!
//! Running every scenario on every frame of a 30 fps camera is out of reach on small devices (95
//! ImageNet-C variants per frame), so a stream can evaluate `clean` on every frame and only
//! `per_frame` of the other scenarios:
//!
//! - **all** (default): every scenario on every frame (what offline evaluation does);
//! - **round-robin**: frame `n` (source order) gets the `per_frame` scenarios starting at
//!   `n · per_frame` in the plan's order (wrapping), so every scenario comes round once every
//!   ⌈(m − 1) / per_frame⌉ frames for a plan of m scenarios;
//! - **random**: a seeded sample of `per_frame` scenarios without replacement, keyed by
//!   (seed, frame id) like all randomness here, so a run repeats exactly and each scenario is
//!   evaluated on an unbiased `per_frame / (m − 1)` share of the frames.
//!
//! `clean` (the plan's first scenario) is always evaluated: it is the reference of every drop.

use rand::RngExt;
use serde::Deserialize;

use super::RngKey;

/// How scenarios are spread over frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ScheduleMode {
    /// Every scenario on every frame.
    #[default]
    All,
    /// `per_frame` consecutive scenarios per frame, in plan order, wrapping.
    RoundRobin,
    /// `per_frame` scenarios per frame drawn by the keyed RNG.
    Random,
}

/// A schedule for a plan of `scenarios` scenarios (clean first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    mode: ScheduleMode,
    per_frame: usize,
    scenarios: usize,
    seed: u64,
}

impl Schedule {
    /// The schedule of `mode` with `per_frame` non-clean scenarios per frame (ignored for
    /// [`ScheduleMode::All`]; at least 1 and at most the plan's other scenarios otherwise), for a
    /// plan of `scenarios` scenarios whose first is `clean`. Errors name the setting to change.
    pub fn new(
        mode: ScheduleMode,
        per_frame: Option<usize>,
        scenarios: usize,
        seed: u64,
    ) -> Result<Self, String> {
        let others = scenarios.saturating_sub(1);
        let per_frame = match (mode, per_frame) {
            (ScheduleMode::All, _) => others,
            (_, None) => {
                return Err(
                    "`[pipeline] schedule` other than \"all\" needs `per_frame` (scenarios besides \
                     clean per frame)"
                        .into(),
                );
            }
            (_, Some(0)) => {
                return Err("`[pipeline] per_frame` must be at least 1".into());
            }
            (_, Some(k)) => k.min(others),
        };
        Ok(Self {
            mode,
            per_frame,
            scenarios,
            seed,
        })
    }

    /// Whether every frame gets every scenario.
    pub fn is_all(&self) -> bool {
        self.per_frame >= self.scenarios.saturating_sub(1)
    }

    /// The plan indices frame `seq` (source order) with id `frame_id` is evaluated under, ascending,
    /// `0` (clean) first.
    pub fn indices(&self, seq: u64, frame_id: &str) -> Vec<usize> {
        let m = self.scenarios;
        if m == 0 {
            return Vec::new();
        }
        if self.is_all() {
            return (0..m).collect();
        }
        let others = m - 1;
        let k = self.per_frame;
        let mut picked: Vec<usize> = match self.mode {
            ScheduleMode::All => unreachable!("is_all covers every `all` schedule"),
            ScheduleMode::RoundRobin => {
                let start = (seq % others as u64) as usize * k % others;
                (0..k).map(|j| 1 + (start + j) % others).collect()
            }
            ScheduleMode::Random => {
                // Partial Fisher–Yates over the other scenarios.
                let mut rng = RngKey::new(self.seed, frame_id, "schedule").rng();
                let mut pool: Vec<usize> = (1..m).collect();
                for j in 0..k {
                    let r = rng.random_range(j..others);
                    pool.swap(j, r);
                }
                pool.truncate(k);
                pool
            }
        };
        picked.sort_unstable();
        let mut out = Vec::with_capacity(k + 1);
        out.push(0);
        out.extend(picked);
        out
    }

    /// One line for the run description, e.g. `round-robin, 8 of 95 scenarios per frame + clean`.
    pub fn describe(&self) -> String {
        let others = self.scenarios.saturating_sub(1);
        match (self.mode, self.is_all()) {
            (_, true) => "all scenarios on every frame".into(),
            (ScheduleMode::RoundRobin, false) => format!(
                "round-robin, {} of {others} scenarios per frame + clean",
                self.per_frame
            ),
            (_, false) => format!(
                "random (seeded), {} of {others} scenarios per frame + clean",
                self.per_frame
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_every_scenario() {
        let s = Schedule::new(ScheduleMode::All, None, 5, 0).unwrap();
        assert!(s.is_all());
        assert_eq!(s.indices(7, "f"), vec![0, 1, 2, 3, 4]);
        // per_frame covering the plan is `all` too.
        let s = Schedule::new(ScheduleMode::Random, Some(9), 5, 0).unwrap();
        assert_eq!(s.indices(3, "x"), vec![0, 1, 2, 3, 4]);
        assert!(
            Schedule::new(ScheduleMode::All, None, 0, 0)
                .unwrap()
                .indices(0, "f")
                .is_empty()
        );
    }

    #[test]
    fn round_robin_covers_every_scenario_evenly() {
        // 7 others, 3 per frame: over 7 frames every scenario is evaluated exactly 3 times.
        let s = Schedule::new(ScheduleMode::RoundRobin, Some(3), 8, 0).unwrap();
        assert_eq!(s.indices(0, "a"), vec![0, 1, 2, 3]);
        assert_eq!(s.indices(1, "b"), vec![0, 4, 5, 6]);
        assert_eq!(s.indices(2, "c"), vec![0, 1, 2, 7]); // 7, then wraps to 1, 2
        let mut count = [0usize; 8];
        for n in 0..7 {
            for i in s.indices(n, "id") {
                count[i] += 1;
            }
        }
        assert_eq!(count, [7, 3, 3, 3, 3, 3, 3, 3]);
        assert_eq!(
            s.describe(),
            "round-robin, 3 of 7 scenarios per frame + clean"
        );
    }

    #[test]
    fn random_is_keyed_distinct_and_unbiased() {
        let s = Schedule::new(ScheduleMode::Random, Some(4), 11, 42).unwrap();
        let a = s.indices(0, "cam/000001");
        assert_eq!(
            a,
            s.indices(99, "cam/000001"),
            "keyed by frame id, not position"
        );
        assert_eq!(a.len(), 5);
        assert_eq!(a[0], 0);
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        let other_seed = Schedule::new(ScheduleMode::Random, Some(4), 11, 43).unwrap();
        let differs = (0..50).any(|n| {
            let id = format!("f{n}");
            s.indices(0, &id) != other_seed.indices(0, &id)
        });
        assert!(differs);
        // Each of the 10 others is picked with probability 0.4: over 5000 frames ≈ 2000 ± 3σ (≈ 104).
        let mut count = [0usize; 11];
        for n in 0..5000 {
            for i in s.indices(0, &format!("f{n}")) {
                count[i] += 1;
            }
        }
        assert_eq!(count[0], 5000);
        for (i, c) in count.iter().enumerate().skip(1) {
            assert!((1896..=2104).contains(c), "scenario {i}: {c}");
        }
    }

    #[test]
    fn bad_settings_name_the_key() {
        let e = Schedule::new(ScheduleMode::RoundRobin, None, 5, 0).unwrap_err();
        assert!(e.contains("per_frame"), "{e}");
        let e = Schedule::new(ScheduleMode::Random, Some(0), 5, 0).unwrap_err();
        assert!(e.contains("at least 1"), "{e}");
    }
}
