//! The README's and the docs' examples are true: the demo's table is what `robustream run --config
//! configs/demo.toml` prints, the "your own ONNX model" example runs as written, the command synopsis
//! of docs/usage.md lists exactly the flags each command has, and every relative link in README.md
//! and docs/*.md leads to a file and heading that exist.

use crate::util::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap()
}

/// The body of the first fenced block opened by `fence` (e.g. "```toml") at or after `from`.
fn block_after<'a>(text: &'a str, from: usize, fence: &str) -> &'a str {
    let open = format!("{fence}\n");
    let start = from
        + text[from..]
            .find(&open)
            .unwrap_or_else(|| panic!("no {fence} block"))
        + open.len();
    let len = text[start..].find("```").expect("the block is closed");
    &text[start..start + len]
}

#[test]
fn the_readme_shows_what_the_demo_prints() {
    let readme = read("README.md");
    let start = readme
        .find("```text\nscenario ")
        .expect("the README shows the demo's table");
    let block = block_after(&readme, start, "```text");
    let dir = tempfile::tempdir().unwrap();
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/demo.toml");
    let o = run(robustream()
        .args(["run", "--quiet", "--config", config, "--out"])
        .arg(dir.path().join("run")));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let printed = text(&o.stdout);
    // The last line names the run directory, which differs from run to run.
    let printed: Vec<&str> = printed
        .lines()
        .filter(|l| !l.starts_with("records and summary: "))
        .collect();
    let printed = printed.join("\n");
    assert_eq!(
        block.trim_end(),
        printed.trim_end(),
        "README.md's demo table is stale: paste what the demo printed"
    );
}

/// The README's "your own ONNX model" section, word for word: its TOML block becomes the model
/// description, the real model and class names are copied in under the names it gives, the image
/// folder it names gets two real photos (one class folder by name, one by WordNet id, the two forms
/// the README offers), and its command runs in that folder with the binary found on no path but
/// its own (no `ORT_DYLIB_PATH`), as a user's would.
#[test]
fn the_readmes_own_model_example_runs_as_written() {
    let readme = read("README.md");
    let section = readme
        .find("## Your own ONNX model")
        .expect("the README has the own-model section");
    let description = block_after(&readme, section, "```toml");
    let command = block_after(&readme, section, "```sh");
    let lines: Vec<&str> = command.lines().collect();
    assert_eq!(lines.len(), 1, "one command: {command}");
    let words: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(words[0], "robustream", "{command}");
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag);
        words[i.expect(flag) + 1]
    };

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join(after("--model")), description).unwrap();
    let keys: toml::Table = toml::from_str(description).unwrap();
    let name = |key: &str| keys[key].as_str().expect(key).to_string();
    let models = assets().join("models");
    std::fs::copy(models.join("efficientnet_lite0.onnx"), d.join(name("onnx"))).unwrap();
    std::fs::copy(models.join("imagenet_classes.txt"), d.join(name("labels"))).unwrap();
    let images = d.join(after("--source"));
    for (class, photo_name) in [("espresso", "coffee.png"), ("n03877845", "china.jpg")] {
        std::fs::create_dir_all(images.join(class)).unwrap();
        std::fs::copy(photo(photo_name), images.join(class).join(photo_name)).unwrap();
    }

    let o = run(robustream()
        .env_remove("ORT_DYLIB_PATH")
        .current_dir(d)
        .args(&words[1..]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("ImageNet-C (AlexNet = 100%): mCE "), "{out}");
    let run_dir = out
        .lines()
        .find_map(|l| l.strip_prefix("records and summary: "))
        .expect("the run names its directory");
    let s = summary(&d.join(run_dir));
    let clean = &s["scenarios"]["clean"];
    assert_eq!(clean["n"], 2, "{clean}");
    assert_eq!(
        clean["n_labelled"], 2,
        "both class folders name a class: {clean}"
    );
    assert_eq!(s["scenarios"].as_object().unwrap().len(), 1 + 15 * 5);
    assert!(
        s["metrics"]["imagenet_c"]["mce"].is_number(),
        "{}",
        s["metrics"]
    );
}

/// Every `--flag` of a usage line or an option line, in order of appearance.
fn flags(line: &str) -> impl Iterator<Item = &str> {
    line.match_indices("--").filter_map(move |(i, _)| {
        let rest = &line[i + 2..];
        let len = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        (len > 0 && (i == 0 || !line[..i].ends_with('-'))).then(|| &line[i..i + 2 + len])
    })
}

/// The flags `robustream <command> --help` defines (each option line's own flag).
fn help_flags(command: &str) -> BTreeSet<String> {
    let o = run(robustream().args([command, "--help"]));
    assert!(o.status.success(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .map(str::trim_start)
        .filter_map(|l| {
            // `--name <VALUE>` or `-n, --name`; description lines start otherwise.
            let l = match l.as_bytes() {
                [b'-', b'-', ..] => l,
                [b'-', c, b',', b' ', b'-', b'-', ..] if c.is_ascii_alphabetic() => &l[4..],
                _ => return None,
            };
            l.split_whitespace().next().map(String::from)
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

#[test]
fn the_usage_pages_synopsis_lists_exactly_each_commands_flags() {
    let usage = read("docs/usage.md");
    let section = usage
        .find("\n## Commands\n")
        .expect("usage.md has Commands");
    let block = block_after(&usage, section, "```text");
    let mut documented: Vec<(String, BTreeSet<String>)> = Vec::new();
    for line in block.lines() {
        if let Some(rest) = line.strip_prefix("robustream ") {
            let command = rest.split_whitespace().next().unwrap().to_string();
            documented.push((command, BTreeSet::new()));
        }
        let (_, set) = documented
            .last_mut()
            .expect("the block starts with a command");
        set.extend(flags(line).map(String::from));
    }
    let listed: BTreeSet<&str> = documented.iter().map(|(c, _)| c.as_str()).collect();
    let o = run(robustream().arg("--help"));
    let commands: BTreeSet<String> = text(&o.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .filter(|c| c != "help")
        .collect();
    assert_eq!(
        listed,
        commands.iter().map(String::as_str).collect(),
        "docs/usage.md#commands lists other commands than `robustream --help`"
    );
    for (command, set) in &documented {
        assert_eq!(
            *set,
            help_flags(command),
            "docs/usage.md#commands: `robustream {command}` has other flags than its --help"
        );
    }
}

/// GitHub's anchor of a heading (docs/README.md#how-the-code-cites-these-pages): lower case, spaces
/// become `-`, every other character but letters, digits, `_` and `-` is dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The lines of a markdown text outside fenced code blocks, with their numbers.
fn prose(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fenced = false;
    text.lines().enumerate().filter_map(move |(i, l)| {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            return None;
        }
        (!fenced).then_some((i + 1, l))
    })
}

/// The anchors of a markdown file's headings; a repeated heading gets `-1`, `-2`, … as on GitHub.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    prose(text)
        .filter_map(|(_, l)| {
            let hashes = l.len() - l.trim_start_matches('#').len();
            let title = l[hashes..]
                .strip_prefix(' ')
                .filter(|_| (1..=6).contains(&hashes))?;
            let s = slug(title.trim_end_matches(['#', ' ']));
            let n = seen.entry(s.clone()).or_insert(0);
            *n += 1;
            Some(if *n == 1 {
                s
            } else {
                format!("{s}-{}", *n - 1)
            })
        })
        .collect()
}

/// The targets of the inline links `[text](target)` on a line, inline code spans left out.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 1 {
            continue; // inside a code span
        }
        let mut rest = part;
        while let Some(at) = rest.find("](") {
            let target = &rest[at + 2..];
            let Some(end) = target.find(')') else { break };
            out.push(&target[..end]);
            rest = &target[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let docs = root().join("docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    files.insert(0, root().join("README.md"));
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(root()).unwrap().display().to_string();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let dest: PathBuf = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().unwrap_or(Path::new(".")).join(path)
                };
                if !dest.exists() {
                    broken.push(format!("{shown}:{n}: {target}: no such file"));
                } else if !anchor.is_empty() && dest.extension().is_some_and(|e| e == "md") {
                    let heads = anchors(&std::fs::read_to_string(&dest).unwrap());
                    if !heads.contains(anchor) {
                        broken.push(format!("{shown}:{n}: {target}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 100,
        "only {checked} links found: is the parser right?"
    );
}

#[test]
fn anchors_follow_githubs_slug_rules() {
    assert_eq!(slug("GPU: CUDA and TensorRT"), "gpu-cuda-and-tensorrt");
    assert_eq!(
        slug("Adversarial backgrounds (the Backgrounds Challenge)"),
        "adversarial-backgrounds-the-backgrounds-challenge"
    );
    assert_eq!(slug("gaussian_noise"), "gaussian_noise");
    assert_eq!(
        slug("The model's view in robustream"),
        "the-models-view-in-robustream"
    );
    let a = anchors("# A\n```sh\n# not a heading\n```\n## A\n### `x` y\n");
    assert_eq!(a, ["a", "a-1", "x-y"].map(String::from).into());
    assert_eq!(
        link_targets("see [a](b.md#c) and `[x](not)` [d](#e)"),
        ["b.md#c", "#e"]
    );
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The `docs/<page>.md` citations in a text, each with its `#anchor` ("" without one).
fn citations(text: &str) -> Vec<(&str, &str)> {
    let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    let anchor_char =
        |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-');
    let mut out = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        let rest = &text[at + "docs/".len()..];
        let token = &rest[..rest.find(|c| !name_char(c)).unwrap_or(rest.len())];
        let Some(md) = token.find(".md") else {
            continue;
        };
        let page = &text[at..at + "docs/".len() + md + 3];
        let after = &rest[md + 3..];
        let anchor = after
            .strip_prefix('#')
            .map_or("", |a| &a[..a.find(|c| !anchor_char(c)).unwrap_or(a.len())]);
        out.push((page, anchor));
    }
    out
}

/// Doc comments, tests, scripts, configs and BENCHMARKS.md cite docs pages by path and anchor
/// (docs/README.md#how-the-code-cites-these-pages); a renamed heading or a moved section must take
/// its citations along.
#[test]
fn every_docs_citation_in_the_code_resolves() {
    let mut files = vec![root().join("BENCHMARKS.md")];
    for dir in ["src", "tests", "benches", "configs", "scripts", "deploy"] {
        files_under(&root().join(dir), &mut files);
    }
    let mut checked = 0;
    let mut broken = Vec::new();
    let mut headings = std::collections::BTreeMap::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // not text: a fixture image or model
        };
        let shown = file.strip_prefix(root()).unwrap().display().to_string();
        for (page, anchor) in citations(&text) {
            checked += 1;
            let dest = root().join(page);
            if !dest.is_file() {
                broken.push(format!("{shown}: {page}: no such file"));
                continue;
            }
            let heads = headings
                .entry(page.to_string())
                .or_insert_with(|| anchors(&std::fs::read_to_string(&dest).unwrap()));
            if !anchor.is_empty() && !heads.contains(anchor) {
                broken.push(format!("{shown}: {page}#{anchor}: no such heading"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken citations:\n{}",
        broken.join("\n")
    );
    assert!(
        checked > 100,
        "only {checked} citations found: is the scan right?"
    );
}

#[test]
fn citations_are_found_with_their_anchors() {
    assert_eq!(
        citations("see docs/in9.md#bg-gap), docs/README.md. and docs/<page>.md"),
        [("docs/in9.md", "bg-gap"), ("docs/README.md", "")]
    );
}
