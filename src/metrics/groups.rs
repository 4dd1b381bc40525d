//! Group robustness (docs/groups.md): accuracy per group of frames — a held-out style or subtype
//! (ICONS-50, docs/groups.md#icons-50), a production line, a shift, a camera — with its interval,
//! the gap to a named reference group or else to the rest of the groups, and the worst group; each
//! pooled over the scenarios and per scenario.
//!
//! A record carries its frame's groups (`Record::groups`, dimension → value). [`GroupTallies`] is
//! the streaming state, fed record by record through `Metrics::add_frame`, so the live figures,
//! the final summary and a recompute from `records.jsonl` are the same numbers; [`GroupTallies::report`]
//! is `summary.json`'s `metrics.groups` ([`Groups`]).
//!
//! Class-map aware like every accuracy here: a record's `pred` and `hit5` are already in the
//! dataset's label space (`classmap`), so a subtype scored as its broad class (ICONS-50's subtype
//! robustness) is a class map from the model's classes to the broad classes, and the subtype a
//! group (docs/groups.md#subtypes-and-broad-classes).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Record;
use super::accuracy::{Z95, fraction, newcombe_unpaired, wilson_interval};

/// Counts of one group under one scenario.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Records.
    pub(crate) n: u64,
    /// Records with a truth.
    pub(crate) labelled: u64,
    /// Labelled records whose top-1 is the truth.
    pub(crate) top1: u64,
    /// Labelled records whose mapped top-5 holds the truth.
    pub(crate) top5: u64,
}

impl Counts {
    fn add(&mut self, r: &Record) {
        self.n += 1;
        if let Some(correct) = r.top1_correct() {
            self.labelled += 1;
            self.top1 += u64::from(correct);
            self.top5 += u64::from(r.top5_correct() == Some(true));
        }
    }

    fn plus(self, o: Counts) -> Counts {
        Counts {
            n: self.n + o.n,
            labelled: self.labelled + o.labelled,
            top1: self.top1 + o.top1,
            top5: self.top5 + o.top5,
        }
    }

    fn minus(self, o: Counts) -> Counts {
        Counts {
            n: self.n.saturating_sub(o.n),
            labelled: self.labelled.saturating_sub(o.labelled),
            top1: self.top1.saturating_sub(o.top1),
            top5: self.top5.saturating_sub(o.top5),
        }
    }
}

/// How groups are compared: the reference group of each dimension that has one
/// (`[source.groups] reference`, docs/groups.md#gap); a dimension without one compares each group
/// with the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct GroupSettings {
    /// Dimension → its reference group.
    pub(crate) reference: BTreeMap<String, String>,
}

impl GroupSettings {
    /// The settings `[source.groups]` gives (none: no reference group).
    pub(crate) fn of(config: Option<&crate::source::groups::GroupsConfig>) -> Self {
        Self {
            reference: config.map(|g| g.reference.clone()).unwrap_or_default(),
        }
    }
}

/// The streaming state: per dimension, per group, the counts under each scenario.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupTallies {
    settings: GroupSettings,
    /// Dimension → group → counts by scenario slot (`Metrics`' scenario index).
    dims: BTreeMap<String, BTreeMap<String, Vec<Counts>>>,
}

impl GroupTallies {
    /// Empty state comparing groups by `settings`.
    pub(crate) fn new(settings: GroupSettings) -> Self {
        Self {
            settings,
            dims: BTreeMap::new(),
        }
    }

    /// Whether no record with groups was added.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.dims.is_empty()
    }

    /// Counts `r` in each of its groups, under the scenario at `slot`.
    pub(crate) fn add(&mut self, r: &Record, slot: usize) {
        for (dim, value) in &r.groups {
            let by_slot = match self.dims.get_mut(dim) {
                Some(groups) => groups,
                None => self.dims.entry(dim.clone()).or_default(),
            };
            let counts = match by_slot.get_mut(value) {
                Some(c) => c,
                None => by_slot.entry(value.clone()).or_default(),
            };
            if counts.len() <= slot {
                counts.resize(slot + 1, Counts::default());
            }
            counts[slot].add(r);
        }
    }

    /// `metrics.groups` ([`Groups`]) with `scenarios` the scenario keys by slot (report order);
    /// `None` when no record had groups.
    pub(crate) fn report(&self, scenarios: &[String]) -> Option<Groups> {
        if self.dims.is_empty() {
            return None;
        }
        let dimensions = self
            .dims
            .iter()
            .map(|(dim, groups)| {
                let reference = self.settings.reference.get(dim).cloned();
                (
                    dim.clone(),
                    dimension(groups, reference.as_deref(), scenarios),
                )
            })
            .collect();
        Some(Groups { dimensions })
    }
}

/// `summary.json`'s `metrics.groups` (docs/groups.md#summary): one entry per dimension, in name
/// order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Groups {
    /// Dimension → its groups.
    #[serde(with = "crate::ordered")]
    pub(crate) dimensions: Vec<(String, Dimension)>,
}

/// One dimension's groups (docs/groups.md#summary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Dimension {
    /// The reference group the gaps are taken to; `null`: each group's gap is to the rest.
    pub(crate) reference: Option<String>,
    /// Group → its figures, in name order.
    #[serde(with = "crate::ordered")]
    pub(crate) groups: Vec<(String, Group)>,
    /// The group of lowest top-1 over all its records (`null` without labels); ties go to the
    /// first in name order.
    pub(crate) worst: Option<Worst>,
    /// The worst group per scenario, report order (scenarios without labelled records left out).
    #[serde(with = "crate::ordered")]
    pub(crate) worst_by_scenario: Vec<(String, Worst)>,
}

/// One group's figures: over all its records (every scenario), and per scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Group {
    /// Over all the group's records.
    #[serde(flatten)]
    pub(crate) all: Cell,
    /// Per scenario the group has records of, report order.
    #[serde(with = "crate::ordered")]
    pub(crate) scenarios: Vec<(String, Cell)>,
}

/// A group's accuracy over some records, and its gap (docs/groups.md#gap). Fractions in [0, 1]
/// (the gap in [−1, 1]); `null` where undefined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cell {
    /// Records.
    pub(crate) n: u64,
    /// Of those, records with a truth.
    pub(crate) n_labelled: u64,
    /// Top-1 accuracy over the labelled records.
    pub(crate) top1: Option<f64>,
    /// Its 95 % Wilson interval.
    pub(crate) top1_ci95: Option<[f64; 2]>,
    /// Top-5 accuracy over the labelled records.
    pub(crate) top5: Option<f64>,
    /// Its 95 % Wilson interval.
    pub(crate) top5_ci95: Option<[f64; 2]>,
    /// The reference group's top-1 (or the rest's, without a reference) minus this group's, on
    /// the same scenarios: positive when this group does worse. `null` for the reference itself,
    /// and without labelled records on either side.
    pub(crate) gap: Option<f64>,
    /// Its 95 % interval: Newcombe's hybrid score interval for independent proportions
    /// (docs/compare.md#unpaired-interval).
    pub(crate) gap_ci95: Option<[f64; 2]>,
}

/// The worst group: its name and top-1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Worst {
    /// The group.
    pub(crate) group: String,
    /// Its top-1.
    pub(crate) top1: f64,
}

/// The figures of one dimension, its groups' counts by slot.
fn dimension(
    groups: &BTreeMap<String, Vec<Counts>>,
    reference: Option<&str>,
    scenarios: &[String],
) -> Dimension {
    let slots = groups.values().map(Vec::len).max().unwrap_or(0);
    let at = |counts: &[Counts], slot: usize| counts.get(slot).copied().unwrap_or_default();
    let pooled = |counts: &[Counts]| counts.iter().fold(Counts::default(), |a, &c| a.plus(c));
    // Per slot: the dimension's total and the reference's counts.
    let total_at: Vec<Counts> = (0..slots)
        .map(|s| {
            groups
                .values()
                .fold(Counts::default(), |a, c| a.plus(at(c, s)))
        })
        .collect();
    let total_all = total_at.iter().fold(Counts::default(), |a, &c| a.plus(c));
    let reference_counts = reference.and_then(|r| groups.get(r));
    let groups_out: Vec<(String, Group)> = groups
        .iter()
        .map(|(name, counts)| {
            let all = cell(
                pooled(counts),
                other_side(
                    name,
                    reference,
                    pooled(counts),
                    total_all,
                    reference_counts.map(|c| pooled(c)),
                ),
            );
            let per_scenario = (0..slots)
                .filter(|&s| at(counts, s).n > 0)
                .filter_map(|s| {
                    let key = scenarios.get(s)?.clone();
                    let mine = at(counts, s);
                    let other = other_side(
                        name,
                        reference,
                        mine,
                        total_at[s],
                        reference_counts.map(|c| at(c, s)),
                    );
                    Some((key, cell(mine, other)))
                })
                .collect();
            (
                name.clone(),
                Group {
                    all,
                    scenarios: per_scenario,
                },
            )
        })
        .collect();
    let worst = worst_of(groups_out.iter().map(|(g, v)| (g.as_str(), v.all.top1)));
    let worst_by_scenario = (0..slots)
        .filter_map(|s| {
            let key = scenarios.get(s)?;
            let w = worst_of(groups.iter().map(|(g, c)| {
                let c = at(c, s);
                (g.as_str(), fraction(c.top1, c.labelled))
            }))?;
            Some((key.clone(), w))
        })
        .collect();
    Dimension {
        reference: reference.map(str::to_string),
        groups: groups_out,
        worst,
        worst_by_scenario,
    }
}

/// What a group is compared with: the reference group's counts (none for the reference itself),
/// or without a reference the rest of the dimension's (`total` less the group's own; none when
/// the group is the only one).
fn other_side(
    name: &str,
    reference: Option<&str>,
    mine: Counts,
    total: Counts,
    reference_counts: Option<Counts>,
) -> Option<Counts> {
    match reference {
        Some(r) if r == name => None,
        Some(_) => reference_counts,
        None => Some(total.minus(mine)).filter(|rest| rest.n > 0),
    }
}

/// A group's figures over `mine`, its gap to `other` (docs/groups.md#gap).
fn cell(mine: Counts, other: Option<Counts>) -> Cell {
    let interval = |part: u64| {
        (mine.labelled > 0).then(|| {
            let (lo, hi) = wilson_interval(part, mine.labelled, Z95);
            [lo, hi]
        })
    };
    let top1 = fraction(mine.top1, mine.labelled);
    let (gap, gap_ci95) = match other {
        Some(o) => match (fraction(o.top1, o.labelled), top1) {
            (Some(theirs), Some(own)) => (
                Some(theirs - own),
                newcombe_unpaired(o.top1, o.labelled, mine.top1, mine.labelled, Z95)
                    .map(|(lo, hi)| [lo, hi]),
            ),
            _ => (None, None),
        },
        None => (None, None),
    };
    Cell {
        n: mine.n,
        n_labelled: mine.labelled,
        top1,
        top1_ci95: interval(mine.top1),
        top5: fraction(mine.top5, mine.labelled),
        top5_ci95: interval(mine.top5),
        gap,
        gap_ci95,
    }
}

/// The group of lowest top-1 among `(group, top-1)`, the first of equals; `None` when none has a
/// top-1.
fn worst_of<'a>(groups: impl Iterator<Item = (&'a str, Option<f64>)>) -> Option<Worst> {
    let mut worst: Option<(&str, f64)> = None;
    for (g, top1) in groups {
        if let Some(a) = top1
            && worst.is_none_or(|(_, w)| a < w)
        {
            worst = Some((g, a));
        }
    }
    worst.map(|(group, top1)| Worst {
        group: group.to_string(),
        top1,
    })
}

#[cfg(test)]
mod tests;
