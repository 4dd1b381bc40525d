//! The crate's floors, checked: every module imports only from its own floor or the floors below it
//! (data flows up: frame → source → scenario → preprocess → engine → metrics → report → the run),
//! and no two modules import each other, directly or round a circle. `docs/ARCHITECTURE.md` draws
//! the same table; a test here reads `src/` and fails on an import that runs back down the list.
//!
//! Inside a room (a top-level module and its folder) the files have no circle either: no file
//! names a file that, directly or round a longer loop, names it back. A file naming its own
//! module's ancestors (`super::Job`: the items its folder's module shares with its parts) does
//! not count; a file naming its children, a sibling or a sibling's parts does
//! (`file_circles_in_a_room` lists each circle it finds, file by file, with the path that makes
//! each step).

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
    ("the run: pipeline, post passes, commands", &["app"]),
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

    /// Rust source with comments removed and string and character literals emptied, so that
    /// braces and paths inside them are not read as code.
    fn code_of(text: &str) -> String {
        let c: Vec<char> = text.chars().collect();
        let at = |i: usize| c.get(i).copied().unwrap_or('\0');
        let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while i < c.len() {
            match (c[i], at(i + 1)) {
                ('/', '/') => {
                    while i < c.len() && c[i] != '\n' {
                        i += 1;
                    }
                }
                ('/', '*') => {
                    let mut depth = 0;
                    while i < c.len() {
                        if c[i] == '/' && at(i + 1) == '*' {
                            depth += 1;
                            i += 2;
                        } else if c[i] == '*' && at(i + 1) == '/' {
                            depth -= 1;
                            i += 2;
                            if depth == 0 {
                                break;
                            }
                        } else {
                            i += 1;
                        }
                    }
                    out.push(' ');
                }
                ('r', '"' | '#') if i == 0 || !ident(c[i - 1]) || c[i - 1] == 'b' => {
                    let hashes = (i + 1..c.len()).take_while(|&j| c[j] == '#').count();
                    if at(i + 1 + hashes) != '"' {
                        // A raw identifier (`r#type`).
                        out.push(c[i]);
                        i += 1;
                        continue;
                    }
                    i += 2 + hashes;
                    while i < c.len() && !(c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#')) {
                        i += 1;
                    }
                    i += 1 + hashes;
                    out.push_str("\"\"");
                }
                ('"', _) => {
                    i += 1;
                    while i < c.len() && c[i] != '"' {
                        i += if c[i] == '\\' { 2 } else { 1 };
                    }
                    i += 1;
                    out.push_str("\"\"");
                }
                ('\'', '\\') => {
                    i += 2;
                    while i < c.len() && c[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                    out.push_str("' '");
                }
                ('\'', _) if at(i + 2) == '\'' => {
                    i += 3;
                    out.push_str("' '");
                }
                (ch, _) => {
                    out.push(ch);
                    i += 1;
                }
            }
        }
        out
    }

    /// `code` without the items marked `#[cfg(test)]` (test modules, test helpers).
    fn without_test_items(code: &str) -> String {
        const MARK: &str = "#[cfg(test)]";
        let mut out = String::with_capacity(code.len());
        let mut rest = code;
        while let Some(at) = rest.find(MARK) {
            out.push_str(&rest[..at]);
            rest = after_item(&rest[at + MARK.len()..]);
        }
        out.push_str(rest);
        out
    }

    /// What follows the item `code` starts with (attributes included): the item ends at the `}`
    /// that closes its first `{`, or at a `;` outside brackets before any `{`.
    fn after_item(code: &str) -> &str {
        let (mut brackets, mut braces) = (0usize, 0usize);
        for (i, ch) in code.char_indices() {
            match ch {
                '(' | '[' => brackets += 1,
                ')' | ']' => brackets = brackets.saturating_sub(1),
                '{' => braces += 1,
                '}' if braces == 0 => return &code[i..],
                '}' => {
                    braces -= 1;
                    if braces == 0 {
                        return &code[i + 1..];
                    }
                }
                ';' if brackets == 0 && braces == 0 => return &code[i + 1..],
                _ => {}
            }
        }
        ""
    }

    /// A token of Rust code, as far as paths need: an identifier, `::`, or one other character.
    fn tokens(code: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = code.trim_start();
        while let Some(ch) = rest.chars().next() {
            let len = if ch.is_alphanumeric() || ch == '_' {
                rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len())
            } else if rest.starts_with("::") {
                2
            } else {
                ch.len_utf8()
            };
            out.push(&rest[..len]);
            rest = rest[len..].trim_start();
        }
        out
    }

    /// What one file's non-test code says about modules: the child modules it declares
    /// (`mod x;`) and every path it names (`a::b::{c, d::e}` gives `[a, b, c]` and `[a, b, d, e]`),
    /// each with the inline modules (`mod x { … }`) it is named in.
    #[derive(Debug, Default)]
    struct FileCode {
        children: BTreeSet<String>,
        paths: Vec<(Vec<String>, Vec<String>)>,
    }

    fn read_code(text: &str) -> FileCode {
        let code = without_test_items(&code_of(text));
        let t = tokens(&code);
        let is_ident = |s: &str| s.chars().all(|c| c.is_alphanumeric() || c == '_');
        let mut file = FileCode::default();
        // Inline modules open around the current token, with the brace depth inside each.
        let mut inline: Vec<(String, usize)> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < t.len() {
            match t[i] {
                "{" => depth += 1,
                "}" => {
                    if inline.last().is_some_and(|(_, d)| *d == depth) {
                        inline.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                "mod" if t.get(i + 1).is_some_and(|s| is_ident(s)) => match t.get(i + 2).copied() {
                    Some(";") if inline.is_empty() => {
                        file.children.insert(t[i + 1].to_string());
                    }
                    Some("{") => {
                        inline.push((t[i + 1].to_string(), depth + 1));
                        depth += 1;
                        i += 2;
                    }
                    _ => {}
                },
                s if is_ident(s) && t.get(i + 1) == Some(&"::") && (i == 0 || t[i - 1] != "::") => {
                    let scope: Vec<String> = inline.iter().map(|(m, _)| m.clone()).collect();
                    let mut found = Vec::new();
                    i = path_at(&t, i, Vec::new(), &mut found);
                    file.paths
                        .extend(found.into_iter().map(|p| (scope.clone(), p)));
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        file
    }

    /// Reads the path starting at token `i` (after `prefix`) into `out`, groups expanded; returns
    /// the index of the token after it.
    fn path_at(
        t: &[&str],
        mut i: usize,
        mut prefix: Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) -> usize {
        let is_ident =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        while let Some(seg) = t.get(i).filter(|s| is_ident(s)) {
            prefix.push(seg.to_string());
            i += 1;
            if t.get(i) != Some(&"::") {
                break;
            }
            i += 1;
            if t.get(i) == Some(&"{") {
                i += 1;
                while i < t.len() && t[i] != "}" {
                    if t[i] == "," {
                        i += 1;
                    } else if is_ident(t[i]) {
                        i = path_at(t, i, prefix.clone(), out);
                    } else {
                        i += 1;
                    }
                }
                return i + 1;
            }
        }
        out.push(prefix);
        i
    }

    /// The files of the crate's library as modules: module path → file name (relative to
    /// `src/`), only those declared, outside `#[cfg(test)]`, from `lib.rs` down; with what each
    /// file's code says.
    fn library_files() -> BTreeMap<Vec<String>, (String, FileCode)> {
        let mut by_path: BTreeMap<Vec<String>, (String, FileCode)> = BTreeMap::new();
        for (path, name, _) in sources() {
            let mut module: Vec<String> = name
                .trim_end_matches(".rs")
                .split('/')
                .map(str::to_string)
                .collect();
            if module.last().is_some_and(|m| m == "mod" || m == "lib") {
                module.pop();
            }
            if name == "main.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("source files are UTF-8");
            by_path.insert(module, (name, read_code(&text)));
        }
        // Keep what the library declares outside tests.
        let mut kept = BTreeMap::new();
        let mut todo = vec![Vec::new()];
        while let Some(m) = todo.pop() {
            let Some(entry) = by_path.remove(&m) else {
                continue;
            };
            for child in &entry.1.children {
                let mut c = m.clone();
                c.push(child.clone());
                todo.push(c);
            }
            kept.insert(m, entry);
        }
        kept
    }

    /// file → (file it names → the first path that names it), for the files of each room; a file
    /// naming one of its module's ancestors does not count.
    fn file_graph() -> BTreeMap<String, BTreeMap<String, String>> {
        let files = library_files();
        let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (module, (name, code)) in &files {
            if module.is_empty() {
                continue;
            }
            g.entry(name.clone()).or_default();
            for (scope, path) in &code.paths {
                let Some(target) = resolve(module, scope, path, &files) else {
                    continue;
                };
                let ancestor = module.starts_with(&target);
                if target[0] != module[0] || ancestor {
                    continue;
                }
                g.entry(name.clone())
                    .or_default()
                    .entry(files[&target].0.clone())
                    .or_insert_with(|| path.join("::"));
            }
        }
        g
    }

    /// The file module `path` (named in `module`, inside its inline modules `scope`) lands in:
    /// the deepest file module along it; `None` for a path outside the crate's modules.
    fn resolve<T>(
        module: &[String],
        scope: &[String],
        path: &[String],
        files: &BTreeMap<Vec<String>, T>,
    ) -> Option<Vec<String>> {
        let here: Vec<String> = module.iter().chain(scope).cloned().collect();
        let (mut at, rest) = match path.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &path[1..]),
            Some("super" | "self") => (here, path),
            Some(first)
                if scope.is_empty()
                    && files.contains_key(&[module, &[first.to_string()]].concat()) =>
            {
                (here, path)
            }
            _ => return None,
        };
        for seg in rest {
            match seg.as_str() {
                "super" => {
                    at.pop()?;
                }
                "self" => {}
                _ => {
                    at.push(seg.clone());
                    if !files.contains_key(&at) {
                        at.pop();
                        break;
                    }
                }
            }
        }
        while !files.contains_key(&at) {
            at.pop()?;
        }
        (!at.is_empty()).then_some(at)
    }

    /// The circles of graph `g`: one per group of nodes that reach each other, as the group's
    /// sorted nodes and one loop through them (first node repeated at the end).
    fn circles(g: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<(Vec<String>, Vec<String>)> {
        let reach = |from: &str| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.to_string()];
            while let Some(n) = todo.pop() {
                for to in g.get(&n).into_iter().flat_map(|t| t.keys()) {
                    if seen.insert(to.clone()) {
                        todo.push(to.clone());
                    }
                }
            }
            seen
        };
        let reaches: BTreeMap<&String, BTreeSet<String>> =
            g.keys().map(|n| (n, reach(n))).collect();
        let mut done = BTreeSet::new();
        let mut out = Vec::new();
        for (n, r) in &reaches {
            if done.contains(*n) || !r.contains(*n) {
                continue;
            }
            let group: Vec<String> = r
                .iter()
                .filter(|m| reaches.get(m).is_some_and(|back| back.contains(*n)))
                .cloned()
                .collect();
            done.extend(group.iter().cloned());
            out.push((group.clone(), shortest_loop(g, n, &group)));
        }
        out
    }

    /// The shortest loop from `start` back to itself through the nodes of `group`.
    fn shortest_loop(
        g: &BTreeMap<String, BTreeMap<String, String>>,
        start: &str,
        group: &[String],
    ) -> Vec<String> {
        let mut from: BTreeMap<String, String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.to_string()]);
        while let Some(n) = queue.pop_front() {
            for to in g.get(&n).into_iter().flat_map(|t| t.keys()) {
                if to == start {
                    let mut path = vec![start.to_string(), n.clone()];
                    while let Some(p) = from.get(path.last().expect("not empty")) {
                        path.push(p.clone());
                    }
                    path.pop();
                    path.reverse();
                    path.insert(0, start.to_string());
                    return path;
                }
                if group.contains(to) && !from.contains_key(to) {
                    from.insert(to.clone(), n.clone());
                    queue.push_back(to.clone());
                }
            }
        }
        vec![start.to_string()]
    }

    /// One circle as the failure lists it: each step with the path that makes it.
    fn describe(g: &BTreeMap<String, BTreeMap<String, String>>, path: &[String]) -> String {
        let mut s = path[0].clone();
        for w in path.windows(2) {
            let by = g
                .get(&w[0])
                .and_then(|t| t.get(&w[1]))
                .map_or("?", String::as_str);
            s.push_str(&format!(" → ({by}) {}", w[1]));
        }
        s
    }

    #[test]
    fn file_circles_in_a_room() {
        let g = file_graph();
        let bad: Vec<String> = circles(&g)
            .iter()
            .map(|(_, path)| describe(&g, path))
            .collect();
        assert!(
            bad.is_empty(),
            "import circles between the files of a room: {bad:#?}"
        );
    }

    #[test]
    fn the_circle_finder_lists_direct_and_longer_circles() {
        let edge = |pairs: &[(&str, &str)]| {
            let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
            for (a, b) in pairs {
                g.entry(a.to_string())
                    .or_default()
                    .insert(b.to_string(), format!("{b}::x"));
                g.entry(b.to_string()).or_default();
            }
            g
        };
        let g = edge(&[
            ("r/a.rs", "r/b.rs"),
            ("r/b.rs", "r/a.rs"),
            ("r/c.rs", "r/a.rs"),
        ]);
        let found = circles(&g);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, ["r/a.rs", "r/b.rs"]);
        assert_eq!(
            describe(&g, &found[0].1),
            "r/a.rs → (r/b.rs::x) r/b.rs → (r/a.rs::x) r/a.rs"
        );
        let g = edge(&[
            ("r/a.rs", "r/b.rs"),
            ("r/b.rs", "r/c.rs"),
            ("r/c.rs", "r/a.rs"),
            ("r/c.rs", "r/d.rs"),
        ]);
        let found = circles(&g);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, ["r/a.rs", "r/b.rs", "r/c.rs", "r/a.rs"]);
        assert!(circles(&edge(&[("r/a.rs", "r/b.rs"), ("r/b.rs", "r/c.rs")])).is_empty());
    }

    #[test]
    fn the_file_reader_resolves_paths_and_skips_comments_strings_and_tests() {
        let text = "mod b;\nuse super::x::{self, Y};\nuse crate::r::c::{d::E, F};\n\
                    // crate::r::g\nlet s = \"crate::r::h {\"; let c = '{';\n\
                    fn f() { b::go(); Self::new(); }\n\
                    mod inline { use super::super::k; }\n\
                    #[cfg(test)]\nmod tests { use crate::r::t; }\n\
                    #[cfg(test)]\nfn helper() -> [u8; 2] { crate::r::u() }\n";
        let code = read_code(text);
        assert_eq!(code.children, BTreeSet::from(["b".to_string()]));
        let files: BTreeMap<Vec<String>, ()> = [
            vec!["r"],
            vec!["r", "a"],
            vec!["r", "a", "b"],
            vec!["r", "c"],
            vec!["r", "c", "d"],
            vec!["r", "k"],
            vec!["r", "x"],
        ]
        .into_iter()
        .map(|m| (m.into_iter().map(str::to_string).collect(), ()))
        .collect();
        let module = ["r".to_string(), "a".to_string()];
        let got: BTreeSet<String> = code
            .paths
            .iter()
            .filter_map(|(scope, p)| resolve(&module, scope, p, &files))
            .map(|m| m.join("/"))
            .collect();
        assert_eq!(
            got,
            BTreeSet::from(["r/x", "r/c/d", "r/c", "r/a/b", "r/k"].map(str::to_string))
        );
    }
}
