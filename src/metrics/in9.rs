//! IN-9 / Backgrounds Challenge metrics (docs/in9.md): accuracy per variation, BG-gap and the
//! adversarial-background challenge accuracy.
//!
//! Class-map aware by construction: a record's `pred` is already mapped into the dataset's label
//! space (ImageNet-1k → IN-9 through `in_to_in9`, docs/in9.md#classes-and-the-imagenet-mapping),
//! and an unmapped prediction (−1) never equals a truth, so it counts as wrong here exactly as in
//! the reference's `in9_eval.py`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::key::ScenarioKey;

/// The outcome of the adversarial-background challenge (docs/in9.md#challenge-accuracy): each kept
/// foreground was composited onto backgrounds until one prediction was wrong (then it is
/// *vulnerable*) or every background was tried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ChallengeTally {
    /// Foregrounds evaluated (each with a mask and a truth).
    pub(crate) foregrounds: u64,
    /// Of those, foregrounds with at least one wrong prediction (after mapping to the dataset
    /// classes; an unmapped prediction is wrong).
    pub(crate) vulnerable: u64,
    /// Backgrounds in the challenge set (every class, the foreground's own included).
    pub(crate) backgrounds: u64,
    /// Composites actually evaluated (early stop makes this ≤ foregrounds × backgrounds).
    pub(crate) composites: u64,
    /// Whether every kept foreground was evaluated against every background it needed (false when
    /// the run was interrupted or a bound cut the challenge short).
    pub(crate) complete: bool,
    /// Composites whose model output row could not be scored (NaN/inf, or `probabilities` that are
    /// not), counted and never scored: like a failed variant of the main pass.
    #[serde(default)]
    pub(crate) failed: u64,
    /// Foregrounds left undecided: no scored composite fooled the model, but some could not be
    /// scored, so surviving every background is not shown. Not in `foregrounds` (nor in the
    /// accuracy).
    #[serde(default)]
    pub(crate) undecided: u64,
}

impl ChallengeTally {
    /// Challenge accuracy = 1 − vulnerable / foregrounds, a fraction in [0, 1]; `None` without
    /// foregrounds (docs/in9.md#challenge-accuracy).
    pub(crate) fn accuracy(&self) -> Option<f64> {
        (self.foregrounds > 0).then(|| 1.0 - self.vulnerable as f64 / self.foregrounds as f64)
    }
}

/// `summary.json`'s `run.challenge`: what the challenge pass did (the post pass writes it, `robustream
/// merge` sums the shards' entries; docs/benchmarks-usage.md#adversarial-backgrounds-the-backgrounds-challenge).
/// A pass that did not apply has `applicable: false` and a `reason` (with the counts a merge sums);
/// one that applied has the counts of [`ChallengeTally`], its bounds and its cost. Every field
/// but `applicable` is optional so that an entry of an older format loads as written and is written
/// back with the same keys; a field this robustream does not know is kept, in order, in
/// [`ChallengeEntry::extra`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct ChallengeEntry {
    /// Whether the pass had foregrounds and backgrounds to composite.
    pub(crate) applicable: bool,
    /// Why it did not apply (or did not run: the main pass did not complete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// [`ChallengeTally::foregrounds`] (not applicable: the foregrounds kept, 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) foregrounds: Option<u64>,
    /// [`ChallengeTally::vulnerable`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) vulnerable: Option<u64>,
    /// [`ChallengeTally::backgrounds`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) backgrounds: Option<u64>,
    /// [`ChallengeTally::composites`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) composites: Option<u64>,
    /// [`ChallengeTally::failed`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) failed: Option<u64>,
    /// [`ChallengeTally::undecided`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) undecided: Option<u64>,
    /// Foregrounds × backgrounds: the composites without early stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) upper_bound: Option<u64>,
    /// [`ChallengeTally::complete`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) complete: Option<bool>,
    /// [`ChallengeTally::accuracy`], null without foregrounds.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) accuracy: Option<Option<f64>>,
    /// Where the backgrounds came from (the IN-9 release's only_bg_t, or the stream's pool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) background_source: Option<String>,
    /// Whether the bounds sampled the candidates (foregrounds or backgrounds left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) sampled: Option<bool>,
    /// Masked, labelled frames seen (the foregrounds are sampled from them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) candidates: Option<u64>,
    /// Masks that could not serve (empty, or all foreground).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unusable_masks: Option<u64>,
    /// Wall time of the pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) seconds: Option<f64>,
    /// Compositing and normalising per composite, milliseconds (null without composites).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) composite_ms: Option<Option<f64>>,
    /// Engine time per composite, milliseconds (null without composites).
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::contract::present"
    )]
    pub(crate) infer_ms: Option<Option<f64>>,
    /// Fields this robustream does not know (a newer format's), kept in order.
    #[serde(flatten)]
    pub(crate) extra: Map<String, Value>,
}

impl ChallengeEntry {
    /// The entry of a pass that did not apply, saying why.
    pub(crate) fn not_applicable(reason: impl Into<String>) -> Self {
        Self {
            reason: Some(reason.into()),
            ..Self::default()
        }
    }
}

/// The IN-9 test-set variations in the reference's order
/// (docs/in9.md#variations-and-release-layout); `original` is our `clean`, every other one is the
/// scenario `background/<variation>`.
const VARIATIONS: [&str; 8] = [
    "original",
    "only_bg_b",
    "only_bg_t",
    "no_fg",
    "only_fg",
    "mixed_same",
    "mixed_rand",
    "mixed_next",
];

/// The scenario key of an IN-9 variation (`original` → `clean`, else `background/<variation>`).
pub(crate) fn scenario_key(variation: &str) -> String {
    if variation == "original" {
        ScenarioKey::Clean
    } else {
        ScenarioKey::Background { leaf: variation }
    }
    .to_string()
}

/// `summary.json`'s `metrics.in9` (docs/in9.md#evaluation-preprocessing, docs/in9.md#bg-gap,
/// docs/in9.md#challenge-accuracy). All values are fractions in [0, 1] (the gap in [−1, 1]); `null`
/// where undefined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct In9 {
    /// Top-1 accuracy per variation present in the plan, in [`VARIATIONS`] order (`original` =
    /// the `clean` scenario; listed only when some other variation is present). Accuracy =
    /// #(mapped top-1 == label) / #labelled records (docs/in9.md#evaluation-preprocessing).
    #[serde(with = "crate::ordered")]
    pub(crate) accuracy: Vec<(String, Option<f64>)>,
    /// BG-Gap = accuracy(mixed_same) − accuracy(mixed_rand) (docs/in9.md#bg-gap); `null` unless
    /// both variations have an accuracy.
    pub(crate) bg_gap: Option<f64>,
    /// Challenge accuracy = 1 − vulnerable / foregrounds (docs/in9.md#challenge-accuracy); `null`
    /// when no challenge ran or it had no foreground.
    pub(crate) challenge_accuracy: Option<f64>,
    /// The challenge's raw counts (foregrounds, vulnerable, backgrounds, composites, complete), when
    /// a challenge ran. Kept in `summary.json` so `robustream report` can rebuild the section from
    /// the records plus the previous summary.
    pub(crate) challenge: Option<ChallengeTally>,
}

/// The IN-9 metrics from per-scenario top-1 accuracies (`(scenario key, top-1)` in any order) and the
/// challenge's outcome, if one ran. `None` when neither a `background/<IN-9 variation>` scenario nor a
/// challenge is present (the plan had nothing of IN-9).
pub(crate) fn compute<'a>(
    top1: impl IntoIterator<Item = (&'a str, Option<f64>)>,
    challenge: Option<ChallengeTally>,
) -> Option<In9> {
    let top1: Vec<(&str, Option<f64>)> = top1.into_iter().collect();
    let find = |v: &str| {
        let key = scenario_key(v);
        top1.iter().find(|(k, _)| *k == key).map(|(_, a)| *a)
    };
    let found: Vec<(String, Option<f64>)> = VARIATIONS
        .iter()
        .filter_map(|v| find(v).map(|a| (v.to_string(), a)))
        .collect();
    let any_variation = found.iter().any(|(v, _)| v != "original");
    if !any_variation && challenge.is_none() {
        return None;
    }
    let accuracy = if any_variation { found } else { Vec::new() };
    let acc = |v: &str| accuracy.iter().find(|(k, _)| k == v).and_then(|(_, a)| *a);
    let bg_gap = match (acc("mixed_same"), acc("mixed_rand")) {
        (Some(same), Some(rand)) => Some(same - rand),
        _ => None,
    };
    Some(In9 {
        bg_gap,
        challenge_accuracy: challenge.and_then(|c| c.accuracy()),
        challenge,
        accuracy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry reads back as written, key for key (an older one's missing fields stay missing, a
    /// newer one's unknown fields stay, nulls stay null), and its fields are typed.
    #[test]
    fn a_challenge_entry_round_trips_as_written() {
        for text in [
            r#"{"applicable":true,"foregrounds":2,"vulnerable":1,"backgrounds":8,"composites":9,"failed":0,"undecided":0,"upper_bound":16,"complete":true,"accuracy":0.5,"background_source":"pool","sampled":false,"candidates":2,"unusable_masks":0,"seconds":0.25,"composite_ms":null,"infer_ms":1.5}"#,
            r#"{"applicable":false,"reason":"the main pass did not complete"}"#,
            r#"{"applicable":true,"foregrounds":3,"vulnerable":0,"accuracy":null,"a_newer_field":[1]}"#,
        ] {
            let e: ChallengeEntry = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&e).unwrap(), text);
        }
        let e: ChallengeEntry =
            serde_json::from_str(r#"{"applicable":true,"accuracy":null,"infer_ms":2.0}"#).unwrap();
        assert_eq!(
            (e.accuracy, e.infer_ms, e.composite_ms),
            (Some(None), Some(Some(2.0)), None)
        );
        assert!(serde_json::from_str::<ChallengeEntry>(r#"{"foregrounds":"two"}"#).is_err());
        assert_eq!(
            serde_json::to_string(&ChallengeEntry::not_applicable("why")).unwrap(),
            r#"{"applicable":false,"reason":"why"}"#
        );
    }

    #[test]
    fn challenge_accuracy_is_one_minus_vulnerable_share() {
        let t = ChallengeTally {
            foregrounds: 8,
            vulnerable: 6,
            backgrounds: 20,
            composites: 70,
            complete: true,
            ..ChallengeTally::default()
        };
        assert_eq!(t.accuracy(), Some(0.25));
        assert_eq!(ChallengeTally::default().accuracy(), None);
    }

    #[test]
    fn accuracy_per_variation_in_reference_order_and_gap() {
        let top1 = [
            ("clean", Some(0.9)),
            ("background/mixed_rand", Some(0.625)),
            ("background/only_fg", None),
            ("background/mixed_same", Some(0.75)),
            ("corruption/fog/1", Some(0.1)),
        ];
        let m = compute(top1, None).unwrap();
        assert_eq!(
            m.accuracy,
            vec![
                ("original".to_string(), Some(0.9)),
                ("only_fg".to_string(), None),
                ("mixed_same".to_string(), Some(0.75)),
                ("mixed_rand".to_string(), Some(0.625)),
            ]
        );
        assert_eq!(m.bg_gap, Some(0.125));
        assert_eq!((m.challenge_accuracy, m.challenge), (None, None));
        // No gap without both mixed variations having an accuracy.
        let m = compute([("background/mixed_same", Some(0.5))], None).unwrap();
        assert_eq!(m.bg_gap, None);
        let m = compute(
            [
                ("background/mixed_same", Some(0.5)),
                ("background/mixed_rand", None),
            ],
            None,
        )
        .unwrap();
        assert_eq!(m.bg_gap, None);
    }

    #[test]
    fn absent_without_in9_scenarios_or_challenge() {
        assert_eq!(
            compute(
                [("clean", Some(1.0)), ("background/blur_bg", Some(0.5))],
                None
            ),
            None
        );
        let t = ChallengeTally {
            foregrounds: 4,
            vulnerable: 1,
            backgrounds: 3,
            composites: 9,
            complete: false,
            ..ChallengeTally::default()
        };
        // A challenge alone makes the section, without per-variation accuracies.
        let m = compute([("clean", Some(1.0))], Some(t)).unwrap();
        assert!(m.accuracy.is_empty());
        assert_eq!(m.challenge_accuracy, Some(0.75));
        assert_eq!(m.challenge, Some(t));
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["challenge"]["complete"], false);
        assert_eq!(serde_json::from_value::<In9>(json).unwrap(), m);
    }
}
