//! The crate's floors, checked: every module imports only from its own floor or the floors below it
//! (data flows up: frame → source → scenario → preprocess → engine → metrics → report → the run),
//! and no two modules import each other, directly or round a circle. `docs/ARCHITECTURE.md` draws
//! the same table; a test here reads `src/` and fails on an import that runs back down the list.

/// The floors, bottom first: each top-level module of the crate and the floor it stands on.
pub(crate) const FLOORS: &[(&str, &[&str])] = &[
    (
        "ground: shared vocabulary, geometry and kernels",
        &[
            "quote", "fsread", "assets", "duration", "ordered", "contract", "key", "rng",
            "latency", "frame", "classmap", "model", "runtime", "geometry", "kernels", "view",
            "scene", "shard",
        ],
    ),
    ("sources", &["source"]),
    ("scenarios", &["scenario"]),
    ("preprocessing", &["preprocess", "gpu"]),
    ("engine", &["engine"]),
    ("metrics", &["metrics"]),
    ("reports", &["report"]),
    (
        "the run: pipeline, post passes, commands",
        &[
            "pipeline",
            "watch",
            "run_lock",
            "challenge",
            "saliency",
            "post",
            "one_image",
            "apply",
            "preview",
            "bench",
            "config",
            "fingerprint",
            "resume",
            "merge",
            "run",
            "cli",
        ],
    ),
];

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    use super::FLOORS;

    /// The floor of a top-level module.
    fn floor(module: &str) -> Option<usize> {
        FLOORS.iter().position(|(_, ms)| ms.contains(&module))
    }

    /// Every `.rs` file under `dir`.
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// The `crate::<module>` paths a file's non-test code names (comments and the trailing
    /// `#[cfg(test)] mod tests` block left out).
    fn imports(text: &str) -> BTreeSet<String> {
        let code = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        let mut out = BTreeSet::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let line = line.split("//").next().unwrap_or_default();
            let mut rest = line;
            while let Some(i) = rest.find("crate::") {
                rest = &rest[i + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    // `crate::{a, b::c}`: each head of the group.
                    let group = group.split('}').next().unwrap_or_default();
                    for part in group.split(',') {
                        let head = part.trim().split("::").next().unwrap_or_default();
                        if !head.is_empty() {
                            out.insert(head.to_string());
                        }
                    }
                } else {
                    let head: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    out.insert(head);
                }
            }
        }
        out
    }

    /// Every source file under `src/`: its path, its name relative to `src/` and its top-level
    /// module.
    fn sources() -> Vec<(PathBuf, String, String)> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut all = Vec::new();
        files(&src, &mut all);
        all.into_iter()
            .map(|path| {
                let name = path
                    .strip_prefix(&src)
                    .expect("under src/")
                    .to_string_lossy()
                    .replace('\\', "/");
                let module = name
                    .split('/')
                    .next()
                    .unwrap_or_default()
                    .trim_end_matches(".rs")
                    .to_string();
                (path, name, module)
            })
            .collect()
    }

    /// module → (imported module → files naming it).
    fn graph() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
        let mut g: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
        for (path, name, module) in sources() {
            let test_file = name.ends_with("/tests.rs") || name.ends_with("_tests.rs");
            if test_file || matches!(module.as_str(), "main" | "lib") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source files are UTF-8");
            for to in imports(&text) {
                if to != module && floor(&to).is_some() {
                    g.entry(module.clone())
                        .or_default()
                        .entry(to)
                        .or_default()
                        .insert(name.clone());
                }
            }
        }
        g
    }

    #[test]
    fn every_module_has_a_floor() {
        for (_, name, module) in sources() {
            if !matches!(module.as_str(), "main" | "lib" | "layering") {
                assert!(
                    floor(&module).is_some(),
                    "{name}: add `{module}` to layering::FLOORS"
                );
            }
        }
    }

    #[test]
    fn imports_run_one_way() {
        let g = graph();
        let mut up = Vec::new();
        for (from, tos) in &g {
            for (to, files) in tos {
                if floor(to) > floor(from) {
                    up.push(format!("{from} → {to} ({files:?})"));
                }
            }
        }
        assert!(
            up.is_empty(),
            "imports running back down the floors: {up:#?}"
        );
    }

    #[test]
    fn no_module_circles() {
        let g = graph();
        // Depth-first search for a back edge.
        fn visit<'a>(
            m: &'a str,
            g: &'a BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
            state: &mut BTreeMap<&'a str, bool>,
            path: &mut Vec<&'a str>,
        ) -> Option<Vec<String>> {
            match state.get(m) {
                Some(true) => return None,
                Some(false) => {
                    let start = path.iter().position(|p| *p == m).unwrap_or(0);
                    let mut c: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
                    c.push(m.to_string());
                    return Some(c);
                }
                None => {}
            }
            state.insert(m, false);
            path.push(m);
            for to in g.get(m).into_iter().flat_map(|t| t.keys()) {
                if let Some(c) = visit(to, g, state, path) {
                    return Some(c);
                }
            }
            path.pop();
            state.insert(m, true);
            None
        }
        let mut state = BTreeMap::new();
        for m in g.keys() {
            let circle = visit(m, &g, &mut state, &mut Vec::new());
            assert!(
                circle.is_none(),
                "import circle: {}",
                circle.unwrap_or_default().join(" → ")
            );
        }
    }

    #[test]
    fn the_reader_sees_imports_and_skips_comments_and_tests() {
        let text = "use crate::{a, b::c};\n// crate::d\nlet x = crate::e::f(); // crate::g\n\
                    #[cfg(test)]\nmod tests {\n    use crate::h;\n}\n";
        let got: Vec<String> = imports(text).into_iter().collect();
        assert_eq!(got, ["a", "b", "e"]);
    }
}
