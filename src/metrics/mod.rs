//! Metrics: pure functions of evaluation [`Record`]s (no pixels, no I/O).
//!
//! A record is one evaluated variant of one frame. [`Metrics`] is the streaming state: it is fed all
//! records of one frame at a time ([`Metrics::add_frame`]) and keeps, per scenario, the tallies the
//! summary is computed from ([`Tally`]) and, per stage, a latency histogram. The same tallies serve the
//! live view and the final report, and rebuilding them from `records.jsonl` gives the same numbers.

pub mod accuracy;
pub(crate) mod batches;
pub(crate) mod groups;
pub(crate) mod hard_imagenet;
pub mod imagenet_c;
pub(crate) mod in9;
pub(crate) mod placement;
pub(crate) mod rfs;
pub mod saliency;
mod timings;
pub(crate) mod volatility;
pub(crate) mod window;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Deserializer, Serialize};

use self::accuracy::{Z95, fraction, wilson_interval};
use crate::latency::LatencyHistogram;
pub use timings::{Stage, Timings};

use crate::key::CLEAN;

/// One evaluated variant: exactly one line of `records.jsonl` (fields serialised in this order).
///
/// Non-finite numbers in `prob` and `ms` are written as JSON `null` and read back as NaN.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The output contract's format (docs/output.md#format-changelog): written first on every
    /// line; absent in records of format 1.
    #[serde(default)]
    pub format: crate::contract::Format,
    /// Frame id ([`crate::frame::Frame::id`]).
    pub frame: String,
    /// The frame's position in its source ([`crate::frame::Frame::seq`]): puts the records of a
    /// sharded run's parts back in source order (`robustream merge`). Absent in records written
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Scenario key (`clean`, `corruption/fog/3`, ...).
    pub scenario: String,
    /// Ground truth in the dataset label space; `None` (null) when unknown.
    pub truth: Option<usize>,
    /// Top-1 in the dataset label space, or -1 when the model's top-1 is unmapped
    /// (see [`crate::classmap::ClassMap::pred`]).
    pub pred: i64,
    /// The model's best classes (model class indices), best first.
    pub top5: Vec<usize>,
    /// Their probabilities, same order.
    #[serde(deserialize_with = "floats_or_nan")]
    pub prob: Vec<f32>,
    /// Truth among the mapped top-5 (see [`crate::classmap::ClassMap::hit5`]); `None` when `truth` is.
    pub hit5: Option<bool>,
    /// Per-stage timings in milliseconds (see [`Timings`]).
    pub ms: Timings,
    /// The frame's object boxes at the scenario stage as normalised `[x0, y0, x1, y1]` (fractions of
    /// the width and height, exclusive ends), on the `clean` record of a frame with boxes or a mask
    /// (the mask's tight box) only; absent otherwise. Input of the centre and size scores
    /// (docs/corner-cases.md#centre-and-size-scores, [`placement`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boxes: Option<Vec<[f32; 4]>>,
    /// The frame's groups, dimension → value (docs/groups.md#records): on every record of a frame
    /// from a source with `[source.groups]`; absent when the frame has none (so a record without
    /// groups is written as before format 3). Input of the groups family ([`groups`]).
    #[serde(default, skip_serializing_if = "crate::frame::Groups::is_empty")]
    pub groups: crate::frame::Groups,
}

impl Record {
    /// Whether the top-1 is the truth; `None` without a truth.
    pub(crate) fn top1_correct(&self) -> Option<bool> {
        self.truth
            .map(|t| usize::try_from(self.pred).ok() == Some(t))
    }

    /// Whether the truth is in the mapped top-5; `None` without a truth (a labelled record with a
    /// missing `hit5` counts as a miss).
    pub(crate) fn top5_correct(&self) -> Option<bool> {
        self.truth.map(|_| self.hit5 == Some(true))
    }

    /// The model's top-1 class (model class space), if any.
    pub(crate) fn model_top1(&self) -> Option<usize> {
        self.top5.first().copied()
    }
}

/// `[f32]` where `null` (how serde_json writes NaN and infinities) reads back as NaN.
fn floats_or_nan<'de, D: Deserializer<'de>>(de: D) -> Result<Vec<f32>, D::Error> {
    let v: Vec<Option<f32>> = Deserialize::deserialize(de)?;
    Ok(v.into_iter().map(|x| x.unwrap_or(f32::NAN)).collect())
}

/// Counts for one scenario. All fractions derived from it are in `[0, 1]` and `None` when their
/// denominator is 0.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Records seen.
    pub(crate) n: u64,
    /// Records with a truth.
    pub(crate) n_labelled: u64,
    /// Labelled records whose top-1 is the truth.
    pub(crate) top1_correct: u64,
    /// Labelled records whose mapped top-5 holds the truth.
    pub(crate) top5_correct: u64,
    /// Records of frames whose `clean` record is labelled too (this record being labelled).
    pub(crate) paired: u64,
    /// Of those, records whose top-1 is right.
    pub(crate) paired_correct: u64,
    /// Of those, frames whose `clean` top-1 is right.
    pub(crate) paired_clean_correct: u64,
    /// Records of frames that have a `clean` record.
    pub(crate) with_clean: u64,
    /// Of those, records whose model top-1 equals the clean record's model top-1.
    pub(crate) agree: u64,
    /// Consecutive frame pairs (source order, frame t−1 and t) both evaluated under this scenario.
    pub(crate) flip_pairs: u64,
    /// Of those, pairs whose model top-1 changed (ImageNet-P's flip,
    /// docs/imagenet-c.md#imagenet-p-flip-probability).
    pub(crate) flips: u64,
    /// Of the pairs, those whose two frames also have a `clean` record.
    pub(crate) flip_pairs_clean: u64,
    /// Of those, pairs whose *clean* top-1 changed (the scene's own change, the flip baseline).
    pub(crate) clean_flips: u64,
    /// Of those, pairs whose scenario top-1 changed.
    pub(crate) flips_with_clean: u64,
}

impl Tally {
    /// Top-1 accuracy over labelled records.
    pub(crate) fn top1(&self) -> Option<f64> {
        fraction(self.top1_correct, self.n_labelled)
    }

    /// 95% Wilson interval of [`Tally::top1`] (see [`wilson_interval`]).
    pub(crate) fn top1_ci95(&self) -> Option<(f64, f64)> {
        (self.n_labelled > 0).then(|| wilson_interval(self.top1_correct, self.n_labelled, Z95))
    }

    /// Top-5 accuracy over labelled records.
    pub(crate) fn top5(&self) -> Option<f64> {
        fraction(self.top5_correct, self.n_labelled)
    }

    /// Accuracy drop from clean, as a fraction: over the frames where both this scenario and `clean`
    /// have a labelled record, clean top-1 accuracy minus this scenario's top-1 accuracy. Negative
    /// when the scenario does better; 0 for `clean` itself.
    pub(crate) fn drop(&self) -> Option<f64> {
        (self.paired > 0).then(|| {
            (self.paired_clean_correct as f64 - self.paired_correct as f64) / self.paired as f64
        })
    }

    /// Fraction of records (of frames with a `clean` record) whose model top-1 equals clean's model
    /// top-1. Needs no labels; 1 for `clean` itself.
    pub(crate) fn agreement(&self) -> Option<f64> {
        fraction(self.agree, self.with_clean)
    }

    /// Flip probability over consecutive frames, ImageNet-P's stability measure on a stream
    /// (docs/imagenet-c.md#imagenet-p-flip-probability with difficulty 1, consecutive elements
    /// compared): the share of consecutive frame pairs whose model top-1 under this scenario
    /// changed. Needs no labels. On a camera the scene itself changes too: see
    /// [`Tally::flip_excess`].
    pub(crate) fn flip_probability(&self) -> Option<f64> {
        fraction(self.flips, self.flip_pairs)
    }

    /// This scenario's flip probability minus clean's on the same frame pairs: the instability the
    /// scenario adds to the stream's own (0 for `clean`; negative when the scenario pins the
    /// prediction, e.g. everything becomes one class).
    pub(crate) fn flip_excess(&self) -> Option<f64> {
        (self.flip_pairs_clean > 0).then(|| {
            (self.flips_with_clean as f64 - self.clean_flips as f64) / self.flip_pairs_clean as f64
        })
    }

    fn add(&mut self, r: &Record, clean: Option<&Record>) {
        self.n += 1;
        let correct = r.top1_correct();
        if let Some(correct) = correct {
            self.n_labelled += 1;
            self.top1_correct += u64::from(correct);
            self.top5_correct += u64::from(r.top5_correct() == Some(true));
        }
        let Some(clean) = clean else { return };
        if let (Some(correct), Some(clean_correct)) = (correct, clean.top1_correct()) {
            self.paired += 1;
            self.paired_correct += u64::from(correct);
            self.paired_clean_correct += u64::from(clean_correct);
        }
        self.with_clean += 1;
        self.agree += u64::from(r.model_top1() == clean.model_top1());
    }
}

/// Counts of one truth class in one scenario (the class-balanced metrics' input, e.g. RFS,
/// docs/hard-imagenet.md#rfs-from-class-balanced-accuracies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ClassTally {
    /// Records of this truth class.
    pub(crate) n: u64,
    /// Of those, records whose top-1 is the truth.
    pub(crate) top1_correct: u64,
}

impl ClassTally {
    /// Top-1 accuracy of the class; `None` without records.
    fn top1(&self) -> Option<f64> {
        fraction(self.top1_correct, self.n)
    }
}

/// Streaming metric state of a run, fed one frame (all its variants) at a time.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Scenario keys in report order.
    order: Vec<String>,
    /// Key → index into `order` and `tallies`.
    index: HashMap<String, usize>,
    tallies: Vec<Tally>,
    /// Per scenario (same index as `tallies`): truth class → counts, labelled records only. A map,
    /// not a vector by class index, so a stray large label in a records file costs nothing.
    per_class: Vec<BTreeMap<usize, ClassTally>>,
    /// Truth class → centre and size score sums over the `clean` records with boxes.
    objects: BTreeMap<usize, placement::ObjectScores>,
    /// One histogram per stage, indexed by [`Stage::ALL`] position.
    latency: [LatencyHistogram; Stage::COUNT],
    frames: u64,
    /// Per scenario: where it was last evaluated, for flips.
    last: Vec<Option<LastSeen>>,
    /// The sliding window, when enabled ([`Metrics::with_window`]).
    window: Option<window::Window>,
    /// Per group of frames, the counts under each scenario ([`groups`], docs/groups.md).
    groups: groups::GroupTallies,
}

/// A scenario's last evaluation: the frame number (1-based count of frames added), its model top-1,
/// and that frame's clean top-1 (`None` = the frame had no clean record).
type LastSeen = (u64, Option<usize>, Option<Option<usize>>);

impl Metrics {
    /// Empty state reporting scenarios in `scenario_order` (the plan order; duplicates are ignored).
    /// Scenarios first seen later are appended in order of appearance.
    pub(crate) fn new(scenario_order: Vec<String>) -> Self {
        let mut m = Self {
            order: Vec::new(),
            index: HashMap::new(),
            tallies: Vec::new(),
            per_class: Vec::new(),
            objects: BTreeMap::new(),
            latency: std::array::from_fn(|_| LatencyHistogram::new()),
            frames: 0,
            last: Vec::new(),
            window: None,
            groups: groups::GroupTallies::default(),
        };
        for key in scenario_order {
            m.slot(&key);
        }
        m
    }

    /// The same state with a sliding window over the last `frames` frames (0 = none; see
    /// [`window`]).
    pub(crate) fn with_window(mut self, frames: usize) -> Self {
        self.window = (frames > 0).then(|| window::Window::new(frames));
        self
    }

    /// The same state comparing groups of frames by `settings` (their reference groups,
    /// docs/groups.md#gap).
    pub(crate) fn with_groups(mut self, settings: groups::GroupSettings) -> Self {
        self.groups = groups::GroupTallies::new(settings);
        self
    }

    /// The per-group counts ([`groups`]).
    pub(crate) fn groups(&self) -> &groups::GroupTallies {
        &self.groups
    }

    /// The sliding window's report, if a window is kept.
    pub(crate) fn window(&self) -> Option<window::WindowReport> {
        self.window.as_ref().map(|w| w.report(&self.order))
    }

    /// Index of `key`'s tally, appending a new one when unseen.
    fn slot(&mut self, key: &str) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = self.order.len();
        self.order.push(key.to_string());
        self.index.insert(key.to_string(), i);
        self.tallies.push(Tally::default());
        self.per_class.push(BTreeMap::new());
        self.last.push(None);
        i
    }

    /// Adds all records of one frame. The first record with scenario [`CLEAN`], if any, is the
    /// reference for drop and agreement.
    pub(crate) fn add_frame(&mut self, records: &[Record]) {
        self.frames += 1;
        let clean = records.iter().find(|r| r.scenario == CLEAN);
        if let Some(c) = clean
            && let (Some(truth), Some(boxes)) = (c.truth, c.boxes.as_deref())
            && let Some(image) = placement::image_scores(boxes)
        {
            self.objects.entry(truth).or_default().add(image);
        }
        let frame_no = self.frames;
        let clean_top1 = clean.map(Record::model_top1);
        for r in records {
            let i = self.slot(&r.scenario);
            self.tallies[i].add(r, clean);
            self.groups.add(r, i);
            let top1 = r.model_top1();
            if let Some((prev_no, prev_top1, prev_clean)) = self.last[i]
                && prev_no + 1 == frame_no
            {
                let t = &mut self.tallies[i];
                t.flip_pairs += 1;
                t.flips += u64::from(prev_top1 != top1);
                if let (Some(a), Some(b)) = (prev_clean, clean_top1) {
                    t.flip_pairs_clean += 1;
                    t.clean_flips += u64::from(a != b);
                    t.flips_with_clean += u64::from(prev_top1 != top1);
                }
            }
            self.last[i] = Some((frame_no, top1, clean_top1));
            if let (Some(truth), Some(correct)) = (r.truth, r.top1_correct()) {
                let c = self.per_class[i].entry(truth).or_default();
                c.n += 1;
                c.top1_correct += u64::from(correct);
            }
            for (stage, ms) in r.ms.iter() {
                self.latency[stage.index()].record_ms(ms);
            }
        }
        if let Some(w) = self.window.as_mut() {
            let index = &self.index;
            // Every key has a slot by now (the loop above made them).
            w.add_frame(records, |k| index.get(k).copied().unwrap_or_default());
        }
    }

    /// Number of frames added.
    #[cfg(test)]
    fn frames(&self) -> u64 {
        self.frames
    }

    /// Scenario keys in report order.
    pub(crate) fn keys(&self) -> &[String] {
        &self.order
    }

    /// The tally of one scenario, if known.
    pub(crate) fn tally(&self, key: &str) -> Option<&Tally> {
        self.index.get(key).map(|&i| &self.tallies[i])
    }

    /// Per truth class counts of one scenario (labelled records only), in class order; `None` for an
    /// unknown scenario.
    pub(crate) fn class_tallies(&self, key: &str) -> Option<&BTreeMap<usize, ClassTally>> {
        self.index.get(key).map(|&i| &self.per_class[i])
    }

    /// Per truth class, the centre and size scores' sums over the labelled `clean` records with boxes
    /// (docs/corner-cases.md#centre-and-size-scores), in class order.
    pub(crate) fn object_scores(&self) -> &BTreeMap<usize, placement::ObjectScores> {
        &self.objects
    }

    /// All scenarios with their tallies, in report order.
    pub(crate) fn tallies(&self) -> impl Iterator<Item = (&str, &Tally)> {
        self.order.iter().map(String::as_str).zip(&self.tallies)
    }

    /// The latency histogram of a stage.
    #[cfg(test)]
    fn latency(&self, stage: Stage) -> &LatencyHistogram {
        &self.latency[stage.index()]
    }

    /// Stages with at least one recorded timing and their histograms, in pipeline order.
    pub(crate) fn latencies(&self) -> impl Iterator<Item = (Stage, &LatencyHistogram)> {
        Stage::ALL
            .into_iter()
            .zip(&self.latency)
            .filter(|(_, h)| !h.is_empty())
    }
}

#[cfg(test)]
pub(crate) mod tests;
