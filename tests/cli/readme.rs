//! The README's examples are true: the demo's table is what `robustream run --config
//! configs/demo.toml` prints.

use crate::util::*;

#[test]
fn the_readme_shows_what_the_demo_prints() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let start = readme
        .find("```text\nscenario ")
        .expect("the README shows the demo's table");
    let block = &readme[start + "```text\n".len()..];
    let block = &block[..block.find("```").unwrap()];
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
