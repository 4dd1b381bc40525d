//! Metrics: pure functions of evaluation [`Record`]s (no pixels, no I/O).
//!
//! A record is one evaluated variant of one frame. [`Metrics`] is the streaming state: it is fed all
//! records of one frame at a time ([`Metrics::add_frame`]) and keeps, per scenario, the tallies the
//! summary is computed from ([`Tally`]) and, per stage, a latency histogram. The same tallies serve the
//! live view and the final report, and rebuilding them from `records.jsonl` gives the same numbers.

pub mod accuracy;
pub mod hard_imagenet;
pub mod imagenet_c;
pub mod in9;
pub mod placement;
pub mod rfs;
pub mod saliency;
pub mod timings;
pub mod volatility;
pub mod window;

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
    /// Frame id ([`crate::frame::Frame::id`]).
    pub frame: String,
    /// Scenario key (`clean`, `corruption/fog/3`, ...).
    pub scenario: String,
    /// Ground truth in the dataset label space; `None` (null) when unknown.
    pub truth: Option<usize>,
    /// Top-1 in the dataset label space, or -1 when the model's top-1 is unmapped
    /// (see [`classmap::ClassMap::pred`]).
    pub pred: i64,
    /// The model's best classes (model class indices), best first.
    pub top5: Vec<usize>,
    /// Their probabilities, same order.
    #[serde(deserialize_with = "floats_or_nan")]
    pub prob: Vec<f32>,
    /// Truth among the mapped top-5 (see [`classmap::ClassMap::hit5`]); `None` when `truth` is.
    pub hit5: Option<bool>,
    /// Per-stage timings in milliseconds (see [`Timings`]).
    pub ms: Timings,
    /// The frame's object boxes at the scenario stage as normalised `[x0, y0, x1, y1]` (fractions of
    /// the width and height, exclusive ends), on the `clean` record of a frame with boxes or a mask
    /// (the mask's tight box) only; absent otherwise. Input of the centre and size scores
    /// (docs/corner-cases.md#centre-and-size-scores, [`placement`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boxes: Option<Vec<[f32; 4]>>,
}

impl Record {
    /// Whether the top-1 is the truth; `None` without a truth.
    pub fn top1_correct(&self) -> Option<bool> {
        self.truth
            .map(|t| usize::try_from(self.pred).ok() == Some(t))
    }

    /// Whether the truth is in the mapped top-5; `None` without a truth (a labelled record with a
    /// missing `hit5` counts as a miss).
    pub fn top5_correct(&self) -> Option<bool> {
        self.truth.map(|_| self.hit5 == Some(true))
    }

    /// The model's top-1 class (model class space), if any.
    pub fn model_top1(&self) -> Option<usize> {
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
pub struct Tally {
    /// Records seen.
    pub n: u64,
    /// Records with a truth.
    pub n_labelled: u64,
    /// Labelled records whose top-1 is the truth.
    pub top1_correct: u64,
    /// Labelled records whose mapped top-5 holds the truth.
    pub top5_correct: u64,
    /// Records of frames whose `clean` record is labelled too (this record being labelled).
    pub paired: u64,
    /// Of those, records whose top-1 is right.
    pub paired_correct: u64,
    /// Of those, frames whose `clean` top-1 is right.
    pub paired_clean_correct: u64,
    /// Records of frames that have a `clean` record.
    pub with_clean: u64,
    /// Of those, records whose model top-1 equals the clean record's model top-1.
    pub agree: u64,
    /// Consecutive frame pairs (source order, frame t−1 and t) both evaluated under this scenario.
    pub flip_pairs: u64,
    /// Of those, pairs whose model top-1 changed (ImageNet-P's flip,
    /// docs/imagenet-c.md#imagenet-p-flip-probability).
    pub flips: u64,
    /// Of the pairs, those whose two frames also have a `clean` record.
    pub flip_pairs_clean: u64,
    /// Of those, pairs whose *clean* top-1 changed (the scene's own change, the flip baseline).
    pub clean_flips: u64,
    /// Of those, pairs whose scenario top-1 changed.
    pub flips_with_clean: u64,
}

impl Tally {
    /// Top-1 accuracy over labelled records.
    pub fn top1(&self) -> Option<f64> {
        fraction(self.top1_correct, self.n_labelled)
    }

    /// 95% Wilson interval of [`Tally::top1`] (see [`wilson_interval`]).
    pub fn top1_ci95(&self) -> Option<(f64, f64)> {
        (self.n_labelled > 0).then(|| wilson_interval(self.top1_correct, self.n_labelled, Z95))
    }

    /// Top-5 accuracy over labelled records.
    pub fn top5(&self) -> Option<f64> {
        fraction(self.top5_correct, self.n_labelled)
    }

    /// Accuracy drop from clean, as a fraction: over the frames where both this scenario and `clean`
    /// have a labelled record, clean top-1 accuracy minus this scenario's top-1 accuracy. Negative
    /// when the scenario does better; 0 for `clean` itself.
    pub fn drop(&self) -> Option<f64> {
        (self.paired > 0).then(|| {
            (self.paired_clean_correct as f64 - self.paired_correct as f64) / self.paired as f64
        })
    }

    /// Fraction of records (of frames with a `clean` record) whose model top-1 equals clean's model
    /// top-1. Needs no labels; 1 for `clean` itself.
    pub fn agreement(&self) -> Option<f64> {
        fraction(self.agree, self.with_clean)
    }

    /// Flip probability over consecutive frames, ImageNet-P's stability measure on a stream
    /// (docs/imagenet-c.md#imagenet-p-flip-probability with difficulty 1, consecutive elements
    /// compared): the share of consecutive frame pairs whose model top-1 under this scenario
    /// changed. Needs no labels. On a camera the scene itself changes too: see
    /// [`Tally::flip_excess`].
    pub fn flip_probability(&self) -> Option<f64> {
        fraction(self.flips, self.flip_pairs)
    }

    /// This scenario's flip probability minus clean's on the same frame pairs: the instability the
    /// scenario adds to the stream's own (0 for `clean`; negative when the scenario pins the
    /// prediction, e.g. everything becomes one class).
    pub fn flip_excess(&self) -> Option<f64> {
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
pub struct ClassTally {
    /// Records of this truth class.
    pub n: u64,
    /// Of those, records whose top-1 is the truth.
    pub top1_correct: u64,
}

impl ClassTally {
    /// Top-1 accuracy of the class; `None` without records.
    pub fn top1(&self) -> Option<f64> {
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
}

/// A scenario's last evaluation: the frame number (1-based count of frames added), its model top-1,
/// and that frame's clean top-1 (`None` = the frame had no clean record).
type LastSeen = (u64, Option<usize>, Option<Option<usize>>);

impl Metrics {
    /// Empty state reporting scenarios in `scenario_order` (the plan order; duplicates are ignored).
    /// Scenarios first seen later are appended in order of appearance.
    pub fn new(scenario_order: Vec<String>) -> Self {
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
        };
        for key in scenario_order {
            m.slot(&key);
        }
        m
    }

    /// The same state with a sliding window over the last `frames` frames (0 = none; see
    /// [`window`]).
    pub fn with_window(mut self, frames: usize) -> Self {
        self.window = (frames > 0).then(|| window::Window::new(frames));
        self
    }

    /// The sliding window's report, if a window is kept.
    pub fn window(&self) -> Option<window::WindowReport> {
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
    pub fn add_frame(&mut self, records: &[Record]) {
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
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Scenario keys in report order.
    pub fn keys(&self) -> &[String] {
        &self.order
    }

    /// The tally of one scenario, if known.
    pub fn tally(&self, key: &str) -> Option<&Tally> {
        self.index.get(key).map(|&i| &self.tallies[i])
    }

    /// Per truth class counts of one scenario (labelled records only), in class order; `None` for an
    /// unknown scenario.
    pub fn class_tallies(&self, key: &str) -> Option<&BTreeMap<usize, ClassTally>> {
        self.index.get(key).map(|&i| &self.per_class[i])
    }

    /// Per truth class, the centre and size scores' sums over the labelled `clean` records with boxes
    /// (docs/corner-cases.md#centre-and-size-scores), in class order.
    pub fn object_scores(&self) -> &BTreeMap<usize, placement::ObjectScores> {
        &self.objects
    }

    /// All scenarios with their tallies, in report order.
    pub fn tallies(&self) -> impl Iterator<Item = (&str, &Tally)> {
        self.order.iter().map(String::as_str).zip(&self.tallies)
    }

    /// The latency histogram of a stage.
    pub fn latency(&self, stage: Stage) -> &LatencyHistogram {
        &self.latency[stage.index()]
    }

    /// Stages with at least one recorded timing and their histograms, in pipeline order.
    pub fn latencies(&self) -> impl Iterator<Item = (Stage, &LatencyHistogram)> {
        Stage::ALL
            .into_iter()
            .zip(&self.latency)
            .filter(|(_, h)| !h.is_empty())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record; `pred` equals `top1` (identity map) and `hit5` is computed from `top`.
    pub(crate) fn rec(frame: &str, scenario: &str, truth: Option<usize>, top: &[usize]) -> Record {
        let top1 = top.first().map_or(-1, |&c| c as i64);
        Record {
            frame: frame.into(),
            scenario: scenario.into(),
            truth,
            pred: top1,
            top5: top.to_vec(),
            prob: top.iter().map(|_| 0.1).collect(),
            hit5: truth.map(|t| top.iter().take(5).any(|&c| c == t)),
            ms: Timings::new(),
            boxes: None,
        }
    }

    /// `r` with timings, by stage name; a name that is no stage is dropped, as reading a records
    /// file drops it.
    pub(crate) fn timed(mut r: Record, ms: &[(&str, f64)]) -> Record {
        r.ms = Timings::new();
        for &(name, v) in ms {
            if let Some(stage) = Stage::parse(name) {
                r.ms.set(stage, v);
            }
        }
        r
    }

    fn keys(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn record_serialises_in_field_order_and_round_trips() {
        let r = timed(rec("a.jpg", "clean", Some(3), &[3, 1]), &[("infer", 1.5)]);
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(
            line,
            r#"{"frame":"a.jpg","scenario":"clean","truth":3,"pred":3,"top5":[3,1],"prob":[0.1,0.1],"hit5":true,"ms":{"infer":1.5}}"#
        );
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
        let unlabelled = rec("b", "clean", None, &[2]);
        let line = serde_json::to_string(&unlabelled).unwrap();
        assert!(line.contains(r#""truth":null"#) && line.contains(r#""hit5":null"#));
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), unlabelled);
    }

    #[test]
    fn boxes_only_when_present_and_they_feed_object_scores() {
        let mut r = rec("a", "clean", Some(2), &[2]);
        r.boxes = Some(vec![[0.25, 0.0, 0.75, 0.5]]);
        let line = serde_json::to_string(&r).unwrap();
        assert!(
            line.ends_with(r#","ms":{},"boxes":[[0.25,0.0,0.75,0.5]]}"#),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
        let mut m = Metrics::new(vec![]);
        // Boxes on a non-clean record, or on an unlabelled clean record, are not counted.
        let mut other = rec("a", "fog", Some(2), &[2]);
        other.boxes = r.boxes.clone();
        m.add_frame(&[r.clone(), other]);
        let mut unlabelled = r.clone();
        unlabelled.truth = None;
        m.add_frame(&[unlabelled]);
        let o = m.object_scores()[&2];
        assert_eq!((o.images, o.centre_sum, o.size_sum), (1, 0.75, 0.25));
        assert_eq!(m.object_scores().len(), 1);
    }

    #[test]
    fn non_finite_numbers_read_back_as_nan() {
        let mut r = timed(rec("a", "clean", None, &[1]), &[("infer", f64::NAN)]);
        r.prob = vec![f32::INFINITY];
        let line = serde_json::to_string(&r).unwrap();
        assert!(
            line.contains(r#""prob":[null]"#) && line.contains(r#""infer":null"#),
            "{line}"
        );
        let back: Record = serde_json::from_str(&line).unwrap();
        assert!(back.prob[0].is_nan() && back.ms.get(Stage::Infer).is_some_and(f64::is_nan));
    }

    #[test]
    fn correctness_helpers() {
        let mut r = rec("a", "clean", Some(2), &[5, 2]);
        assert_eq!(r.top1_correct(), Some(false));
        assert_eq!(r.top5_correct(), Some(true));
        r.pred = -1;
        r.truth = Some(0);
        assert_eq!(r.top1_correct(), Some(false));
        r.hit5 = None; // inconsistent, counts as a miss
        assert_eq!(r.top5_correct(), Some(false));
        r.truth = None;
        assert_eq!((r.top1_correct(), r.top5_correct()), (None, None));
    }

    /// Four frames, three scenarios, numbers checked by hand below.
    pub(crate) fn frames() -> Vec<Vec<Record>> {
        vec![
            // f1: clean right, fog wrong (top-5 hit), noise right.
            vec![
                rec("f1", "clean", Some(1), &[1, 2]),
                rec("f1", "fog", Some(1), &[2, 1]),
                rec("f1", "noise", Some(1), &[1, 0]),
            ],
            // f2: clean wrong, fog right, noise wrong (top-5 miss), noise's top-1 agrees with clean.
            vec![
                rec("f2", "clean", Some(4), &[3, 4]),
                rec("f2", "fog", Some(4), &[4, 3]),
                rec("f2", "noise", Some(4), &[3, 0]),
            ],
            // f3: unlabelled; fog agrees with clean, noise does not.
            vec![
                rec("f3", "clean", None, &[7]),
                rec("f3", "fog", None, &[7]),
                rec("f3", "noise", None, &[8]),
            ],
            // f4: no clean record; labelled fog right, noise wrong.
            vec![
                rec("f4", "fog", Some(0), &[0]),
                rec("f4", "noise", Some(0), &[9]),
            ],
        ]
    }

    #[test]
    fn flips_over_consecutive_frames_against_the_clean_baseline() {
        // Clean top-1 per frame: 1 1 2 2 3; "blur" (evaluated on frames 1, 2, 3 and 5, as a schedule
        // would): 5 6 6 _ 6 — pairs (1,2) flip, (2,3) no flip; frame 4 is missing, so (3,5) is no pair.
        let clean = [1, 1, 2, 2, 3];
        let blur = [Some(5), Some(6), Some(6), None, Some(6)];
        let mut m = Metrics::new(keys(&["clean", "blur"]));
        for (i, (c, b)) in clean.iter().zip(blur).enumerate() {
            let id = format!("f{i}");
            let mut f = vec![rec(&id, "clean", None, &[*c])];
            if let Some(b) = b {
                f.push(rec(&id, "blur", None, &[b]));
            }
            m.add_frame(&f);
        }
        let c = m.tally("clean").unwrap();
        assert_eq!((c.flip_pairs, c.flips), (4, 2));
        assert_eq!(
            (c.flip_probability(), c.flip_excess()),
            (Some(0.5), Some(0.0))
        );
        let b = m.tally("blur").unwrap();
        assert_eq!((b.flip_pairs, b.flips), (2, 1));
        assert_eq!(b.flip_probability(), Some(0.5));
        // On blur's two pairs clean flipped once ((2,3): 1 → 2) and blur once: excess 0; with
        // blur steady where clean changes it would be negative.
        assert_eq!(
            (b.flip_pairs_clean, b.clean_flips, b.flips_with_clean),
            (2, 1, 1)
        );
        assert_eq!(b.flip_excess(), Some(0.0));
        let mut steady = Metrics::new(keys(&["clean", "blur"]));
        for (i, c) in clean.iter().enumerate() {
            let id = format!("g{i}");
            steady.add_frame(&[rec(&id, "clean", None, &[*c]), rec(&id, "blur", None, &[9])]);
        }
        let b = steady.tally("blur").unwrap();
        assert_eq!(
            (b.flip_probability(), b.flip_excess()),
            (Some(0.0), Some(-0.5))
        );
        assert_eq!(Tally::default().flip_probability(), None);
    }

    #[test]
    fn tallies_by_hand() {
        let mut m = Metrics::new(keys(&["clean", "fog", "noise"]));
        for f in frames() {
            m.add_frame(&f);
        }
        assert_eq!(m.frames(), 4);
        assert_eq!(m.keys(), keys(&["clean", "fog", "noise"]).as_slice());

        let c = m.tally("clean").unwrap();
        assert_eq!(
            (c.n, c.n_labelled, c.top1_correct, c.top5_correct),
            (3, 2, 1, 2)
        );
        assert_eq!(c.top1(), Some(0.5));
        assert_eq!(c.top5(), Some(1.0));
        assert_eq!(c.drop(), Some(0.0));
        assert_eq!(c.agreement(), Some(1.0));
        assert_eq!(c.top1_ci95(), Some(wilson_interval(1, 2, Z95)));

        let f = m.tally("fog").unwrap();
        // Labelled: f1 wrong, f2 right, f4 right → 2/3 top-1; top-5: all three hit.
        assert_eq!(
            (f.n, f.n_labelled, f.top1_correct, f.top5_correct),
            (4, 3, 2, 3)
        );
        // Paired with labelled clean: f1, f2. clean 1/2, fog 1/2 → drop 0.
        assert_eq!(
            (f.paired, f.paired_clean_correct, f.paired_correct),
            (2, 1, 1)
        );
        assert_eq!(f.drop(), Some(0.0));
        // Agreement over f1..f3: f1 2≠1, f2 4≠3, f3 7=7 → 1/3.
        assert_eq!((f.with_clean, f.agree), (3, 1));
        assert!((f.agreement().unwrap() - 1.0 / 3.0).abs() < 1e-15);

        let n = m.tally("noise").unwrap();
        // Labelled: f1 right, f2 wrong, f4 wrong → 1/3; top-5: f1 hit, f2 miss, f4 miss.
        assert_eq!(
            (n.n, n.n_labelled, n.top1_correct, n.top5_correct),
            (4, 3, 1, 1)
        );
        // Paired: f1 (clean right, noise right), f2 (clean wrong, noise wrong) → drop 0.
        assert_eq!(n.drop(), Some(0.0));
        // Agreement: f1 1=1, f2 3=3, f3 8≠7 → 2/3.
        assert_eq!((n.with_clean, n.agree), (3, 2));
    }

    #[test]
    fn per_class_tallies_by_hand() {
        let mut m = Metrics::new(keys(&["clean", "fog", "noise"]));
        for f in frames() {
            m.add_frame(&f);
        }
        let fog = m.class_tallies("fog").unwrap();
        // fog: class 1 (f1) wrong, class 4 (f2) right, class 0 (f4) right; f3 is unlabelled.
        let got: Vec<(usize, u64, u64)> =
            fog.iter().map(|(c, t)| (*c, t.n, t.top1_correct)).collect();
        assert_eq!(got, vec![(0, 1, 1), (1, 1, 0), (4, 1, 1)]);
        assert_eq!(fog[&1].top1(), Some(0.0));
        // The per-class counts add up to the scenario's labelled counts.
        for (key, t) in m.tallies() {
            let pc = m.class_tallies(key).unwrap();
            assert_eq!(pc.values().map(|c| c.n).sum::<u64>(), t.n_labelled);
            assert_eq!(
                pc.values().map(|c| c.top1_correct).sum::<u64>(),
                t.top1_correct
            );
        }
        assert!(m.class_tallies("nope").is_none());
        assert_eq!(ClassTally::default().top1(), None);
    }

    #[test]
    fn drop_is_clean_minus_scenario_on_paired_frames() {
        let mut m = Metrics::new(keys(&["clean", "blur"]));
        // Clean right on 3 of 4 frames, blur right on 1 of them; a fifth frame with unlabelled clean
        // is not paired (blur's own accuracy still counts it).
        for (i, (c, b)) in [(true, true), (true, false), (true, false), (false, false)]
            .iter()
            .enumerate()
        {
            let id = format!("f{i}");
            m.add_frame(&[
                rec(&id, "clean", Some(1), &[if *c { 1 } else { 0 }]),
                rec(&id, "blur", Some(1), &[if *b { 1 } else { 0 }]),
            ]);
        }
        m.add_frame(&[
            rec("f5", "clean", None, &[1]),
            rec("f5", "blur", Some(1), &[1]),
        ]);
        let b = m.tally("blur").unwrap();
        assert_eq!(b.drop(), Some(0.5)); // 3/4 − 1/4
        assert_eq!(b.top1(), Some(0.4)); // 2/5
        assert_eq!(b.paired, 4);
        // Negative drop when the scenario does better.
        let mut m = Metrics::new(vec![]);
        m.add_frame(&[
            rec("x", "clean", Some(1), &[0]),
            rec("x", "sharpen", Some(1), &[1]),
        ]);
        assert_eq!(m.tally("sharpen").unwrap().drop(), Some(-1.0));
    }

    #[test]
    fn undefined_without_labels_or_clean() {
        let mut m = Metrics::new(keys(&["clean", "fog"]));
        m.add_frame(&[rec("a", "fog", None, &[1])]);
        let f = m.tally("fog").unwrap();
        assert_eq!(
            (f.top1(), f.top1_ci95(), f.top5(), f.drop(), f.agreement()),
            (None, None, None, None, None)
        );
        let c = m.tally("clean").unwrap();
        assert_eq!(c.n, 0);
        assert_eq!(c.top1(), None);
    }

    #[test]
    fn order_is_plan_then_first_seen_without_duplicates() {
        let mut m = Metrics::new(keys(&["clean", "b", "clean", "a"]));
        m.add_frame(&[
            rec("x", "z", None, &[1]),
            rec("x", "a", None, &[1]),
            rec("x", "y", None, &[1]),
        ]);
        assert_eq!(m.keys(), keys(&["clean", "b", "a", "z", "y"]).as_slice());
        let names: Vec<&str> = m.tallies().map(|(k, _)| k).collect();
        assert_eq!(names, vec!["clean", "b", "a", "z", "y"]);
        assert!(m.tally("q").is_none());
    }

    #[test]
    fn latency_per_stage_over_all_records() {
        let mut m = Metrics::new(vec![]);
        m.add_frame(&[
            timed(
                rec("a", "clean", None, &[1]),
                &[("infer", 2.0), ("total", 5.0), ("bogus", 1.0)],
            ),
            timed(
                rec("a", "fog", None, &[1]),
                &[("infer", 4.0), ("total", f64::NAN)],
            ),
        ]);
        let stages: Vec<&str> = m.latencies().map(|(s, _)| s.name()).collect();
        assert_eq!(stages, vec!["infer", "total"]);
        assert_eq!(m.latency(Stage::Infer).len(), 2);
        assert_eq!(m.latency(Stage::Infer).quantiles().max, 4.0);
        assert_eq!(m.latency(Stage::Total).len(), 1);
        assert!(m.latency(Stage::Decode).is_empty());
        assert!(Stage::parse("bogus").is_none());
    }
}
