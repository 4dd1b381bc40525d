//! Sliding-window metrics for long runs on a stream: the same per-scenario figures as the
//! cumulative tallies — top-1 accuracy, drop against clean, agreement with clean — over the last
//! `size` frames only, the drop volatility across the window's scenarios, and its trend over time.
//!
//! - **Drop volatility** of a window (XIMAGENET-12's accuracy-drop volatility,
//!   docs/ximagenet.md#sliding-window-volatility, applied to the window):
//!   σ² = Σᵢ (C(i) − μ)² / (n − 1) over the n non-clean scenarios with a value, μ = clean's
//!   accuracy in the window and C(i) scenario i's. Unlabelled streams use agreement instead (μ = 1,
//!   C(i) = agreement), so the measure exists without labels.
//! - **Trend**: every `size` frames the window's mean drop and volatility are appended to a series
//!   (at most [`MAX_SERIES`] points, the oldest dropped first); `temporal_volatility` is the sample
//!   variance (n − 1) of the mean drop over that series — how much the model's robustness moves
//!   while the stream runs (lighting, scene, camera changes).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::Record;
use crate::key::CLEAN;

/// Most points kept in the trend series.
const MAX_SERIES: usize = 1000;

/// One scenario's outcome on one frame.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    slot: usize,
    correct: Option<bool>,
    /// `(this correct, clean correct)` when both are labelled.
    paired: Option<(bool, bool)>,
    agree: Option<bool>,
}

/// Running sums of one scenario over the window.
#[derive(Debug, Clone, Copy, Default)]
struct Sums {
    n: u64,
    labelled: u64,
    correct: u64,
    paired: u64,
    paired_correct: u64,
    paired_clean_correct: u64,
    with_clean: u64,
    agree: u64,
}

impl Sums {
    fn apply(&mut self, o: &Outcome, sign: i64) {
        let add = |v: &mut u64, x: bool| {
            if x {
                *v = v.wrapping_add_signed(sign);
            }
        };
        add(&mut self.n, true);
        if let Some(c) = o.correct {
            add(&mut self.labelled, true);
            add(&mut self.correct, c);
        }
        if let Some((c, cc)) = o.paired {
            add(&mut self.paired, true);
            add(&mut self.paired_correct, c);
            add(&mut self.paired_clean_correct, cc);
        }
        if let Some(a) = o.agree {
            add(&mut self.with_clean, true);
            add(&mut self.agree, a);
        }
    }
}

/// One scenario over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WindowScenario {
    /// The scenario key.
    pub(crate) scenario: String,
    /// Records in the window.
    pub(crate) n: u64,
    /// Top-1 accuracy over the window's labelled records.
    pub(crate) top1: Option<f64>,
    /// Clean minus this scenario's top-1 accuracy on the window's frames labelled in both.
    pub(crate) drop: Option<f64>,
    /// Share of the window's records whose top-1 equals clean's.
    pub(crate) agreement: Option<f64>,
}

/// One point of the trend: the window ending at frame `frame` (1-based count of frames added).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct TrendPoint {
    /// Frames added when the point was taken.
    pub(crate) frame: u64,
    /// Mean drop over the window's non-clean scenarios (by accuracy when labelled, else
    /// 1 − agreement).
    pub(crate) mean_drop: Option<f64>,
    /// The window's drop volatility.
    pub(crate) drop_volatility: Option<f64>,
    /// Clean top-1 accuracy over the window's labelled frames (`null` unlabelled; absent in
    /// summaries written before it existed).
    #[serde(default)]
    pub(crate) clean_top1: Option<f64>,
}

/// The sliding window's report (`metrics.window` in summary.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WindowReport {
    /// Window length in frames.
    pub(crate) frames: usize,
    /// Frames currently in the window.
    pub(crate) filled: usize,
    /// Whether the drops below are accuracy drops (labelled frames) or disagreement (no labels).
    pub(crate) basis: String,
    /// Per scenario over the window, in report order.
    pub(crate) scenarios: Vec<WindowScenario>,
    /// Drop volatility across the window's scenarios.
    pub(crate) drop_volatility: Option<f64>,
    /// The trend: one point per `frames` frames.
    pub(crate) series: Vec<TrendPoint>,
    /// Sample variance of the series' mean drop (the temporal volatility of the drop).
    pub(crate) temporal_volatility: Option<f64>,
}

/// The sliding-window state.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    size: usize,
    ring: VecDeque<Vec<Outcome>>,
    sums: Vec<Sums>,
    clean_slot: Option<usize>,
    series: VecDeque<TrendPoint>,
    frames: u64,
}

impl Window {
    /// A window over the last `size` frames (at least 1).
    pub(crate) fn new(size: usize) -> Self {
        Self {
            size: size.max(1),
            ring: VecDeque::new(),
            sums: Vec::new(),
            clean_slot: None,
            series: VecDeque::new(),
            frames: 0,
        }
    }

    /// Adds one frame's records; `slot_of` gives each record's scenario index (the cumulative
    /// metrics' order).
    pub(crate) fn add_frame(&mut self, records: &[Record], slot_of: impl Fn(&str) -> usize) {
        let clean = records.iter().find(|r| r.scenario == CLEAN);
        let outcomes: Vec<Outcome> = records
            .iter()
            .map(|r| {
                let correct = r.top1_correct();
                let clean_correct = clean.and_then(Record::top1_correct);
                Outcome {
                    slot: slot_of(&r.scenario),
                    correct,
                    paired: correct.zip(clean_correct),
                    agree: clean.map(|c| c.model_top1() == r.model_top1()),
                }
            })
            .collect();
        for o in &outcomes {
            if o.slot >= self.sums.len() {
                self.sums.resize(o.slot + 1, Sums::default());
            }
            self.sums[o.slot].apply(o, 1);
        }
        if let Some(c) = clean {
            self.clean_slot = Some(slot_of(&c.scenario));
        }
        self.ring.push_back(outcomes);
        if self.ring.len() > self.size
            && let Some(old) = self.ring.pop_front()
        {
            for o in &old {
                self.sums[o.slot].apply(o, -1);
            }
        }
        self.frames += 1;
        if self.frames.is_multiple_of(self.size as u64) {
            let (mean_drop, drop_volatility, _) = self.drops();
            let clean_top1 = self.clean_slot.and_then(|c| self.scenario(c, CLEAN).top1);
            self.series.push_back(TrendPoint {
                frame: self.frames,
                mean_drop,
                drop_volatility,
                clean_top1,
            });
            if self.series.len() > MAX_SERIES {
                self.series.pop_front();
            }
        }
    }

    fn scenario(&self, slot: usize, key: &str) -> WindowScenario {
        let s = self.sums.get(slot).copied().unwrap_or_default();
        let frac = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        WindowScenario {
            scenario: key.to_string(),
            n: s.n,
            top1: frac(s.correct, s.labelled),
            drop: (s.paired > 0).then(|| {
                (s.paired_clean_correct as f64 - s.paired_correct as f64) / s.paired as f64
            }),
            agreement: frac(s.agree, s.with_clean),
        }
    }

    /// (mean drop, drop volatility, labelled basis) over the window's non-clean scenarios.
    fn drops(&self) -> (Option<f64>, Option<f64>, bool) {
        let clean_top1 = self.clean_slot.and_then(|c| self.scenario(c, CLEAN).top1);
        let labelled = clean_top1.is_some();
        // μ: clean's window accuracy, or full agreement for unlabelled streams.
        let mu = clean_top1.unwrap_or(1.0);
        let values: Vec<f64> = (0..self.sums.len())
            .filter(|&i| Some(i) != self.clean_slot)
            .filter_map(|i| {
                let s = self.scenario(i, "");
                if labelled { s.top1 } else { s.agreement }
            })
            .collect();
        let n = values.len();
        let mean_drop = (n > 0).then(|| values.iter().map(|c| mu - c).sum::<f64>() / n as f64);
        let volatility =
            (n > 1).then(|| values.iter().map(|c| (c - mu).powi(2)).sum::<f64>() / (n - 1) as f64);
        (mean_drop, volatility, labelled)
    }

    /// The report, with scenario names from `keys` (the cumulative metrics' order).
    pub(crate) fn report(&self, keys: &[String]) -> WindowReport {
        let (_, drop_volatility, labelled) = self.drops();
        let drops: Vec<f64> = self.series.iter().filter_map(|p| p.mean_drop).collect();
        let temporal_volatility = (drops.len() > 1).then(|| {
            let m = drops.iter().sum::<f64>() / drops.len() as f64;
            drops.iter().map(|d| (d - m).powi(2)).sum::<f64>() / (drops.len() - 1) as f64
        });
        WindowReport {
            frames: self.size,
            filled: self.ring.len(),
            basis: if labelled { "accuracy" } else { "agreement" }.into(),
            scenarios: keys
                .iter()
                .enumerate()
                .map(|(i, k)| self.scenario(i, k))
                .collect(),
            drop_volatility,
            series: self.series.iter().copied().collect(),
            temporal_volatility,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::tests::rec;

    fn slot(k: &str) -> usize {
        ["clean", "fog", "blur"]
            .iter()
            .position(|x| *x == k)
            .unwrap()
    }

    /// A labelled frame: clean right, fog right or not, blur always wrong.
    fn frame(id: &str, fog_right: bool) -> Vec<Record> {
        vec![
            rec(id, "clean", Some(1), &[1]),
            rec(id, "fog", Some(1), &[if fog_right { 1 } else { 2 }]),
            rec(id, "blur", Some(1), &[3]),
        ]
    }

    #[test]
    fn the_window_forgets_old_frames_and_reports_its_volatility() {
        let keys: Vec<String> = ["clean", "fog", "blur"].map(String::from).to_vec();
        let mut w = Window::new(4);
        // Eight frames: fog right on the first four, wrong on the last four.
        for i in 0..8 {
            w.add_frame(&frame(&format!("f{i}"), i < 4), slot);
        }
        let r = w.report(&keys);
        assert_eq!((r.frames, r.filled, r.basis.as_str()), (4, 4, "accuracy"));
        let fog = &r.scenarios[1];
        assert_eq!(fog.scenario, "fog");
        assert_eq!((fog.n, fog.top1, fog.drop), (4, Some(0.0), Some(1.0)));
        // μ = 1, C = (0, 0): σ² = (1 + 1) / 1.
        assert_eq!(r.drop_volatility, Some(2.0));
        // Two points: after frame 4 (fog 1, blur 0: mean drop 0.5, σ² = 1) and frame 8 (mean 1).
        assert_eq!(r.series.len(), 2);
        assert_eq!(
            (
                r.series[0].frame,
                r.series[0].mean_drop,
                r.series[0].drop_volatility
            ),
            (4, Some(0.5), Some(1.0))
        );
        assert_eq!(r.series[1].mean_drop, Some(1.0));
        // Clean is right on every frame of both windows.
        assert_eq!(r.series[1].clean_top1, Some(1.0));
        // Sample variance of (0.5, 1.0) = 0.125.
        assert_eq!(r.temporal_volatility, Some(0.125));
    }

    #[test]
    fn unlabelled_streams_use_agreement() {
        let keys: Vec<String> = ["clean", "fog", "blur"].map(String::from).to_vec();
        let mut w = Window::new(10);
        for i in 0..3 {
            let id = format!("u{i}");
            w.add_frame(
                &[
                    rec(&id, "clean", None, &[1]),
                    rec(&id, "fog", None, &[1]),
                    rec(&id, "blur", None, &[if i == 0 { 1 } else { 2 }]),
                ],
                slot,
            );
        }
        let r = w.report(&keys);
        assert_eq!(r.basis, "agreement");
        assert_eq!(r.scenarios[2].agreement, Some(1.0 / 3.0));
        // μ = 1, C = (1, 1/3): σ² = (0 + 4/9) / 1.
        let v = r.drop_volatility.unwrap();
        assert!((v - 4.0 / 9.0).abs() < 1e-12, "{v}");
        assert!(r.series.is_empty() && r.temporal_volatility.is_none());
    }
}
