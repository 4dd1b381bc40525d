//! `report.html`: the run as one self-contained page people open and send — inline SVG and CSS,
//! no scripts, no fonts or images from anywhere (thumbnails are data URIs), so it opens offline
//! and passes through mail and chat unchanged. Written beside `summary.json` by every run (interim
//! ones too, with a "running" badge) and by `robustream report RUN_DIR --format html`.
//!
//! Sections, each present only when the run has what it shows (ids are stable, for links):
//!
//! | id | what |
//! |---|---|
//! | `overview` | model, source, plan, frames (read, skipped, dropped, lost), end, wall time; headline figures |
//! | `scenarios` | top-1 per scenario with its 95 % Wilson interval (agreement with clean when unlabelled) |
//! | `imagenet-c` | accuracy against severity per corruption with the 95 % band and clean as reference; CE and relative CE per corruption against the baseline, mCE |
//! | `in9` | IN-9 accuracy per variation, BG-gap, challenge accuracy |
//! | `ximagenet` | XIMAGENET-12 per-scenario drop volatility (C(i) − μ)², σ²_cross, scores |
//! | `ablations` | Hard ImageNet ablation accuracy and drop |
//! | `rfs` | RFS per noise and level, with the foreground and background accuracies |
//! | `placement` | Corner Cases accuracy on a position × size grid per variant, pooled over backgrounds |
//! | `groups` | top-1 per group of each dimension with its 95 % Wilson interval, the reference group's as a line; gaps and the worst group (docs/groups.md) |
//! | `latency` | per stage: a histogram over the fixed buckets (`latency::BUCKET_BOUNDS_US`) and p50/p90/p99/max |
//! | `timeline` | frames evaluated and dropped per second (from `resources.csv`), windowed clean top-1 and mean drop (`metrics.window.series`) |
//! | `flips` | the frames whose prediction flipped most (`flips.json`), thumbnails with clean and flipped predictions |
//! | `table` | every scenario's numbers as in `summary.md` |
//!
//! Every chart is an `<svg class="chart" data-chart="…">`; its drawn marks carry `class="mark"`.

pub(crate) mod svg;

use std::fmt::Write as _;
use std::path::Path;

use self::svg::{Bar, Scale, Series, esc, pct};
use super::families::{FAMILIES, window};
use super::family::charted;
use super::flips::FlipFrame;
use super::summary::Summary;
use crate::key::{CLEAN, family};
use crate::latency::BUCKET_BOUNDS_US;
use crate::metrics::Metrics;

/// File name of the HTML report in a run directory.
pub(crate) const REPORT_HTML: &str = "report.html";

/// One stage's latency for the report: name, counts per fixed bucket (not cumulative; the last
/// bucket counts values above the largest finite bound) and quantiles in ms.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StageLatency {
    /// Stage name.
    pub(crate) stage: String,
    /// `(upper bound µs, count)` per bucket of [`BUCKET_BOUNDS_US`].
    pub(crate) buckets: Vec<(u64, u64)>,
}

/// One line of `resources.csv`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ResourceSample {
    /// Seconds since the run started.
    pub(crate) t_s: f64,
    /// Frames handled so far (evaluated, skipped and dropped).
    pub(crate) frames: u64,
    /// Of those, dropped at admission (absent in files written before the column existed).
    pub(crate) dropped: Option<u64>,
}

/// What the page is made of.
pub(crate) struct HtmlReport<'a> {
    /// The run's summary.
    pub(crate) summary: &'a Summary,
    /// Latency histograms per stage, pipeline order.
    pub(crate) latency: Vec<StageLatency>,
    /// `resources.csv`, in order.
    pub(crate) resources: Vec<ResourceSample>,
    /// The most-flipped frames.
    pub(crate) flips: Vec<FlipFrame>,
}

/// The latency histograms of `metrics`, stages seen only.
pub(crate) fn latency_of(metrics: &Metrics) -> Vec<StageLatency> {
    metrics
        .latencies()
        .filter(|(_, h)| !h.is_empty())
        .map(|(stage, h)| {
            let mut below = 0;
            let mut buckets: Vec<(u64, u64)> = h
                .cumulative_buckets()
                .map(|(bound, cumulative)| {
                    let n = cumulative - below;
                    below = cumulative;
                    (bound, n)
                })
                .collect();
            buckets.push((
                BUCKET_BOUNDS_US[BUCKET_BOUNDS_US.len() - 1],
                h.len() - below,
            ));
            // Leading and trailing empty buckets say nothing.
            let first = buckets.iter().position(|b| b.1 > 0).unwrap_or(0);
            let last = buckets.iter().rposition(|b| b.1 > 0).unwrap_or(0);
            StageLatency {
                stage: stage.name().to_string(),
                buckets: buckets[first..=last.max(first)].to_vec(),
            }
        })
        .collect()
}

/// Reads `resources.csv` (`t_s,rss_mib,frames[,dropped]`); lines that do not parse are left out
/// (the file of a killed run may end mid-line) and a missing file is no samples.
pub(crate) fn read_resources(path: &Path) -> Vec<ResourceSample> {
    let Ok(text) = crate::fsread::read_text_io(path, 64 << 20) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut f = line.split(',');
            let t_s = f.next()?.parse().ok()?;
            let _rss = f.next()?;
            let frames = f.next()?.parse().ok()?;
            let dropped = f.next().and_then(|d| d.parse().ok());
            Some(ResourceSample {
                t_s,
                frames,
                dropped,
            })
        })
        .collect()
}

impl HtmlReport<'_> {
    /// The page.
    pub(crate) fn render(&self) -> String {
        let s = self.summary;
        let title = s
            .run
            .config
            .as_deref()
            .or(Some(s.run.source.as_str()).filter(|t| !t.is_empty()))
            .unwrap_or("run");
        let mut out = String::with_capacity(64 << 10);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>robustream — {}</title><style>{CSS}</style></head><body>\n",
            esc(title)
        );
        let _ = write!(out, "<h1>robustream report <small>{}</small>", esc(title));
        if self.end() == "running" {
            out.push_str(" <span class=\"badge\">running — interim</span>");
        }
        out.push_str("</h1>\n");
        let sections = std::iter::once(Some(self.overview()))
            .chain([self.scenarios_section()])
            .chain(FAMILIES.iter().map(|f| f.html(s)))
            .chain([
                self.latency(),
                self.timeline(),
                self.flips(),
                Some(self.table()),
            ]);
        for section in sections.flatten() {
            out.push_str(&section);
            out.push('\n');
        }
        let _ = write!(
            out,
            "<footer>written by robustream {} · one file, no network: charts are inline SVG, \
             thumbnails data URIs</footer>\n</body></html>\n",
            env!("CARGO_PKG_VERSION")
        );
        out
    }

    fn end(&self) -> &str {
        self.summary.run.end.map_or("", |e| e.as_str())
    }

    fn overview(&self) -> String {
        let s = self.summary;
        let r = &s.run;
        let text = |t: &str| (!t.is_empty()).then(|| t.to_string());
        let mut rows: Vec<(&str, String)> = [
            ("model", text(&r.model)),
            ("engine", text(&r.engine)),
            ("source", text(&r.source)),
            ("schedule", text(&r.schedule)),
            ("seed", (!r.is_unknown()).then(|| r.seed.to_string())),
            ("end", r.end.map(|e| e.as_str().to_string())),
            // As summary.json writes it (`12.0`, not `12`).
            (
                "wall time (s)",
                r.wall_s.map(|w| serde_json::Value::from(w).to_string()),
            ),
        ]
        .into_iter()
        .filter_map(|(label, v)| Some((label, v?)))
        .collect();
        // Which device the run is (docs/prometheus.md#which-device-a-run-is).
        if !r.labels.is_empty() {
            let pairs: Vec<String> = r.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            rows.push(("labels", pairs.join(", ")));
        }
        rows.push(("scenarios", s.scenarios.len().to_string()));
        let f = &s.frames;
        rows.push((
            "frames",
            format!(
                "{} read · {} skipped · {} dropped{}",
                f.read,
                f.skipped,
                f.dropped,
                if f.lost > 0 {
                    format!(
                        " · {} lost by the source{}",
                        f.lost,
                        f.lost_causes_bracketed()
                    )
                } else {
                    String::new()
                }
            ),
        ));
        let mut out =
            String::from("<section id=\"overview\"><h2>Overview</h2><div class=\"cards\">");
        for (label, value) in self.headline() {
            let _ = write!(
                out,
                "<div class=\"card\"><div class=\"v\">{}</div><div class=\"k\">{}</div></div>",
                esc(&value),
                esc(label)
            );
        }
        out.push_str("</div><table class=\"kv\">");
        for (k, v) in rows {
            let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
        }
        out.push_str("</table></section>");
        out
    }

    /// The figures a reader looks for first.
    fn headline(&self) -> Vec<(&'static str, String)> {
        let s = self.summary;
        let mut out = Vec::new();
        if let Some((_, clean)) = s.scenarios.iter().find(|(k, _)| k == CLEAN)
            && clean.top1.is_some()
        {
            out.push(("clean top-1", pct(clean.top1)));
        }
        let drops: Vec<f64> = s
            .scenarios
            .iter()
            .filter(|(k, _)| k != CLEAN)
            .filter_map(|(_, v)| v.drop)
            .collect();
        if !drops.is_empty() {
            let mean = drops.iter().sum::<f64>() / drops.len() as f64;
            out.push(("mean top-1 drop", pct(Some(mean))));
        }
        for f in FAMILIES {
            out.extend(f.headline(s));
        }
        out
    }

    fn scenarios_section(&self) -> Option<String> {
        let s = self.summary;
        if s.scenarios.is_empty() {
            return None;
        }
        let families: Vec<&str> = {
            let mut f: Vec<&str> = s.scenarios.iter().map(|(k, _)| family(k)).collect();
            f.dedup();
            f
        };
        let items: Vec<Bar> = s
            .scenarios
            .iter()
            .map(|(k, v)| {
                let (value, interval) = charted(s, v);
                Bar {
                    label: k.clone(),
                    value,
                    interval,
                    colour: families.iter().position(|f| *f == family(k)).unwrap_or(0),
                }
            })
            .collect();
        let what = if super::family::labelled(s) {
            "Top-1 accuracy per scenario (whiskers: 95 % Wilson interval)"
        } else {
            "Agreement with clean per scenario (no truth labels)"
        };
        Some(format!(
            "<section id=\"scenarios\"><h2>Scenarios</h2><div class=\"scroll\">{}</div></section>",
            svg::bars("scenarios", what, &items, Scale::Fraction, None)
        ))
    }

    fn latency(&self) -> Option<String> {
        if self.latency.is_empty() {
            return None;
        }
        let mut out = String::from(
            "<section id=\"latency\"><h2>Latency per stage</h2><p>Records per latency bucket; \
             quantiles in ms.</p><div class=\"grid\">",
        );
        for st in &self.latency {
            let q = self
                .summary
                .latency_ms
                .iter()
                .find(|(k, _)| *k == st.stage)
                .map(|(_, q)| format!(" — p50 {} · p99 {} · max {} ms", q.p50, q.p99, q.max))
                .unwrap_or_default();
            out.push_str(&svg::histogram(
                &format!("latency-{}", st.stage),
                &format!("{}{q}", st.stage),
                &st.buckets,
            ));
        }
        out.push_str("</div></section>");
        Some(out)
    }

    fn timeline(&self) -> Option<String> {
        let mut charts = String::new();
        // At least two intervals: one second of an offline run says nothing over time.
        if self.resources.len() > 2 {
            let mut evaluated = Vec::new();
            let mut dropped = Vec::new();
            for w in timeline_samples(&self.resources).windows(2) {
                let dt = w[1].t_s - w[0].t_s;
                if dt <= 0.0 {
                    continue;
                }
                let d = match (w[0].dropped, w[1].dropped) {
                    (Some(a), Some(b)) => b.saturating_sub(a),
                    _ => 0,
                };
                let handled = w[1].frames.saturating_sub(w[0].frames);
                evaluated.push((w[1].t_s, handled.saturating_sub(d) as f64 / dt));
                dropped.push((w[1].t_s, d as f64 / dt));
            }
            let mut series = vec![Series {
                name: "evaluated".into(),
                points: evaluated,
                colour: 0,
            }];
            if self.resources.iter().any(|r| r.dropped.is_some()) {
                series.push(Series {
                    name: "dropped".into(),
                    points: dropped,
                    colour: 3,
                });
            }
            charts.push_str(&svg::lines(
                "frames-per-second",
                "Frames per second",
                "seconds since start",
                &series,
                false,
            ));
        }
        if let Some(chart) = window::timeline_chart(self.summary) {
            charts.push_str(&chart);
        }
        (!charts.is_empty())
            .then(|| format!("<section id=\"timeline\"><h2>Timeline</h2>{charts}</section>"))
    }

    fn flips(&self) -> Option<String> {
        if self.flips.is_empty() {
            return None;
        }
        let mut out = String::from(
            "<section id=\"flips\"><h2>Frames whose prediction flipped most</h2><div class=\"flips\">",
        );
        for f in &self.flips {
            let mark = |c: Option<bool>| match c {
                Some(true) => " ✓",
                Some(false) => " ✗",
                None => "",
            };
            let _ = write!(
                out,
                "<figure class=\"flip\"><img alt=\"{}\" src=\"{}\"><figcaption><b>{}</b><br>{} of {} \
                 variants flipped{}<br>clean: {} ({:.0} %){}<ul>",
                esc(&f.frame),
                esc(&f.thumbnail),
                esc(&f.frame),
                f.flips,
                f.variants,
                f.truth
                    .as_ref()
                    .map_or_else(String::new, |t| format!("<br>truth: {}", esc(t))),
                esc(&f.clean.label),
                f.clean.prob * 100.0,
                mark(f.clean_correct)
            );
            for v in &f.flipped {
                let _ = write!(
                    out,
                    "<li>{}: {} ({:.0} %){}</li>",
                    esc(&v.scenario),
                    esc(&v.guess.label),
                    v.guess.prob * 100.0,
                    mark(v.correct)
                );
            }
            out.push_str("</ul></figcaption></figure>");
        }
        out.push_str("</div></section>");
        Some(out)
    }

    fn table(&self) -> String {
        let mut out = String::from(
            "<section id=\"table\"><h2>All scenarios</h2><table><tr><th>scenario</th><th>n</th>\
             <th>top-1</th><th>95 % CI</th><th>top-5</th><th>drop</th><th>agreement</th>\
             <th>flip</th></tr>",
        );
        for (k, v) in &self.summary.scenarios {
            let ci = v.top1_ci95.map_or_else(
                || "—".into(),
                |[a, b]| format!("{:.1}–{:.1} %", a * 100.0, b * 100.0),
            );
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{ci}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(k),
                v.n,
                pct(v.top1),
                pct(v.top5),
                pct(v.drop),
                pct(v.agreement),
                pct(v.flip)
            );
        }
        out.push_str("</table></section>");
        out
    }
}

/// At most this many rate points on the frames-per-second chart: a day-long soak samples
/// `resources.csv` 86,400 times, which would make the page (rewritten every interim summary) megabytes
/// of polyline.
const TIMELINE_POINTS: usize = 600;

/// Every k-th sample (k chosen to leave at most [`TIMELINE_POINTS`] intervals) and the last, so
/// each rate is the mean over k seconds rather than a point in time.
fn timeline_samples(samples: &[ResourceSample]) -> Vec<ResourceSample> {
    let stride = samples
        .len()
        .saturating_sub(1)
        .div_ceil(TIMELINE_POINTS)
        .max(1);
    let mut kept: Vec<ResourceSample> = samples.iter().step_by(stride).copied().collect();
    if let Some(&last) = samples.last()
        && kept.last() != Some(&last)
    {
        kept.push(last);
    }
    kept
}

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1280px;\
padding:0 16px;color:#222}h1 small{font-weight:normal;color:#666;font-size:60%}\
h2{border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}\
.badge{background:#E69F00;color:#fff;border-radius:4px;padding:2px 8px;font-size:55%;vertical-align:middle}\
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}.card{border:1px solid #ddd;\
border-radius:6px;padding:8px 14px;min-width:120px}.card .v{font-size:22px;font-weight:bold}\
.card .k{color:#666}table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 10px;\
border-bottom:1px solid #eee;text-align:right}td:first-child,th:first-child{text-align:left}\
table.kv th{text-align:left;color:#555;font-weight:normal}table.kv td{text-align:left}\
.grid{display:flex;flex-wrap:wrap;gap:8px}.scroll{overflow-x:auto}svg.chart{font-size:10px;\
margin:4px}.flips{display:flex;flex-wrap:wrap;gap:12px}figure.flip{margin:0;width:230px;\
border:1px solid #ddd;border-radius:6px;padding:8px}figure.flip img{display:block;\
image-rendering:auto;max-width:112px;max-height:112px}figure.flip ul{margin:4px 0;padding-left:16px}\
footer{margin-top:40px;color:#888;font-size:12px}";

#[cfg(test)]
mod tests;
