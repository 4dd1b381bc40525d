//! `report.html` in a real browser: a run over every scenario family on the real model writes the
//! page, `robustream report --format html` rebuilds it byte for byte, and headless Chromium loads it
//! offline without a console error, fetching nothing, with every chart drawn (each chart's marks
//! measured by the browser's layout, not counted in the markup).

use std::path::Path;
use std::process::Command;

use crate::metrics::background_metrics::{SCENARIOS, write_manifest};
use crate::util::*;

/// Loads `report.html` in an iframe beside it and writes, once laid out, one line per chart
/// (`name drawn/marks`) plus the resources the page fetched and the errors it raised.
const PROBE: &str = r#"<!DOCTYPE html><html><body><pre id="out">waiting</pre>
<iframe id="f" src="report.html" width="1400" height="900"></iframe>
<script>
const errors = [];
const frame = document.getElementById('f');
frame.addEventListener('load', () => {
  const w = frame.contentWindow, d = frame.contentDocument;
  w.addEventListener('error', e => errors.push(String(e.message)));
  const lines = [];
  for (const svg of d.querySelectorAll('svg.chart')) {
    const marks = svg.querySelectorAll('.mark');
    let drawn = 0;
    for (const m of marks) {
      const b = m.getBBox();
      if (b.width > 0 || b.height > 0) drawn++;
    }
    lines.push('chart ' + svg.dataset.chart + ' ' + drawn + '/' + marks.length);
  }
  for (const img of d.querySelectorAll('img')) {
    lines.push('img ' + (img.complete && img.naturalWidth > 0 ? 'ok' : 'broken'));
  }
  for (const r of w.performance.getEntriesByType('resource')) lines.push('fetched ' + r.name);
  for (const e of errors) lines.push('error ' + e);
  document.getElementById('out').textContent = lines.join('\n') + '\nend';
});
</script></body></html>"#;

fn chromium() -> Command {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("no headless browser: install Debian's `chromium` (bash scripts/system.sh)");
    let mut cmd = Command::new(found);
    cmd.args([
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--allow-file-access-from-files",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=10000",
    ]);
    cmd
}

/// The probe's lines for the page in `dir`, and Chromium's console lines.
fn probe(dir: &Path) -> (Vec<String>, Vec<String>) {
    let probe = dir.join("probe.html");
    std::fs::write(&probe, PROBE).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let o = chromium()
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let dom = text(&o.stdout);
    let start = dom.find("<pre id=\"out\">").expect("the probe page") + "<pre id=\"out\">".len();
    let out = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    assert!(out.ends_with("end"), "the probe did not finish: {out}");
    let console = text(&o.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    (out.lines().map(String::from).collect(), console)
}

#[test]
fn the_html_report_loads_offline_and_draws_every_chart() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = write_manifest(dir.path(), None);
    let out = dir.path().join("run");
    let mut scenarios = vec![
        "clean",
        "corruption/fog/1",
        "corruption/fog/3",
        "corruption/fog/5",
    ];
    scenarios.extend_from_slice(SCENARIOS);
    let o = run(robustream()
        .args(["run", "--quiet", "--seed", "3", "--scenarios"])
        .arg(scenarios.join(","))
        .arg("--model")
        .arg(model())
        .arg("--source")
        .arg(&manifest)
        .arg("--out")
        .arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    // The page is rebuilt from the run directory alone, identically.
    let o = run(robustream().args(["report", "--format", "html"]).arg(&out));
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout) == page,
        "`report --format html` differs from report.html"
    );

    let (lines, console) = probe(&out);
    assert!(console.is_empty(), "console: {console:#?}");
    let charts: Vec<&String> = lines.iter().filter(|l| l.starts_with("chart ")).collect();
    assert_eq!(
        charts.len(),
        page.matches("<svg class=\"chart\"").count(),
        "{lines:#?}"
    );
    for want in [
        "scenarios",
        "fog",
        "in9",
        "ximagenet",
        "ablations",
        "rfs",
        "placement-square",
        "latency-infer",
    ] {
        assert!(
            charts.iter().any(|c| c.split(' ').nth(1) == Some(want)),
            "no {want} chart: {lines:#?}"
        );
    }
    for c in &charts {
        let (drawn, marks) = c.rsplit(' ').next().unwrap().split_once('/').unwrap();
        assert!(marks != "0" && drawn == marks, "not every mark drawn: {c}");
    }
    // Thumbnails of the flipped frames decode; nothing was fetched; no script error.
    assert!(lines.iter().any(|l| l == "img ok"), "{lines:#?}");
    for l in &lines {
        assert!(
            !l.starts_with("img broken") && !l.starts_with("fetched ") && !l.starts_with("error "),
            "{l}"
        );
    }
}
