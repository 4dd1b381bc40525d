//! Every scenario key and named group robustream knows, with a one-line description each
//! (what `robustream scenarios` prints), and construction of a scenario from its key.

use std::sync::Arc;

use super::Scenario;
use super::clean::Clean;
use super::corruption::Corruption;
use crate::key::{BENCHMARK_COUNT, CLEAN, CORRUPTIONS, FAMILIES, SEVERITIES, ScenarioKey};

/// One scenario key or group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    /// The key (`corruption/contrast/3`) or group name (`demo`).
    pub(crate) name: String,
    /// One line saying what it does.
    pub(crate) description: String,
    /// For a group, the keys it expands to, in order; empty for a single scenario.
    pub(crate) members: Vec<String>,
}

/// The catalogue: all scenario keys, then all groups.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Single scenarios, in plan order.
    pub(crate) scenarios: Vec<CatalogEntry>,
    /// Named groups.
    pub(crate) groups: Vec<CatalogEntry>,
    /// JPEG quality corruption scenarios are stored at after corrupting (see
    /// [`Corruption::stored_as_jpeg`]); `None` = not stored.
    pub(crate) corruption_jpeg: Option<u8>,
}

impl Catalog {
    /// The built-in catalogue.
    pub fn builtin() -> Self {
        let mut scenarios = vec![entry(
            CLEAN,
            "the frame as it is (always evaluated; the reference)",
        )];
        let mut groups = Vec::new();
        let mut all_corruptions = Vec::new();
        for (name, desc) in CORRUPTIONS {
            let members: Vec<String> = SEVERITIES
                .map(|severity| ScenarioKey::Corruption { name, severity }.to_string())
                .collect();
            for (s, key) in SEVERITIES.zip(&members) {
                let c = Corruption::new(name, s).expect("listed corruption and severity");
                scenarios.push(entry(
                    key,
                    &format!("{name}, severity {s} ({}): {desc}", c.parameter()),
                ));
            }
            all_corruptions.extend(members.iter().cloned());
            groups.push(CatalogEntry {
                name: format!("corruption/{name}"),
                description: format!("{name} at severities 1..5"),
                members,
            });
        }
        // Each corruption contributes its five severities, in index order.
        let per = SEVERITIES.count();
        groups.push(CatalogEntry {
            name: "imagenet-c".into(),
            description: "the 15 ImageNet-C benchmark corruptions (mCE) at severities 1..5".into(),
            members: all_corruptions[..BENCHMARK_COUNT * per].to_vec(),
        });
        groups.push(CatalogEntry {
            name: "imagenet-c-all".into(),
            description:
                "all 19 ImageNet-C corruptions (benchmark + validation) at severities 1..5".into(),
            members: all_corruptions.clone(),
        });
        for (family, range) in FAMILIES {
            let names: Vec<&str> = CORRUPTIONS[range.clone()].iter().map(|(n, _)| *n).collect();
            groups.push(CatalogEntry {
                name: format!("imagenet-c/{family}"),
                description: format!("{} at severities 1..5", names.join(", ")),
                members: all_corruptions[range.start * per..range.end * per].to_vec(),
            });
        }
        // Object scenarios: Hard ImageNet ablations (docs/hard-imagenet.md#ablations), RFS noise
        // (docs/hard-imagenet.md#region-noise), Corner Cases placements (docs/corner-cases.md).
        for (keys, family_groups) in [
            super::ablation::catalog(),
            super::region_noise::catalog(),
            super::placement::catalog(),
        ] {
            scenarios.extend(keys);
            groups.extend(family_groups);
        }
        // Background scenarios: IN-9 (docs/in9.md#how-the-variations-are-built) and XIMAGENET-12
        // (docs/ximagenet.md#scenarios).
        for (group, list, what) in [
            (
                "in9",
                super::background::IN9,
                "IN-9 background variations: only_fg, no_fg, only_bg_b/t, mixed_same/rand/next",
            ),
            (
                "ximagenet12",
                super::background::XIMAGENET12,
                "XIMAGENET-12 background scenarios: blur, colour, brightness, segmented, transparent, \
                 random",
            ),
        ] {
            let members: Vec<String> = list
                .iter()
                .map(|(leaf, _)| ScenarioKey::Background { leaf }.to_string())
                .collect();
            for ((_, desc), key) in list.iter().zip(&members) {
                scenarios.push(entry(key, desc));
            }
            groups.push(CatalogEntry {
                name: group.into(),
                description: what.into(),
                members,
            });
        }
        // XIMAGENET-12 options (listed, in no group) and the paper's Table 2 set
        // (docs/ximagenet.md#robustness-score).
        for (leaf, desc) in super::background::XIMAGENET12_OPTIONS {
            scenarios.push(entry(&ScenarioKey::Background { leaf }.to_string(), desc));
        }
        groups.push(CatalogEntry {
            name: "ximagenet12-table2".into(),
            description: "the XIMAGENET-12 paper's eight Table 2 scenarios (Blur_bg, Blur_obj, \
                          Color_g/b/grey/r, Rand_bg, Seg_img): σ²_cross comparable with the paper"
                .into(),
            members: super::background::TABLE2
                .iter()
                .map(|leaf| ScenarioKey::Background { leaf }.to_string())
                .collect(),
        });
        let demo: Vec<String> = ["gaussian_noise", "contrast"]
            .iter()
            .flat_map(|name| {
                SEVERITIES
                    .map(move |severity| ScenarioKey::Corruption { name, severity }.to_string())
            })
            .collect();
        groups.push(CatalogEntry {
            name: "demo".into(),
            description: "clean, gaussian_noise 1..5 and contrast 1..5 (the demo plan)".into(),
            members: demo,
        });
        Self {
            scenarios,
            groups,
            corruption_jpeg: None,
        }
    }

    /// The same catalogue with corruption scenarios stored as JPEG at `quality` after corrupting.
    pub(crate) fn with_corruption_jpeg(mut self, quality: Option<u8>) -> Self {
        self.corruption_jpeg = quality;
        self
    }

    /// Builds the scenario with this exact key; `None` if the key is unknown.
    pub fn build(&self, key: &str) -> Option<Arc<dyn Scenario>> {
        self.build_key(ScenarioKey::parse(key))
    }

    /// Builds the scenario of a parsed key; `None` if its family does not know its parameters.
    fn build_key(&self, key: ScenarioKey<'_>) -> Option<Arc<dyn Scenario>> {
        match key {
            ScenarioKey::Clean => Some(Arc::new(Clean)),
            ScenarioKey::Corruption { name, severity } => Corruption::new(name, severity)
                .map(|c| Arc::new(c.stored_as_jpeg(self.corruption_jpeg)) as Arc<dyn Scenario>),
            ScenarioKey::Background { .. } => super::background::build_key(key),
            ScenarioKey::Ablation { .. } => super::ablation::build_key(key),
            ScenarioKey::RegionNoise { .. } => super::region_noise::build_key(key),
            ScenarioKey::Placement { .. } => super::placement::build_key(key),
            ScenarioKey::Other(_) => None,
        }
    }

    /// Expands one plan item (a key, a group name, or a prefix ending in `/*`) to keys, in order.
    /// Besides the listed keys, a parameterised key that builds is accepted as it is
    /// (`background/transparent_on/RRGGBB`).
    pub(crate) fn expand(&self, item: &str) -> Option<Vec<String>> {
        if let Some(g) = self.groups.iter().find(|g| g.name == item) {
            return Some(g.members.clone());
        }
        if self.scenarios.iter().any(|s| s.name == item)
            || (matches!(ScenarioKey::parse(item),
                    ScenarioKey::Background { leaf } if leaf.starts_with("transparent_on/"))
                && super::background::build(item).is_some())
        {
            return Some(vec![item.to_string()]);
        }
        let prefix = item.strip_suffix('*')?;
        let keys: Vec<String> = self
            .scenarios
            .iter()
            .filter(|s| s.name.starts_with(prefix))
            .map(|s| s.name.clone())
            .collect();
        (!keys.is_empty()).then_some(keys)
    }
}

fn entry(name: &str, description: &str) -> CatalogEntry {
    CatalogEntry {
        name: name.into(),
        description: description.into(),
        members: Vec::new(),
    }
}

/// The catalogue as `robustream scenarios` prints it: one key per line with its description, then the
/// groups with their sizes.
pub fn render(catalog: &Catalog) -> String {
    let width = catalog
        .scenarios
        .iter()
        .chain(&catalog.groups)
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::from("scenarios:\n");
    for e in &catalog.scenarios {
        out += &format!("  {:width$}  {}\n", e.name, e.description);
    }
    out += "groups (use in `scenarios = [...]` or --scenarios; `prefix/*` also works):\n";
    for g in &catalog.groups {
        out += &format!(
            "  {:width$}  {} ({} scenarios)\n",
            g.name,
            g.description,
            g.members.len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_key_builds_with_its_own_key() {
        let c = Catalog::builtin();
        for e in &c.scenarios {
            let s = c
                .build(&e.name)
                .unwrap_or_else(|| panic!("{} does not build", e.name));
            assert_eq!(s.key(), e.name);
        }
    }

    #[test]
    fn every_group_member_is_a_known_key() {
        let c = Catalog::builtin();
        for g in &c.groups {
            assert!(!g.members.is_empty(), "{}", g.name);
            for m in &g.members {
                assert!(c.build(m).is_some(), "{} lists unknown {m}", g.name);
            }
        }
    }

    #[test]
    fn expands_keys_groups_and_prefixes() {
        let c = Catalog::builtin();
        assert_eq!(c.expand("clean").unwrap(), vec!["clean"]);
        assert_eq!(c.expand("corruption/contrast").unwrap().len(), 5);
        assert_eq!(c.expand("corruption/gaussian_noise/*").unwrap().len(), 5);
        assert_eq!(c.expand("demo").unwrap().len(), 10);
        assert_eq!(c.expand("imagenet-c").unwrap().len(), 75);
        assert_eq!(c.expand("imagenet-c-all").unwrap().len(), 95);
        assert_eq!(
            c.expand("imagenet-c/weather").unwrap()[0],
            "corruption/snow/1"
        );
        assert_eq!(c.expand("imagenet-c/weather").unwrap().len(), 20);
        let bench = c.expand("imagenet-c").unwrap();
        assert_eq!(bench.last().unwrap(), "corruption/jpeg_compression/5");
        assert!(c.expand("corruption/nope/1").is_none());
        assert_eq!(
            c.expand("ximagenet12-table2").unwrap(),
            [
                "blur_bg",
                "blur_obj",
                "color_g",
                "color_b",
                "color_grey",
                "color_r",
                "random_bg_add",
                "segmented"
            ]
            .map(|l| format!("background/{l}"))
        );
        // Mattes: the listed ones and any RRGGBB colour; nothing else.
        assert_eq!(
            c.expand("background/transparent_on/1a2B3c").unwrap(),
            vec!["background/transparent_on/1a2B3c"]
        );
        assert!(c.expand("background/transparent_on/white").is_some());
        assert!(c.expand("background/transparent_on/12345").is_none());
        assert!(c.expand("background/transparent_on/zz0000").is_none());
        assert!(c.expand("background/transparent_on/+1+2+3").is_none());
        assert!(
            !c.expand("ximagenet12")
                .unwrap()
                .iter()
                .any(|k| k.ends_with("_bgt"))
        );
        assert!(c.expand("zzz/*").is_none());
        assert!(c.build("corruption/contrast/9").is_none());
    }
}
