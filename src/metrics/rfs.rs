//! Relative Foreground Sensitivity (Hard ImageNet,
//! docs/hard-imagenet.md#relative-foreground-sensitivity) from the `region_noise/*` scenarios: per
//! noise type and level, class-balanced accuracies under foreground-only and background-only noise
//! and their normalised difference.
//!
//! Pooling follows the reference (`rfs.py`, `noisy_fg_bg_accs`): every trial adds its records to the
//! same per-class counts, so a class's accuracy is (correct over all trials) / (records over all
//! trials); the class-balanced accuracy is the plain mean of those per-class accuracies over the
//! classes seen. With the same frames in every trial this equals the mean of the per-trial accuracies;
//! it differs only when a trial lost records (a failed variant). The foreground and background sides
//! are pooled separately, each over its own records and classes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ClassTally;
use crate::key::ScenarioKey;

/// The level the reference calls typical (L∞-style noise, σ = 0.25;
/// docs/hard-imagenet.md#region-noise).
const TYPICAL: (&str, &str) = ("linf", "0.25");

/// RFS = (acc_bg − acc_fg) / (2·min(ā, 1 − ā)) with ā = (acc_fg + acc_bg)/2, and 0 when ā is exactly 0
/// or 1 (docs/hard-imagenet.md#rfs-from-class-balanced-accuracies). In [−1, 1] for accuracies in
/// [0, 1]; positive = the model depends more on the foreground (good).
fn rfs(acc_fg: f64, acc_bg: f64) -> f64 {
    let avg = 0.5 * (acc_fg + acc_bg);
    if avg == 0.0 || avg == 1.0 {
        0.0
    } else {
        (acc_bg - acc_fg) / (2.0 * avg.min(1.0 - avg))
    }
}

/// The mean over classes of the per-class top-1 accuracy (classes without records are not counted);
/// `None` without any class.
fn class_balanced(classes: &BTreeMap<usize, ClassTally>) -> Option<f64> {
    let accs: Vec<f64> = classes.values().filter_map(ClassTally::top1).collect();
    (!accs.is_empty()).then(|| accs.iter().sum::<f64>() / accs.len() as f64)
}

/// One noise type and level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RfsLevel {
    /// Class-balanced top-1 accuracy under foreground (object) noise, a fraction.
    pub(crate) acc_fg: Option<f64>,
    /// Class-balanced top-1 accuracy under background noise, a fraction.
    pub(crate) acc_bg: Option<f64>,
    /// [`rfs`] of the two; `null` unless both accuracies are defined.
    pub(crate) rfs: Option<f64>,
    /// Trials found (distinct `t<k>` of this level, either side).
    pub(crate) trials: usize,
    /// Labelled records under foreground noise, all trials.
    pub(crate) n_fg: u64,
    /// Labelled records under background noise, all trials.
    pub(crate) n_bg: u64,
    /// Truth classes seen (either side).
    pub(crate) classes: usize,
}

/// `summary.json`'s `metrics.rfs` (`{"noise": {"linf": {"0.25": {...}}, "l2": {...}}, "typical": ...}`):
/// levels per noise type in increasing order (`linf`: σ; `l2`: the
/// noise's L2 norm at 224², docs/hard-imagenet.md#region-noise), and the typical level (`linf`
/// 0.25) when present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rfs {
    /// Noise type (`linf`, `l2`, any other in order of first appearance) → level (as written in the
    /// key) → results.
    #[serde(with = "crate::ordered")]
    pub(crate) noise: Vec<(String, Levels)>,
    /// The `linf` 0.25 level, the reference's headline number; `null` when not in the plan.
    pub(crate) typical: Option<RfsLevel>,
}

/// The levels of one noise type, in increasing numeric order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Levels(#[serde(with = "crate::ordered")] pub(crate) Vec<(String, RfsLevel)>);

#[derive(Default)]
struct Pool<'a> {
    fg: BTreeMap<usize, ClassTally>,
    bg: BTreeMap<usize, ClassTally>,
    trials: Vec<&'a str>,
}

/// The RFS metrics from per-scenario, per-class counts (`(scenario key, counts)`; keys other than
/// `region_noise/<fg|bg>/<type>/<level>/t<k>` are ignored). `None` when no such key is present.
pub(crate) fn compute<'a>(
    classes: impl IntoIterator<Item = (&'a str, &'a BTreeMap<usize, ClassTally>)>,
) -> Option<Rfs> {
    // (type, level) in order of first appearance, pooled over trials.
    let mut pools: Vec<((&str, &str), Pool)> = Vec::new();
    for (key, counts) in classes {
        let ScenarioKey::RegionNoise {
            foreground: fg,
            norm: kind,
            level,
            trial,
        } = ScenarioKey::parse(key)
        else {
            continue;
        };
        let i = match pools.iter().position(|(k, _)| *k == (kind, level)) {
            Some(i) => i,
            None => {
                pools.push(((kind, level), Pool::default()));
                pools.len() - 1
            }
        };
        let pool = &mut pools[i].1;
        if !pool.trials.contains(&trial) {
            pool.trials.push(trial);
        }
        let side = if fg { &mut pool.fg } else { &mut pool.bg };
        for (class, c) in counts {
            let s = side.entry(*class).or_default();
            s.n += c.n;
            s.top1_correct += c.top1_correct;
        }
    }
    if pools.is_empty() {
        return None;
    }
    let mut types: Vec<(String, Levels)> = Vec::new();
    for ((kind, level), pool) in pools {
        let (acc_fg, acc_bg) = (class_balanced(&pool.fg), class_balanced(&pool.bg));
        let mut seen: Vec<usize> = pool.fg.keys().chain(pool.bg.keys()).copied().collect();
        seen.sort_unstable();
        seen.dedup();
        let result = RfsLevel {
            acc_fg,
            acc_bg,
            rfs: acc_fg.zip(acc_bg).map(|(f, b)| rfs(f, b)),
            trials: pool.trials.len(),
            n_fg: pool.fg.values().map(|c| c.n).sum(),
            n_bg: pool.bg.values().map(|c| c.n).sum(),
            classes: seen.len(),
        };
        match types.iter_mut().find(|(k, _)| k == kind) {
            Some((_, levels)) => levels.0.push((level.to_string(), result)),
            None => types.push((kind.to_string(), Levels(vec![(level.to_string(), result)]))),
        }
    }
    // Known types first, then by first appearance; levels by value (unparsable ones last, as found).
    let rank = |k: &str| match k {
        "linf" => 0,
        "l2" => 1,
        _ => 2,
    };
    types.sort_by_key(|(k, _)| rank(k));
    for (_, levels) in &mut types {
        levels.0.sort_by(|(a, _), (b, _)| {
            let (a, b) = (a.parse::<f64>().ok(), b.parse::<f64>().ok());
            match (a, b) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            }
        });
    }
    let typical = types
        .iter()
        .find(|(k, _)| k == TYPICAL.0)
        .and_then(|(_, levels)| levels.0.iter().find(|(l, _)| l == TYPICAL.1))
        .map(|(_, r)| r.clone());
    Some(Rfs {
        noise: types,
        typical,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(v: &[(usize, u64, u64)]) -> BTreeMap<usize, ClassTally> {
        v.iter()
            .map(|&(c, n, k)| (c, ClassTally { n, top1_correct: k }))
            .collect()
    }

    #[test]
    fn formula_and_edge_cases() {
        // ā = 0.5: (0.75 − 0.25) / (2 · 0.5) = 0.5.
        assert_eq!(rfs(0.25, 0.75), 0.5);
        // ā = 0.8: min(ā, 1 − ā) = 0.2; (1.0 − 0.6) / 0.4 = 1.
        assert!((rfs(0.6, 1.0) - 1.0).abs() < 1e-12);
        // ā = 0.1: (0 − 0.2) / 0.2 = −1.
        assert!((rfs(0.2, 0.0) + 1.0).abs() < 1e-12);
        // Degenerate averages give 0, not a division by zero.
        assert_eq!(rfs(0.0, 0.0), 0.0);
        assert_eq!(rfs(1.0, 1.0), 0.0);
        // Equal accuracies give 0; the sign follows acc_bg − acc_fg.
        assert_eq!(rfs(0.4, 0.4), 0.0);
        assert!(rfs(0.7, 0.3) < 0.0);
    }

    #[test]
    fn class_balanced_is_the_mean_of_class_accuracies() {
        // Class 0: 9/10, class 1: 0/2 → (0.9 + 0) / 2, not 9/12.
        let c = counts(&[(0, 10, 9), (1, 2, 0)]);
        assert!((class_balanced(&c).unwrap() - 0.45).abs() < 1e-15);
        assert_eq!(class_balanced(&BTreeMap::new()), None);
        // A class without records does not count.
        let c = counts(&[(0, 4, 4), (3, 0, 0)]);
        assert_eq!(class_balanced(&c), Some(1.0));
    }

    #[test]
    fn trials_pool_per_class_and_levels_sort() {
        let t = |v| counts(v);
        let data = vec![
            ("clean", t(&[(0, 5, 5)])),
            // linf 0.25, two trials. fg: class 0 1/2 + 0/2 → 1/4; class 1 2/2 + 2/2 → 1.
            ("region_noise/fg/linf/0.25/t1", t(&[(0, 2, 1), (1, 2, 2)])),
            ("region_noise/bg/linf/0.25/t1", t(&[(0, 2, 2), (1, 2, 2)])),
            ("region_noise/fg/linf/0.25/t2", t(&[(0, 2, 0), (1, 2, 2)])),
            // bg: class 0 2/2 + 1/2 → 3/4; class 1 4/4 → 1.
            ("region_noise/bg/linf/0.25/t2", t(&[(0, 2, 1), (1, 2, 2)])),
            ("region_noise/fg/l2/30/t1", t(&[(0, 1, 1)])),
            ("region_noise/bg/l2/30/t1", t(&[(0, 1, 1)])),
            ("region_noise/fg/linf/0.125/t1", t(&[(0, 1, 0)])),
            ("region_noise/bg/linf/0.125/t1", t(&[])),
            ("region_noise/odd", t(&[(0, 1, 1)])),
        ];
        let r = compute(data.iter().map(|(k, c)| (*k, c))).unwrap();
        let kinds: Vec<&str> = r.noise.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds, vec!["linf", "l2"]);
        let linf = &r.noise[0].1.0;
        let levels: Vec<&str> = linf.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(levels, vec!["0.125", "0.25"]);
        let l = &linf[1].1;
        let (fg, bg) = ((0.25 + 1.0) / 2.0, (0.75 + 1.0) / 2.0);
        assert_eq!((l.acc_fg, l.acc_bg), (Some(fg), Some(bg)));
        assert!((l.rfs.unwrap() - rfs(fg, bg)).abs() < 1e-15);
        assert_eq!((l.trials, l.n_fg, l.n_bg, l.classes), (2, 8, 8, 2));
        assert_eq!(r.typical.as_ref(), Some(l));
        // One side without labelled records: accuracies as far as defined, no RFS.
        let low = &linf[0].1;
        assert_eq!((low.acc_fg, low.acc_bg, low.rfs), (Some(0.0), None, None));
        // Both accuracies 1: RFS 0 by the reference's rule.
        assert_eq!(r.noise[1].1.0[0].1.rfs, Some(0.0));
        // JSON: type → level → fields, in this order.
        let v = serde_json::to_value(&r).unwrap();
        let order: Vec<&str> = v["noise"]["linf"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(order, vec!["0.125", "0.25"]);
        assert_eq!(v["typical"]["trials"], 2);
        assert_eq!(serde_json::from_value::<Rfs>(v).unwrap(), r);
    }

    #[test]
    fn absent_without_noise_scenarios() {
        let c = counts(&[(0, 1, 1)]);
        assert_eq!(compute([("clean", &c), ("ablation/gray", &c)]), None);
        let r = compute([("region_noise/fg/l2/60/t1", &c)]).unwrap();
        assert_eq!(r.typical, None);
    }
}
