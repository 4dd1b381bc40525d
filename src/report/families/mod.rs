//! The registry of metric families: every [`Family`] robustream has, in the order `summary.json`
//! lists them under `metrics` and the renderings show them. Adding a family: its file here, its
//! line in [`FAMILIES`], its docs page (docs/ARCHITECTURE.md#adding-a-metric-family).

mod groups;
mod hard_imagenet;
mod imagenet_c;
mod in9;
mod placement;
mod rfs;
mod saliency;
mod volatility;
pub(crate) mod window;

use super::family::{Family, MetricDef};

/// Every metric family, in `summary.json`'s order (the order of the terminal lines, `summary.md`
/// and `report.html` too; `compare` sorts by [`Family::compare_rank`]).
pub(crate) const FAMILIES: &[&dyn Family] = &[
    &imagenet_c::ImagenetCFamily,
    &in9::In9Family,
    &volatility::VolatilityFamily,
    &hard_imagenet::HardImagenetFamily,
    &rfs::RfsFamily,
    &placement::PlacementFamily,
    &window::WindowFamily,
    &groups::GroupsFamily,
    &saliency::SaliencyFamily,
];

/// The families in `compare`'s order: by [`Family::compare_rank`], registry order within a rank.
pub(crate) fn in_compare_order() -> Vec<&'static dyn Family> {
    let mut out: Vec<&'static dyn Family> = FAMILIES.to_vec();
    out.sort_by_key(|f| f.compare_rank());
    out
}

/// The `--fail-on` metrics of every family, in `compare`'s order.
pub(crate) fn rule_metrics() -> impl Iterator<Item = &'static MetricDef> {
    in_compare_order().into_iter().flat_map(|f| f.rules())
}

/// Whether `key` is a family a recompute rebuilds from records (any other entry of
/// `summary.json`'s `metrics` came from a post pass and is carried over).
pub(crate) fn rebuilt_from_records(key: &str) -> bool {
    FAMILIES
        .iter()
        .any(|f| f.key() == key && f.rebuilt_from_records())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_rule_names_are_unique() {
        let mut keys: Vec<&str> = FAMILIES.iter().map(|f| f.key()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), FAMILIES.len(), "two families share a key");
        let metrics = &crate::report::compare::rules::METRICS;
        let mut names: Vec<&str> = metrics.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), metrics.len(), "two rule metrics share a name");
    }

    #[test]
    fn only_post_pass_families_are_carried_over() {
        assert!(rebuilt_from_records("volatility") && rebuilt_from_records("window"));
        assert!(!rebuilt_from_records("saliency"));
        // An entry no family knows (a newer robustream's post pass) is carried over too.
        assert!(!rebuilt_from_records("no_such_family"));
    }
}
