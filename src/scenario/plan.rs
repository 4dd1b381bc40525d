//! The plan: the ordered list of scenarios applied to every frame, built from the config's
//! `scenarios` items. `clean` is always first.

use std::sync::Arc;

use super::{Catalog, Scenario};

/// An unknown plan item.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "unknown scenario or group `{}` in `scenarios`; run `robustream scenarios` for the list{}",
    crate::quote::clip(item),
    suggestion.as_ref().map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
)]
pub struct PlanError {
    /// The item as written.
    pub(crate) item: String,
    /// A close known name, if any.
    pub(crate) suggestion: Option<String>,
}

/// The ordered, de-duplicated scenarios of a run.
#[derive(Clone)]
pub struct Plan {
    scenarios: Vec<Arc<dyn Scenario>>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.keys()).finish()
    }
}

impl Plan {
    /// Builds the plan from items (keys, group names, `prefix/*`), keeping first occurrences in order,
    /// with `clean` first whether or not it was listed.
    pub fn from_items<S: AsRef<str>>(items: &[S], catalog: &Catalog) -> Result<Self, PlanError> {
        let mut keys = vec![crate::key::CLEAN.to_string()];
        for item in items {
            let item = item.as_ref().trim();
            let expanded = catalog.expand(item).ok_or_else(|| PlanError {
                item: item.to_string(),
                suggestion: suggest(item, catalog),
            })?;
            for k in expanded {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        let scenarios = keys
            .iter()
            .map(|k| catalog.build(k).expect("catalogue keys build"))
            .collect();
        Ok(Self { scenarios })
    }

    /// The scenarios in order (`clean` first).
    pub(crate) fn scenarios(&self) -> &[Arc<dyn Scenario>] {
        &self.scenarios
    }

    /// The keys in order.
    pub fn keys(&self) -> Vec<&str> {
        self.scenarios.iter().map(|s| s.key()).collect()
    }

    /// Number of scenarios (variants per frame).
    pub fn len(&self) -> usize {
        self.scenarios.len()
    }

    /// Never true: a plan always holds `clean`.
    pub fn is_empty(&self) -> bool {
        self.scenarios.is_empty()
    }
}

/// The known name closest to `item` ([`crate::quote::closest`]: at most 3 edits away).
fn suggest(item: &str, catalog: &Catalog) -> Option<String> {
    let names = catalog.scenarios.iter().chain(&catalog.groups);
    crate::quote::closest(item, names.map(|e| e.name.as_str())).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_first_and_deduplicated() {
        let c = Catalog::builtin();
        let p = Plan::from_items(
            &["corruption/contrast/2", "clean", "corruption/contrast"],
            &c,
        )
        .unwrap();
        assert_eq!(
            p.keys(),
            vec![
                "clean",
                "corruption/contrast/2",
                "corruption/contrast/1",
                "corruption/contrast/3",
                "corruption/contrast/4",
                "corruption/contrast/5"
            ]
        );
        assert_eq!(
            Plan::from_items::<&str>(&[], &c).unwrap().keys(),
            vec!["clean"]
        );
    }

    #[test]
    fn unknown_item_names_itself_and_suggests() {
        let c = Catalog::builtin();
        let e = Plan::from_items(&["corruption/contrat/2"], &c).unwrap_err();
        assert_eq!(e.item, "corruption/contrat/2");
        assert_eq!(e.suggestion.as_deref(), Some("corruption/contrast/2"));
        assert!(e.to_string().contains("robustream scenarios"));
    }
}
