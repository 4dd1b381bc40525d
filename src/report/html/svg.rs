//! Inline SVG charts for the HTML report: bars with intervals, lines with a band, heat maps and
//! histograms, each one `<svg class="chart">` element with its own axes and labels. Coordinates are
//! written with one decimal; every text is escaped ([`esc`]). No scripts, no external references:
//! a chart is plain markup any browser draws offline.

use std::fmt::Write as _;

/// Series colours (Okabe–Ito, distinguishable with the common colour-vision deficiencies).
const PALETTE: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#999999",
];

/// `s` escaped for HTML text and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A fraction as a percentage with one decimal (`42.9 %`), `—` when undefined.
pub(crate) fn pct(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map_or_else(|| "—".into(), |v| format!("{:.1} %", v * 100.0))
}

/// The plot area of a chart and the data ranges it maps.
struct Plot {
    /// Left, top, right, bottom of the plot area in SVG units.
    area: [f64; 4],
    /// Data range of x.
    x: (f64, f64),
    /// Data range of y.
    y: (f64, f64),
}

impl Plot {
    fn x(&self, v: f64) -> f64 {
        let [l, _, r, _] = self.area;
        let span = (self.x.1 - self.x.0).max(f64::MIN_POSITIVE);
        l + (v - self.x.0) / span * (r - l)
    }

    fn y(&self, v: f64) -> f64 {
        let [_, t, _, b] = self.area;
        let span = (self.y.1 - self.y.0).max(f64::MIN_POSITIVE);
        b - (v.clamp(self.y.0, self.y.1) - self.y.0) / span * (b - t)
    }
}

/// The width a chart needs for its bold 10-pixel title.
fn title_width(title: &str) -> f64 {
    title.chars().count() as f64 * 6.4 + 24.0
}

/// Opens a chart: the `svg` element, its accessible title and a white background.
fn open(out: &mut String, name: &str, title: &str, w: f64, h: f64) {
    let _ = write!(
        out,
        r##"<svg class="chart" data-chart="{}" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" xmlns="http://www.w3.org/2000/svg"><title>{}</title><rect class="bg" x="0" y="0" width="{w}" height="{h}" fill="#fff"/>"##,
        esc(name),
        esc(title)
    );
    let _ = write!(
        out,
        r#"<text class="t" x="{:.1}" y="14" text-anchor="middle" font-weight="bold">{}</text>"#,
        w / 2.0,
        esc(title)
    );
}

/// The y axis with gridlines at `ticks`, labelled by `label`.
fn y_axis(out: &mut String, p: &Plot, ticks: &[f64], label: impl Fn(f64) -> String) {
    let [l, _, r, _] = p.area;
    for &t in ticks {
        let y = p.y(t);
        let _ = write!(
            out,
            r##"<line x1="{l:.1}" y1="{y:.1}" x2="{r:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            l - 4.0,
            y + 4.0,
            esc(&label(t))
        );
    }
    let [_, t, _, b] = p.area;
    let _ = write!(
        out,
        r##"<line x1="{l:.1}" y1="{t:.1}" x2="{l:.1}" y2="{b:.1}" stroke="#333"/><line x1="{l:.1}" y1="{b:.1}" x2="{r:.1}" y2="{b:.1}" stroke="#333"/>"##
    );
}

fn percent_ticks() -> [f64; 6] {
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
}

fn percent_label(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// One bar of [`bars`]: label, value, optional interval, and a colour index.
pub(crate) struct Bar {
    /// The x label.
    pub(crate) label: String,
    /// Its value; `None` draws nothing but the label (and "n/a").
    pub(crate) value: Option<f64>,
    /// An interval drawn as a whisker.
    pub(crate) interval: Option<[f64; 2]>,
    /// Index into [`PALETTE`].
    pub(crate) colour: usize,
}

/// The value scale of a bar chart.
pub(crate) enum Scale {
    /// Fractions shown in percent, 0..1.
    Fraction,
    /// Plain numbers from 0 to the largest value (CE in percent, counts).
    From0,
}

/// A vertical bar chart with optional interval whiskers and a horizontal reference line.
pub(crate) fn bars(
    name: &str,
    title: &str,
    items: &[Bar],
    scale: Scale,
    reference: Option<f64>,
) -> String {
    let mut out = String::new();
    let step = if items.len() > 24 { 16.0 } else { 28.0 };
    let rotate = items
        .iter()
        .any(|b| b.label.chars().count() * 6 > step as usize);
    let bottom_room = if rotate {
        (items
            .iter()
            .map(|b| b.label.chars().count())
            .max()
            .unwrap_or(4) as f64
            * 5.2)
            .min(180.0)
            + 12.0
    } else {
        24.0
    };
    let w = (60.0 + step * items.len() as f64 + 20.0)
        .max(320.0)
        .max(title_width(title));
    let h = 180.0 + bottom_room;
    let values = items
        .iter()
        .filter_map(|b| b.value)
        .chain(items.iter().flat_map(|b| b.interval.unwrap_or([0.0; 2])))
        .chain(reference)
        .filter(|v| v.is_finite());
    let (lo, hi) = match scale {
        Scale::Fraction => (0.0, 1.0),
        Scale::From0 => (0.0, values.fold(0.0f64, f64::max)),
    };
    let (lo, hi) = nice_range(lo, hi);
    let p = Plot {
        area: [52.0, 26.0, w - 16.0, 180.0],
        x: (0.0, items.len().max(1) as f64),
        y: (lo, hi),
    };
    open(&mut out, name, title, w, h);
    let ticks = ticks(lo, hi);
    match scale {
        Scale::From0 => y_axis(&mut out, &p, &ticks, short_number),
        _ => y_axis(&mut out, &p, &ticks, percent_label),
    }
    let zero = p.y(0.0f64.clamp(lo, hi));
    let slot = (p.area[2] - p.area[0]) / items.len().max(1) as f64;
    for (i, b) in items.iter().enumerate() {
        let cx = p.x(i as f64 + 0.5);
        let bw = (slot * 0.7).max(2.0);
        let colour = PALETTE[b.colour % PALETTE.len()];
        match b.value.filter(|v| v.is_finite()) {
            Some(v) => {
                let y = p.y(v);
                let (top, height) = if y < zero {
                    (y, zero - y)
                } else {
                    (zero, y - zero)
                };
                let _ = write!(
                    out,
                    r#"<rect class="mark" x="{:.1}" y="{top:.1}" width="{bw:.1}" height="{:.1}" fill="{colour}"><title>{}: {}</title></rect>"#,
                    cx - bw / 2.0,
                    height.max(0.5),
                    esc(&b.label),
                    match scale {
                        Scale::From0 => short_number(v),
                        _ => pct(Some(v)),
                    }
                );
            }
            None => {
                let _ = write!(
                    out,
                    r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" fill="#999">n/a</text>"##,
                    zero - 4.0
                );
            }
        }
        if let Some([a, z]) = b.interval {
            let (ya, yz) = (p.y(a), p.y(z));
            let _ = write!(
                out,
                r##"<path class="mark" d="M{:.1} {ya:.1}H{:.1}M{cx:.1} {ya:.1}V{yz:.1}M{:.1} {yz:.1}H{:.1}" stroke="#222" fill="none"/>"##,
                cx - 4.0,
                cx + 4.0,
                cx - 4.0,
                cx + 4.0
            );
        }
        x_label(&mut out, cx, p.area[3], &b.label, rotate);
    }
    if let Some(r) = reference.filter(|r| r.is_finite()) {
        let y = p.y(r);
        let _ = write!(
            out,
            r##"<line class="mark" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#D55E00" stroke-dasharray="5 3"/>"##,
            p.area[0], p.area[2]
        );
    }
    out.push_str("</svg>");
    out
}

fn x_label(out: &mut String, x: f64, bottom: f64, label: &str, rotate: bool) {
    if rotate {
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="end" transform="rotate(-50 {x:.1} {:.1})">{}</text>"#,
            bottom + 12.0,
            bottom + 12.0,
            esc(label)
        );
    } else {
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            bottom + 14.0,
            esc(label)
        );
    }
}

/// One point of a [`severity_chart`]: severity, value, interval.
pub(crate) type SeverityPoint = (u8, Option<f64>, Option<[f64; 2]>);

/// Accuracy against severity 1–5 for one corruption: the 95 % interval as a band, the accuracy as
/// a line with points, and the clean accuracy as a dashed reference.
pub(crate) fn severity_chart(name: &str, points: &[SeverityPoint], clean: Option<f64>) -> String {
    let (w, h) = (230.0, 170.0);
    let p = Plot {
        area: [40.0, 24.0, w - 10.0, h - 26.0],
        x: (0.7, 5.3),
        y: (0.0, 1.0),
    };
    let mut out = String::new();
    open(&mut out, name, name, w, h);
    y_axis(&mut out, &p, &[0.0, 0.5, 1.0], percent_label);
    for s in 1..=5u8 {
        x_label(
            &mut out,
            p.x(f64::from(s)),
            p.area[3] - 2.0,
            &s.to_string(),
            false,
        );
    }
    let banded: Vec<(f64, [f64; 2])> = points
        .iter()
        .filter_map(|&(s, _, ci)| ci.map(|c| (f64::from(s), c)))
        .collect();
    if banded.len() > 1 {
        let mut d = String::new();
        for (i, (s, [lo, _])) in banded.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1} {:.1}",
                if i == 0 { "M" } else { "L" },
                p.x(*s),
                p.y(*lo)
            );
        }
        for (s, [_, hi]) in banded.iter().rev() {
            let _ = write!(d, "L{:.1} {:.1}", p.x(*s), p.y(*hi));
        }
        let _ = write!(
            out,
            r##"<path class="mark" d="{d}Z" fill="#0072B2" fill-opacity="0.18" stroke="none"/>"##
        );
    }
    let line: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|&(s, v, _)| v.filter(|v| v.is_finite()).map(|v| (f64::from(s), v)))
        .collect();
    polyline(&mut out, &p, &line, PALETTE[0]);
    for &(s, v) in &line {
        let _ = write!(
            out,
            r##"<circle class="mark" cx="{:.1}" cy="{:.1}" r="3" fill="#0072B2"><title>severity {s}: {}</title></circle>"##,
            p.x(s),
            p.y(v),
            pct(Some(v))
        );
    }
    if let Some(c) = clean.filter(|c| c.is_finite()) {
        let y = p.y(c);
        let _ = write!(
            out,
            r##"<line class="mark" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#009E73" stroke-dasharray="4 3"><title>clean: {}</title></line>"##,
            p.area[0],
            p.area[2],
            pct(Some(c))
        );
    }
    out.push_str("</svg>");
    out
}

fn polyline(out: &mut String, p: &Plot, points: &[(f64, f64)], colour: &str) {
    if points.len() < 2 {
        return;
    }
    let mut pts = String::new();
    for &(x, y) in points {
        let _ = write!(pts, "{:.1},{:.1} ", p.x(x), p.y(y));
    }
    let _ = write!(
        out,
        r#"<polyline class="mark" points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
        pts.trim_end()
    );
}

/// A named series of (x, y) points for [`lines`].
pub(crate) struct Series {
    /// Legend name.
    pub(crate) name: String,
    /// Points in x order.
    pub(crate) points: Vec<(f64, f64)>,
    /// Index into [`PALETTE`].
    pub(crate) colour: usize,
}

/// Line chart of several series against a shared x axis (`x_label` names it); y in percent when
/// `fractions`, else from 0 to the largest value.
pub(crate) fn lines(
    name: &str,
    title: &str,
    x_label: &str,
    series: &[Series],
    fractions: bool,
) -> String {
    let (w, h) = (640.0, 220.0);
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x0, x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    let (x0, x1) = if x0.is_finite() && x1 > x0 {
        (x0, x1)
    } else {
        (0.0, 1.0)
    };
    let (y0, y1) = if fractions {
        let lo = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::min);
        nice_range(lo, 1.0)
    } else {
        let hi = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max);
        nice_range(0.0, hi)
    };
    let p = Plot {
        area: [52.0, 26.0, w - 120.0, h - 30.0],
        x: (x0, x1),
        y: (y0, y1),
    };
    let mut out = String::new();
    open(&mut out, name, title, w, h);
    let t = ticks(y0, y1);
    if fractions {
        y_axis(&mut out, &p, &t, percent_label);
    } else {
        y_axis(&mut out, &p, &t, short_number);
    }
    for v in ticks(x0, x1) {
        x_axis_tick(&mut out, &p, v);
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (p.area[0] + p.area[2]) / 2.0,
        h - 4.0,
        esc(x_label)
    );
    for (i, s) in series.iter().enumerate() {
        let colour = PALETTE[s.colour % PALETTE.len()];
        polyline(&mut out, &p, &s.points, colour);
        if s.points.len() == 1 {
            let (x, y) = s.points[0];
            let _ = write!(
                out,
                r#"<circle class="mark" cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                p.x(x),
                p.y(y)
            );
        }
        let ly = 34.0 + 16.0 * i as f64;
        let _ = write!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            w - 112.0,
            ly - 9.0,
            w - 98.0,
            ly,
            esc(&s.name)
        );
    }
    out.push_str("</svg>");
    out
}

fn x_axis_tick(out: &mut String, p: &Plot, v: f64) {
    let x = p.x(v);
    let _ = write!(
        out,
        r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
        p.area[3],
        p.area[3] + 4.0,
        p.area[3] + 15.0,
        esc(&short_number(v))
    );
}

/// A heat map: `rows` × `cols` cells coloured by a fraction in 0..1 (white → blue), each cell
/// labelled with its percentage; `None` cells are grey.
pub(crate) fn heatmap(
    name: &str,
    title: &str,
    rows: &[String],
    cols: &[String],
    value: impl Fn(usize, usize) -> Option<f64>,
) -> String {
    let (cw, ch) = (58.0, 24.0);
    let left = 12.0 + rows.iter().map(|r| r.chars().count()).max().unwrap_or(4) as f64 * 6.5;
    let w = left + cw * cols.len() as f64 + 12.0;
    let h = 44.0 + ch * rows.len() as f64 + 8.0;
    let mut out = String::new();
    open(
        &mut out,
        name,
        title,
        w.max(240.0).max(title_width(title)),
        h,
    );
    for (j, c) in cols.iter().enumerate() {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="36" text-anchor="middle">{}</text>"#,
            left + cw * (j as f64 + 0.5),
            esc(c)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = 42.0 + ch * i as f64;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            left - 6.0,
            y + 16.0,
            esc(r)
        );
        for (j, col) in cols.iter().enumerate() {
            let x = left + cw * j as f64;
            let v = value(i, j).filter(|v| v.is_finite());
            let fill = v.map_or_else(|| "#eee".to_string(), blue);
            let ink = if v.is_some_and(|v| v > 0.6) {
                "#fff"
            } else {
                "#222"
            };
            let _ = write!(
                out,
                r##"<rect class="mark" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}" stroke="#fff"><title>{} × {}: {}</title></rect><text x="{:.1}" y="{:.1}" text-anchor="middle" fill="{ink}">{}</text>"##,
                cw - 1.0,
                ch - 1.0,
                esc(r),
                esc(col),
                pct(v),
                x + cw / 2.0,
                y + 16.0,
                v.map_or_else(|| "—".into(), |v| format!("{:.0}%", v * 100.0))
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// White (0) to dark blue (1).
fn blue(v: f64) -> String {
    let v = v.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * v).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(247.0, 8.0),
        mix(251.0, 69.0),
        mix(255.0, 148.0)
    )
}

/// A latency histogram: one bar per fixed bucket (`(upper bound in µs, count)`, the last bound
/// `u64::MAX` for "above"), on bucket positions rather than a time scale, as the buckets grow
/// in 1–2.5–5 steps.
pub(crate) fn histogram(name: &str, title: &str, buckets: &[(u64, u64)]) -> String {
    let items: Vec<Bar> = buckets
        .iter()
        .map(|&(bound, n)| Bar {
            label: if bound == u64::MAX {
                "more".into()
            } else {
                format!("≤{}", micros(bound))
            },
            value: Some(n as f64),
            interval: None,
            colour: 5,
        })
        .collect();
    bars(name, title, &items, Scale::From0, None)
}

/// A duration in µs as `50µs`, `2.5ms`, `1s`.
fn micros(us: u64) -> String {
    if us < 1000 {
        format!("{us}µs")
    } else if us < 1_000_000 {
        format!("{}ms", short_number(us as f64 / 1000.0))
    } else {
        format!("{}s", short_number(us as f64 / 1e6))
    }
}

/// A number in at most 3 significant digits, without float noise (`0.25`, `1200`, `1.5k`).
fn short_number(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A range widened to round ends (steps of 1, 2 or 5 × 10ⁿ); an empty range becomes 0..1.
fn nice_range(lo: f64, hi: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi <= lo {
        return (lo.min(0.0), lo.max(0.0) + 1.0);
    }
    let step = nice_step((hi - lo) / 5.0);
    ((lo / step).floor() * step, (hi / step).ceil() * step)
}

fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    p * if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    }
}

/// About five round tick values from `lo` to `hi`.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    if (lo, hi) == (0.0, 1.0) {
        return percent_ticks().to_vec();
    }
    if hi.is_nan() || lo.is_nan() || hi <= lo {
        return vec![lo];
    }
    let step = nice_step((hi - lo) / 5.0);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(svg: &str, what: &str) -> usize {
        svg.matches(what).count()
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let svg = bars(
            "b",
            "<t>",
            &[Bar {
                label: "a<b".into(),
                value: Some(0.5),
                interval: None,
                colour: 0,
            }],
            Scale::Fraction,
            None,
        );
        assert!(!svg.contains("<t>") && !svg.contains("a<b"), "{svg}");
    }

    #[test]
    fn bars_draw_one_mark_per_value_and_whisker() {
        let items: Vec<Bar> = (0..4)
            .map(|i| Bar {
                label: format!("s{i}"),
                value: (i != 2).then_some(0.25 * i as f64),
                interval: (i == 1).then_some([0.1, 0.4]),
                colour: i,
            })
            .collect();
        let svg = bars("b", "t", &items, Scale::Fraction, Some(0.9));
        // Three bars, one whisker, one reference line.
        assert_eq!(count(&svg, r#"<rect class="mark""#), 3);
        assert_eq!(count(&svg, r#"<path class="mark""#), 1);
        assert_eq!(count(&svg, r#"<line class="mark""#), 1);
        assert!(svg.contains("n/a"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn severity_chart_has_band_line_points_and_clean() {
        let pts: Vec<SeverityPoint> = (1..=5u8)
            .map(|s| {
                let v = 1.0 - f64::from(s) * 0.15;
                (s, Some(v), Some([v - 0.1, v + 0.1]))
            })
            .collect();
        let svg = severity_chart("fog", &pts, Some(0.9));
        assert_eq!(count(&svg, "<circle"), 5);
        assert_eq!(count(&svg, "<polyline"), 1);
        assert_eq!(count(&svg, r#"fill-opacity="0.18""#), 1);
        assert_eq!(count(&svg, r#"<line class="mark""#), 1);
    }

    #[test]
    fn heatmap_colours_defined_cells_and_greys_the_rest() {
        let rows = vec!["centre".to_string(), "corner".to_string()];
        let cols = vec!["56".to_string(), "112".to_string()];
        let svg = heatmap("h", "t", &rows, &cols, |i, j| (i + j < 2).then_some(0.5));
        assert_eq!(count(&svg, r#"<rect class="mark""#), 4);
        assert_eq!(count(&svg, r##"fill="#eee""##), 1);
        assert_eq!(blue(0.0), "#f7fbff");
        assert_eq!(blue(1.0), "#084594");
    }

    #[test]
    fn numbers_and_ranges_are_round() {
        assert_eq!(short_number(0.25), "0.25");
        assert_eq!(short_number(1200.0), "1200");
        assert_eq!(short_number(15000.0), "15k");
        assert_eq!(short_number(3.0), "3");
        assert_eq!(micros(2500), "2.5ms");
        assert_eq!(micros(50), "50µs");
        assert_eq!(nice_range(0.0, 87.0), (0.0, 100.0));
        let (lo, hi) = nice_range(-0.13, 0.42);
        assert!(
            (lo + 0.2).abs() < 1e-12 && (hi - 0.6).abs() < 1e-12,
            "{lo} {hi}"
        );
        assert_eq!(ticks(0.0, 100.0), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_range(0.0, 0.0), (0.0, 1.0));
        assert_eq!(pct(None), "—");
        assert_eq!(pct(Some(0.4286)), "42.9 %");
    }
}
