//! Scenario scheduling for live streams: which of the plan's scenarios a frame is evaluated under.
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
//!
//! `per_frame` can also be derived from a **compute budget** ([`Budget`]): at most `budget`
//! inferences per second at the stream's frame rate gives ⌊budget / fps⌋ inferences per frame, one
//! of which is `clean`. The rate is the source's nominal one (the synthetic camera's fps, a video's
//! frame rate, a camera's negotiated rate) or `[pipeline] fps`; it is fixed before the run, so the
//! schedule — and the run — repeat exactly (a budget that followed the measured speed would not).
//!
//! The settings are checked once, when the config loads ([`ScheduleSettings::new`]); the one thing
//! left open then is the source's rate for a budget without `[pipeline] fps`, fixed when the source
//! opens ([`ScheduleSettings::at_rate`]). The [`Schedule`] is built from the resulting [`Spread`]
//! and the plan, which cannot fail.

use rand::RngExt;
use serde::Deserialize;

use super::RngKey;

/// How scenarios are spread over frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ScheduleMode {
    /// Every scenario on every frame.
    #[default]
    All,
    /// `per_frame` consecutive scenarios per frame, in plan order, wrapping.
    RoundRobin,
    /// `per_frame` scenarios per frame drawn by the keyed RNG.
    Random,
}

/// A `[pipeline]` scheduling setting that cannot be used (`schedule`, `per_frame`, `budget`, `fps`).
/// Display = the one line users see, naming the setting to change.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// `budget` is not a positive number.
    #[error("`[pipeline] budget` must be a positive number of inferences per second, not {budget}")]
    BudgetNotPositive {
        /// The budget as set, inferences per second.
        budget: f64,
    },
    /// The rate a budget is shared over is not positive (`[pipeline] fps`, or the source's).
    #[error("the budget's frame rate must be positive, not {fps}; set `[pipeline] fps`")]
    RateNotPositive {
        /// The rate, frames per second.
        fps: f64,
    },
    /// The budget at the rate leaves no inference for a scenario besides `clean`.
    #[error(
        "`[pipeline] budget = {budget}` inferences/s at {fps} frames/s leaves none for a scenario \
         besides clean (each frame needs 1 + per scenario); raise the budget to at least {} or \
         lower `[pipeline] fps`",
        2.0 * fps
    )]
    BudgetTooSmall {
        /// The budget, inferences per second.
        budget: f64,
        /// The rate, frames per second.
        fps: f64,
    },
    /// `budget` and `per_frame` both set.
    #[error("`[pipeline] budget` and `per_frame` both set the scenarios per frame; keep one")]
    BudgetAndPerFrame,
    /// A budget without `[pipeline] fps` on a source without a nominal rate.
    #[error(
        "`[pipeline] budget` needs the stream's frame rate and this source has none; set \
         `[pipeline] fps`"
    )]
    NoRate,
    /// `per_frame` under the `all` schedule, where it would be ignored.
    #[error(
        "`[pipeline] per_frame` = {per_frame} applies to the \"round-robin\" and \"random\" \
         schedules, but `schedule` is \"all\" (every scenario on every frame), so it would be \
         ignored; set `schedule = \"round-robin\"` (or \"random\"), or remove `per_frame`"
    )]
    PerFrameUnderAll {
        /// `per_frame` as set.
        per_frame: usize,
    },
    /// A `round-robin` or `random` schedule without `per_frame`.
    #[error(
        "`[pipeline] schedule` other than \"all\" needs `per_frame` (scenarios besides clean per \
         frame)"
    )]
    PerFrameMissing,
    /// `per_frame = 0`.
    #[error("`[pipeline] per_frame` must be at least 1")]
    PerFrameZero,
}

/// A compute budget resolved into scenarios per frame (`[pipeline] budget`, `fps`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Budget {
    /// Most inferences per second the evaluation may use.
    pub(crate) inferences_per_s: f64,
    /// The frame rate the budget is shared over, frames per second.
    pub(crate) fps: f64,
    /// Scenarios besides `clean` per frame: ⌊budget / fps⌋ − 1.
    pub(crate) per_frame: usize,
}

impl Budget {
    /// The budget of `inferences_per_s` at `fps` frames per second. Errors (naming the settings)
    /// when either is not a positive number or the budget leaves no scenario besides `clean`.
    fn new(inferences_per_s: f64, fps: f64) -> Result<Self, ScheduleError> {
        if !(inferences_per_s.is_finite() && inferences_per_s > 0.0) {
            return Err(ScheduleError::BudgetNotPositive {
                budget: inferences_per_s,
            });
        }
        if !(fps.is_finite() && fps > 0.0) {
            return Err(ScheduleError::RateNotPositive { fps });
        }
        let per_frame = (inferences_per_s / fps).floor() as usize;
        if per_frame < 2 {
            return Err(ScheduleError::BudgetTooSmall {
                budget: inferences_per_s,
                fps,
            });
        }
        Ok(Self {
            inferences_per_s,
            fps,
            per_frame: per_frame - 1,
        })
    }

    /// One line, e.g. `budget 60 inferences/s at 15 frames/s = clean + 3 per frame`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "budget {} inferences/s at {} frames/s = clean + {} per frame",
            self.inferences_per_s, self.fps, self.per_frame
        )
    }
}

/// The `[pipeline]` scheduling settings (`schedule`, `per_frame`, `budget`, `fps`), checked when the
/// config loads. Only a budget without `fps` is still open: it is shared over the source's nominal
/// rate, known once the source is open ([`ScheduleSettings::at_rate`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ScheduleSettings {
    /// No budget: the spread as set.
    Fixed(Spread),
    /// A budget at the rate of `[pipeline] fps`, resolved; `mode` is the `schedule` setting.
    Budget {
        /// The budget at the given rate.
        budget: Budget,
        /// `[pipeline] schedule`.
        mode: ScheduleMode,
    },
    /// A budget shared over the source's nominal rate (no `[pipeline] fps`).
    BudgetAtSourceRate {
        /// `[pipeline] budget`, inferences per second (checked with the rate).
        inferences_per_s: f64,
        /// `[pipeline] schedule`.
        mode: ScheduleMode,
    },
}

impl Default for ScheduleSettings {
    fn default() -> Self {
        Self::Fixed(Spread::default())
    }
}

impl ScheduleSettings {
    /// Checks the settings: `budget` and `per_frame` exclude each other, a budget with `fps` must
    /// leave a scenario besides `clean` ([`Budget::new`]), and without a budget `per_frame` must
    /// fit `mode` ([`Spread::new`]). Errors name the setting to change.
    pub(crate) fn new(
        mode: ScheduleMode,
        per_frame: Option<usize>,
        budget: Option<f64>,
        fps: Option<f64>,
    ) -> Result<Self, ScheduleError> {
        let Some(inferences_per_s) = budget else {
            return Ok(Self::Fixed(Spread::new(mode, per_frame)?));
        };
        if per_frame.is_some() {
            return Err(ScheduleError::BudgetAndPerFrame);
        }
        Ok(match fps {
            Some(fps) => Self::Budget {
                budget: Budget::new(inferences_per_s, fps)?,
                mode,
            },
            None => Self::BudgetAtSourceRate {
                inferences_per_s,
                mode,
            },
        })
    }

    /// The spread of a run whose source runs at `source_fps` (its nominal rate, if any), and the
    /// budget it comes from: a budget gives `per_frame` at its rate and turns an `all` schedule into
    /// `round-robin`. Errors when a budget needs the source's rate and there is none, or the budget
    /// leaves no scenario besides `clean` at that rate.
    pub(crate) fn at_rate(
        self,
        source_fps: Option<f64>,
    ) -> Result<(Spread, Option<Budget>), ScheduleError> {
        let (budget, mode) = match self {
            Self::Fixed(spread) => return Ok((spread, None)),
            Self::Budget { budget, mode } => (budget, mode),
            Self::BudgetAtSourceRate {
                inferences_per_s,
                mode,
            } => {
                let Some(rate) = source_fps else {
                    return Err(ScheduleError::NoRate);
                };
                (Budget::new(inferences_per_s, rate)?, mode)
            }
        };
        let mode = match mode {
            ScheduleMode::All => ScheduleMode::RoundRobin,
            m => m,
        };
        let spread = Spread {
            mode,
            per_frame: Some(budget.per_frame),
        };
        Ok((spread, Some(budget)))
    }
}

/// How a plan's scenarios are spread over frames, checked: `all`, or `per_frame` (at least 1) of the
/// scenarios besides `clean` by `round-robin` or `random`. Default: `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spread {
    mode: ScheduleMode,
    /// `None` exactly when `mode` is [`ScheduleMode::All`].
    per_frame: Option<usize>,
}

impl Spread {
    /// The spread of `mode` with `per_frame` non-clean scenarios per frame (none for
    /// [`ScheduleMode::All`]; at least 1 otherwise). Errors name the setting to change.
    fn new(mode: ScheduleMode, per_frame: Option<usize>) -> Result<Self, ScheduleError> {
        match (mode, per_frame) {
            (ScheduleMode::All, None) => Ok(Self::default()),
            (ScheduleMode::All, Some(k)) => Err(ScheduleError::PerFrameUnderAll { per_frame: k }),
            (_, None) => Err(ScheduleError::PerFrameMissing),
            (_, Some(0)) => Err(ScheduleError::PerFrameZero),
            (mode, Some(k)) => Ok(Self {
                mode,
                per_frame: Some(k),
            }),
        }
    }

    /// The schedule mode.
    #[cfg(test)]
    fn mode(&self) -> ScheduleMode {
        self.mode
    }

    /// Scenarios besides `clean` per frame; `None` for `all`.
    #[cfg(test)]
    fn per_frame(&self) -> Option<usize> {
        self.per_frame
    }

    /// The schedule of this spread for a plan of `scenarios` scenarios whose first is `clean`
    /// (`per_frame` capped at the plan's other scenarios), random draws keyed by `seed`.
    pub fn schedule(self, scenarios: usize, seed: u64) -> Schedule {
        let others = scenarios.saturating_sub(1);
        Schedule {
            mode: self.mode,
            per_frame: self.per_frame.map_or(others, |k| k.min(others)),
            scenarios,
            seed,
        }
    }
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
    /// The schedule of `mode` with `per_frame` non-clean scenarios per frame (none for
    /// [`ScheduleMode::All`]; at least 1 and at most the plan's other scenarios otherwise), for a
    /// plan of `scenarios` scenarios whose first is `clean`: [`Spread::new`], then
    /// [`Spread::schedule`]. Errors name the setting to change.
    #[cfg(test)]
    fn new(
        mode: ScheduleMode,
        per_frame: Option<usize>,
        scenarios: usize,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        Ok(Spread::new(mode, per_frame)?.schedule(scenarios, seed))
    }

    /// The variants of a frame: every scenario, or `per_frame` and clean.
    pub(crate) fn variants_per_frame(&self) -> usize {
        match self.is_all() {
            true => self.scenarios,
            false => self.per_frame + 1,
        }
    }

    /// Whether every frame gets every scenario.
    fn is_all(&self) -> bool {
        self.per_frame >= self.scenarios.saturating_sub(1)
    }

    /// The plan indices frame `seq` (source order) with id `frame_id` is evaluated under, ascending,
    /// `0` (clean) first.
    pub(crate) fn indices(&self, seq: u64, frame_id: &str) -> Vec<usize> {
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
    pub(crate) fn describe(&self) -> String {
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

    impl Budget {
        /// Load-time check and open-time resolution in one call, as the tests below use it: the
        /// mode, `per_frame` and budget a run with these settings gets at `source_fps`.
        fn resolve(
            budget: Option<f64>,
            fps: Option<f64>,
            source_fps: Option<f64>,
            mode: ScheduleMode,
            per_frame: Option<usize>,
        ) -> Result<(ScheduleMode, Option<usize>, Option<Budget>), ScheduleError> {
            let settings = ScheduleSettings::new(mode, per_frame, budget, fps)?;
            let (spread, budget) = settings.at_rate(source_fps)?;
            Ok((spread.mode(), spread.per_frame(), budget))
        }
    }

    #[test]
    fn budget_gives_per_frame_at_the_stream_rate() {
        let b = Budget::new(60.0, 15.0).unwrap();
        assert_eq!(b.per_frame, 3);
        assert_eq!(
            b.describe(),
            "budget 60 inferences/s at 15 frames/s = clean + 3 per frame"
        );
        assert_eq!(Budget::new(59.9, 15.0).unwrap().per_frame, 2);
        assert_eq!(Budget::new(30.0, 15.0).unwrap().per_frame, 1);
        let e = Budget::new(29.0, 15.0).unwrap_err().to_string();
        assert!(e.contains("at least 30"), "{e}");
        for (b, f) in [(0.0, 15.0), (f64::NAN, 15.0), (60.0, 0.0), (60.0, -1.0)] {
            assert!(Budget::new(b, f).is_err(), "{b} {f}");
        }
        // The setting's rate wins over the source's; `all` becomes round-robin; random stays.
        let r = Budget::resolve(Some(100.0), Some(10.0), Some(25.0), ScheduleMode::All, None);
        assert_eq!(r.unwrap().0, ScheduleMode::RoundRobin);
        let r = Budget::resolve(Some(100.0), None, Some(25.0), ScheduleMode::Random, None);
        let (mode, per_frame, budget) = r.unwrap();
        assert_eq!((mode, per_frame), (ScheduleMode::Random, Some(3)));
        assert_eq!(budget.unwrap().fps, 25.0);
        assert!(
            Budget::resolve(Some(100.0), None, None, ScheduleMode::All, None)
                .unwrap_err()
                .to_string()
                .contains("set `[pipeline] fps`")
        );
        assert!(
            Budget::resolve(Some(100.0), Some(5.0), None, ScheduleMode::All, Some(2))
                .unwrap_err()
                .to_string()
                .contains("keep one")
        );
        assert_eq!(
            Budget::resolve(None, None, None, ScheduleMode::Random, Some(2)).unwrap(),
            (ScheduleMode::Random, Some(2), None)
        );
    }

    #[test]
    fn all_is_every_scenario() {
        let s = Schedule::new(ScheduleMode::All, None, 5, 0).unwrap();
        assert!(s.is_all());
        assert_eq!(s.indices(7, "f"), vec![0, 1, 2, 3, 4]);
        assert_eq!(s.variants_per_frame(), 5);
        let rr = Schedule::new(ScheduleMode::RoundRobin, Some(2), 5, 0).unwrap();
        assert_eq!(rr.variants_per_frame(), rr.indices(3, "f").len());
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
        assert_eq!(e, ScheduleError::PerFrameMissing);
        let e = e.to_string();
        assert!(e.contains("per_frame"), "{e}");
        // `per_frame` would be ignored under `all`.
        let e = Schedule::new(ScheduleMode::All, Some(2), 5, 0).unwrap_err();
        assert!(matches!(
            e,
            ScheduleError::PerFrameUnderAll { per_frame: 2 }
        ));
        let e = e.to_string();
        assert!(e.contains("per_frame") && e.contains("round-robin"), "{e}");
        let e = Schedule::new(ScheduleMode::Random, Some(0), 5, 0).unwrap_err();
        assert_eq!(e, ScheduleError::PerFrameZero);
        let e = e.to_string();
        assert!(e.contains("at least 1"), "{e}");
    }

    #[test]
    fn schedule_errors_are_kinds_with_the_lines_users_saw() {
        // The kind a caller matches on, and the exact line of each (the texts before the kinds).
        let too_small = Budget::new(29.0, 15.0).unwrap_err();
        assert_eq!(
            too_small,
            ScheduleError::BudgetTooSmall {
                budget: 29.0,
                fps: 15.0
            }
        );
        assert_eq!(
            too_small.to_string(),
            "`[pipeline] budget = 29` inferences/s at 15 frames/s leaves none for a scenario \
             besides clean (each frame needs 1 + per scenario); raise the budget to at least 30 \
             or lower `[pipeline] fps`"
        );
        let cases = [
            (
                Budget::new(-1.5, 15.0).unwrap_err(),
                "`[pipeline] budget` must be a positive number of inferences per second, not -1.5",
            ),
            (
                Budget::new(60.0, 0.0).unwrap_err(),
                "the budget's frame rate must be positive, not 0; set `[pipeline] fps`",
            ),
            (
                ScheduleSettings::new(ScheduleMode::All, None, Some(60.0), None)
                    .unwrap()
                    .at_rate(None)
                    .unwrap_err(),
                "`[pipeline] budget` needs the stream's frame rate and this source has none; set \
                 `[pipeline] fps`",
            ),
            (
                Spread::new(ScheduleMode::All, Some(3)).unwrap_err(),
                "`[pipeline] per_frame` = 3 applies to the \"round-robin\" and \"random\" \
                 schedules, but `schedule` is \"all\" (every scenario on every frame), so it \
                 would be ignored; set `schedule = \"round-robin\"` (or \"random\"), or remove \
                 `per_frame`",
            ),
            (
                Spread::new(ScheduleMode::Random, None).unwrap_err(),
                "`[pipeline] schedule` other than \"all\" needs `per_frame` (scenarios besides \
                 clean per frame)",
            ),
        ];
        for (e, line) in cases {
            assert_eq!(e.to_string(), line);
        }
        assert!(matches!(
            Budget::new(60.0, f64::NAN),
            Err(ScheduleError::RateNotPositive { .. })
        ));
        assert_eq!(
            ScheduleSettings::new(ScheduleMode::All, Some(1), Some(60.0), None),
            Err(ScheduleError::BudgetAndPerFrame)
        );
    }
}
