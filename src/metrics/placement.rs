//! Corner Cases / Hard-Spurious-ImageNet metrics (docs/corner-cases.md): accuracy per placement
//! group and object size, and the per-class centre and size scores
//! (docs/corner-cases.md#centre-and-size-scores).
//!
//! Scenario keys are `placement/[ar/]<background>/<position>/<size>`: background `own-gray` or
//! `own-tile` (the frame's own background with its object boxes filled — our stand-in for the paper's
//! inpainted own background, so both correspond to its Group_1/Group_2) or `other` (a pool background
//! of another frame: Group_3/Group_4); position `centre` (Groups 1, 3), `top-right` (Groups 2, 4) or
//! `random-corner` (the reference's `--random`); size 56, 84 or 112 on a 224² canvas; `ar/` the
//! aspect-preserving variant (docs/corner-cases.md#aspect-ratio-preserving-variant). The paper
//! reports per-group and worst-group accuracy
//! (docs/corner-cases.md#evaluation-and-difficulty-groups); we report each (background, position,
//! size) cell, pooled per group, size, background and position, and the worst cell, and the paper's
//! three difficulty categories ([`difficulty`]):
//! **easy** = the own background at sizes 84 and 112, **hard** = another class's background at 56 and
//! 84, **medium** = the rest (own at 56, other at 112), each over both positions (centre and corner).
//! The split is the paper's (Fatima et al., "Corner Cases", arXiv 2505.03569); it is not in the
//! reference code (Mishalfatima/Corner_Cases), which only numbers the four groups, so it follows
//! the paper's text. Our `own-gray` and `own-tile` both count as "own";
//! `random-corner` counts as "corner".
//!
//! Centre and size scores (docs/corner-cases.md#centre-and-size-scores, from a third-party summary
//! of the paper): for class c, the mean over its images of the mean over the image's objects of
//! `1 − ‖I − O‖∞` (centre score; I the image centre, O the object's box centre, both in normalised
//! [0, 1] coordinates, so the score is in [0.5, 1]) and of `h·w / (H·W)` (size score). The boxes
//! are the `clean` records' `boxes` (the frame's boxes at the scenario stage, or its mask's tight
//! box), so they describe the frames as evaluated.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::key::ScenarioKey;

/// Backgrounds in report order.
const BACKGROUNDS: [&str; 3] = ["own-gray", "own-tile", "other"];
/// Positions in report order.
const POSITIONS: [&str; 3] = ["centre", "top-right", "random-corner"];
/// The paper's difficulty categories in report order ([`difficulty`]).
const DIFFICULTIES: [&str; 3] = ["easy", "medium", "hard"];

/// The Corner Cases difficulty of a cell with this background and object size (px on 224²):
/// `easy` = own background at 84 or 112, `hard` = other background at 56 or 84, `medium` = own at
/// 56 or other at 112 (the position does not enter). `None` for a background or size outside the
/// paper's grid.
fn difficulty(background: &str, size: &str) -> Option<&'static str> {
    let own = match background {
        "own-gray" | "own-tile" => true,
        "other" => false,
        _ => return None,
    };
    Some(match (own, size) {
        (true, "84" | "112") => "easy",
        (true, "56") | (false, "112") => "medium",
        (false, "56" | "84") => "hard",
        _ => return None,
    })
}

/// One image's (centre score, size score): the means over its boxes of `1 − max(|cx − ½|, |cy − ½|)`
/// and of the box area, in normalised coordinates (docs/corner-cases.md#centre-and-size-scores).
/// `None` without boxes. Boxes with non-finite or inverted coordinates (a hand-edited records file)
/// count with area 0.
pub(crate) fn image_scores(boxes: &[[f32; 4]]) -> Option<(f64, f64)> {
    if boxes.is_empty() {
        return None;
    }
    let (mut centre, mut size) = (0.0, 0.0);
    for b in boxes {
        let [x0, y0, x1, y1] = b.map(f64::from);
        let (cx, cy) = (0.5 * (x0 + x1), 0.5 * (y0 + y1));
        centre += 1.0 - (cx - 0.5).abs().max((cy - 0.5).abs());
        let area = (x1 - x0) * (y1 - y0);
        size += if area.is_finite() && x1 >= x0 && y1 >= y0 {
            area
        } else {
            0.0
        };
    }
    let n = boxes.len() as f64;
    Some((centre / n, size / n))
}

/// Running sums of one class's per-image scores.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ObjectScores {
    /// Images (labelled `clean` records with boxes).
    pub(crate) images: u64,
    /// Σ per-image centre score.
    pub(crate) centre_sum: f64,
    /// Σ per-image size score.
    pub(crate) size_sum: f64,
}

impl ObjectScores {
    /// Adds one image's `(centre, size)` from [`image_scores`].
    pub(crate) fn add(&mut self, (centre, size): (f64, f64)) {
        self.images += 1;
        self.centre_sum += centre;
        self.size_sum += size;
    }
}

/// Correct / labelled counts of a cell and its accuracy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cell {
    /// Labelled records.
    pub(crate) n: u64,
    /// Of those, top-1 right.
    pub(crate) correct: u64,
    /// correct / n; `null` when n = 0.
    pub(crate) accuracy: Option<f64>,
}

impl Cell {
    fn add(&mut self, n: u64, correct: u64) {
        self.n += n;
        self.correct += correct;
        self.accuracy = super::accuracy::fraction(self.correct, self.n);
    }
}

/// The lowest-accuracy cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Worst {
    /// `<background>/<position>/<size>`.
    pub(crate) cell: String,
    /// Its accuracy.
    pub(crate) accuracy: f64,
}

/// One variant (square or aspect-preserving) of the placements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Variant {
    /// `<background>/<position>/<size>` → counts, in report order.
    #[serde(with = "crate::ordered")]
    pub(crate) cells: Vec<(String, Cell)>,
    /// `<background>/<position>` (the paper's groups) → counts pooled over sizes.
    #[serde(with = "crate::ordered")]
    pub(crate) groups: Vec<(String, Cell)>,
    /// Size (px on 224²) → counts pooled over groups.
    #[serde(with = "crate::ordered")]
    pub(crate) sizes: Vec<(String, Cell)>,
    /// Background → counts pooled over positions and sizes.
    #[serde(with = "crate::ordered")]
    pub(crate) backgrounds: Vec<(String, Cell)>,
    /// Position → counts pooled over backgrounds and sizes.
    #[serde(with = "crate::ordered")]
    pub(crate) positions: Vec<(String, Cell)>,
    /// The paper's `easy` / `medium` / `hard` ([`difficulty`]) → counts pooled over their cells
    /// (absent in summaries written before it existed).
    #[serde(default, with = "crate::ordered")]
    pub(crate) difficulties: Vec<(String, Cell)>,
    /// The cell with the lowest accuracy (first in report order on ties); `null` without labels.
    pub(crate) worst: Option<Worst>,
}

/// One class's centre and size scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClassScores {
    /// Images with boxes.
    pub(crate) images: u64,
    /// Mean per-image centre score, in [0.5, 1].
    pub(crate) centre_score: f64,
    /// Mean per-image size score (box area / image area), in [0, 1].
    pub(crate) size_score: f64,
}

/// `summary.json`'s `metrics.placement`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Placement {
    /// `square` and/or `ar` (aspect-preserving), when present.
    #[serde(with = "crate::ordered")]
    pub(crate) variants: Vec<(String, Variant)>,
    /// Truth class (dataset label index, as a string key) → centre and size scores.
    #[serde(with = "crate::ordered")]
    pub(crate) classes: Vec<(String, ClassScores)>,
}

/// Parts of a placement key: (aspect-preserving, background, position, size).
fn parse(key: &str) -> Option<(bool, &str, &str, &str)> {
    match ScenarioKey::parse(key) {
        ScenarioKey::Placement {
            keep_aspect,
            background,
            position,
            size,
        } => Some((keep_aspect, background, position, size)),
        _ => None,
    }
}

/// Rank of a name in a report order (unknown names after, in order of appearance).
fn rank(order: &[&str], name: &str) -> usize {
    order.iter().position(|o| *o == name).unwrap_or(order.len())
}

/// Adds `n`/`correct` to the entry `key` of an ordered list.
fn add_to(list: &mut Vec<(String, Cell)>, key: String, n: u64, correct: u64) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, c)) => c.add(n, correct),
        None => {
            let mut c = Cell::default();
            c.add(n, correct);
            list.push((key, c));
        }
    }
}

/// The placement metrics from per-scenario `(key, labelled records, top-1 right)` and the per-class
/// object scores. `None` when there is neither a placement scenario nor a class with boxes.
pub(crate) fn compute<'a>(
    lines: impl IntoIterator<Item = (&'a str, u64, u64)>,
    objects: &BTreeMap<usize, ObjectScores>,
) -> Option<Placement> {
    let mut found: Vec<(bool, &str, &str, &str, u64, u64)> = lines
        .into_iter()
        .filter_map(|(k, n, c)| parse(k).map(|(ar, bg, pos, size)| (ar, bg, pos, size, n, c)))
        .collect();
    let classes: Vec<(String, ClassScores)> = objects
        .iter()
        .filter(|(_, o)| o.images > 0)
        .map(|(c, o)| {
            let m = o.images as f64;
            (
                c.to_string(),
                ClassScores {
                    images: o.images,
                    centre_score: o.centre_sum / m,
                    size_score: o.size_sum / m,
                },
            )
        })
        .collect();
    if found.is_empty() && classes.is_empty() {
        return None;
    }
    // Report order: background, position, size (numeric); stable for unknown names.
    found.sort_by_key(|&(ar, bg, pos, size, ..)| {
        (
            ar,
            rank(&BACKGROUNDS, bg),
            rank(&POSITIONS, pos),
            size.parse::<u32>().unwrap_or(u32::MAX),
        )
    });
    let mut variants: Vec<(String, Variant)> = Vec::new();
    for (ar, bg, pos, size, n, correct) in found {
        let name = if ar { "ar" } else { "square" };
        if variants.last().is_none_or(|(k, _)| k != name) {
            variants.push((name.to_string(), Variant::default()));
        }
        let Some((_, v)) = variants.last_mut() else {
            continue;
        };
        add_to(&mut v.cells, format!("{bg}/{pos}/{size}"), n, correct);
        add_to(&mut v.groups, format!("{bg}/{pos}"), n, correct);
        add_to(&mut v.sizes, size.to_string(), n, correct);
        add_to(&mut v.backgrounds, bg.to_string(), n, correct);
        add_to(&mut v.positions, pos.to_string(), n, correct);
        if let Some(d) = difficulty(bg, size) {
            add_to(&mut v.difficulties, d.to_string(), n, correct);
        }
    }
    for (_, v) in &mut variants {
        v.sizes
            .sort_by_key(|(s, _)| s.parse::<u32>().unwrap_or(u32::MAX));
        v.positions.sort_by_key(|(p, _)| rank(&POSITIONS, p));
        v.difficulties.sort_by_key(|(d, _)| rank(&DIFFICULTIES, d));
        let mut worst: Option<Worst> = None;
        for (cell, c) in &v.cells {
            if let Some(a) = c.accuracy
                && worst.as_ref().is_none_or(|w| a < w.accuracy)
            {
                worst = Some(Worst {
                    cell: cell.clone(),
                    accuracy: a,
                });
            }
        }
        v.worst = worst;
    }
    Some(Placement { variants, classes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_normalise_and_score_per_image() {
        let b = crate::geometry::normalised_boxes(
            &[crate::frame::BBox::new(56, 0, 168, 112)],
            (224, 224),
        );
        assert_eq!(b, vec![[0.25, 0.0, 0.75, 0.5]]);
        // Centre (0.5, 0.25): 1 − 0.25; area 0.5 × 0.5.
        assert_eq!(image_scores(&b), Some((0.75, 0.25)));
        // A centred full-frame box scores 1 and 1; a corner box of a quarter 0.75 and 0.25; the
        // image's scores are the means over its objects.
        let full = [0.0, 0.0, 1.0, 1.0];
        let corner = [0.5, 0.0, 1.0, 0.5];
        assert_eq!(image_scores(&[full]), Some((1.0, 1.0)));
        assert_eq!(image_scores(&[full, corner]), Some((0.875, 0.625)));
        assert_eq!(image_scores(&[]), None);
        // An inverted box counts with area 0.
        assert_eq!(image_scores(&[[1.0, 1.0, 0.0, 0.0]]).unwrap().1, 0.0);
    }

    #[test]
    fn difficulty_follows_the_papers_split() {
        for bg in ["own-gray", "own-tile"] {
            assert_eq!(difficulty(bg, "112"), Some("easy"));
            assert_eq!(difficulty(bg, "84"), Some("easy"));
            assert_eq!(difficulty(bg, "56"), Some("medium"));
        }
        assert_eq!(difficulty("other", "112"), Some("medium"));
        assert_eq!(difficulty("other", "84"), Some("hard"));
        assert_eq!(difficulty("other", "56"), Some("hard"));
        assert_eq!(difficulty("other", "100"), None);
        assert_eq!(difficulty("sky", "56"), None);
        // Four of the 12 (background kind, position kind, size) cells each.
        let mut count = BTreeMap::new();
        for bg in ["own-gray", "other"] {
            for _pos in ["centre", "corner"] {
                for size in ["56", "84", "112"] {
                    *count.entry(difficulty(bg, size).unwrap()).or_insert(0) += 1;
                }
            }
        }
        assert_eq!(
            count.into_iter().collect::<Vec<_>>(),
            [("easy", 4), ("hard", 4), ("medium", 4)]
        );
    }

    #[test]
    fn cells_groups_sizes_and_worst() {
        let lines = [
            ("clean", 4, 4),
            ("placement/other/centre/56", 4, 1),
            ("placement/own-gray/top-right/112", 4, 3),
            ("placement/own-gray/centre/84", 4, 4),
            ("placement/own-gray/centre/56", 4, 2),
            ("placement/ar/other/top-right/56", 2, 0),
            ("placement/own-tile/centre/56", 0, 0),
        ];
        let p = compute(lines, &BTreeMap::new()).unwrap();
        let names: Vec<&str> = p.variants.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, vec!["square", "ar"]);
        let sq = &p.variants[0].1;
        let cells: Vec<&str> = sq.cells.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            cells,
            vec![
                "own-gray/centre/56",
                "own-gray/centre/84",
                "own-gray/top-right/112",
                "own-tile/centre/56",
                "other/centre/56"
            ]
        );
        let get = |l: &Vec<(String, Cell)>, k: &str| l.iter().find(|(n, _)| n == k).unwrap().1;
        assert_eq!(get(&sq.groups, "own-gray/centre").accuracy, Some(0.75));
        assert_eq!(get(&sq.sizes, "56").accuracy, Some(3.0 / 8.0));
        let sizes: Vec<&str> = sq.sizes.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(sizes, vec!["56", "84", "112"]);
        assert_eq!(get(&sq.backgrounds, "other").accuracy, Some(0.25));
        assert_eq!(get(&sq.positions, "top-right").accuracy, Some(0.75));
        assert_eq!(get(&sq.cells, "own-tile/centre/56").accuracy, None);
        assert_eq!(
            sq.worst,
            Some(Worst {
                cell: "other/centre/56".into(),
                accuracy: 0.25
            })
        );
        assert_eq!(p.variants[1].1.worst.as_ref().unwrap().accuracy, 0.0);
        // Difficulty: own at 84/112 easy (4 of 4 and 3 of 4), own at 56 medium (2 of 4 + the
        // unlabelled own-tile cell), other at 56 hard (1 of 4).
        let diff: Vec<&str> = sq.difficulties.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(diff, ["easy", "medium", "hard"]);
        assert_eq!(get(&sq.difficulties, "easy").accuracy, Some(7.0 / 8.0));
        assert_eq!(get(&sq.difficulties, "medium").accuracy, Some(0.5));
        assert_eq!(get(&sq.difficulties, "hard").accuracy, Some(0.25));
        assert!(p.classes.is_empty());
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["variants"]["square"]["groups"]["other/centre"]["n"], 4);
        assert_eq!(serde_json::from_value::<Placement>(v).unwrap(), p);
    }

    #[test]
    fn class_scores_and_absence() {
        assert_eq!(compute([("clean", 1, 1)], &BTreeMap::new()), None);
        let mut o = ObjectScores::default();
        o.add((1.0, 0.5));
        o.add((0.5, 0.25));
        let objects = BTreeMap::from([(3usize, o)]);
        let p = compute([("clean", 1, 1)], &objects).unwrap();
        assert!(p.variants.is_empty());
        assert_eq!(
            p.classes,
            vec![(
                "3".to_string(),
                ClassScores {
                    images: 2,
                    centre_score: 0.75,
                    size_score: 0.375
                }
            )]
        );
    }
}
