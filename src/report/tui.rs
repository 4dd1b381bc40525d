//! The live terminal view of a run: a full-screen ratatui view on
//! stderr that a person watching a camera run reads at a glance —
//!
//! - the stream: frames in and frames evaluated per second, drops (count and share), skipped items,
//!   elapsed time, the schedule;
//! - one row per scenario: the cumulative figure with a bar, the sliding window's figure next to it,
//!   and the drop against `clean` — top-1 accuracy when frames carry a truth, agreement with the
//!   clean prediction when they do not (docs/imagenet-c.md#imagenet-p-flip-probability);
//! - the window's drop volatility and the temporal volatility of its mean drop;
//! - latency percentiles per stage (p50 / p90 / p99, ms);
//! - the latest warnings, with their count.
//!
//! It is chosen by `[report] view` / `--view` (`auto`: on when stderr is a terminal and the run is
//! not `--quiet`); otherwise [`super::progress`] prints a bar or plain lines. The view holds the
//! terminal in raw mode, so Ctrl-C arrives as a key: [`watch_keys`] turns `q`, Esc and Ctrl-C into
//! the run's stop flag (a second Ctrl-C aborts, as outside the view). The terminal is restored on
//! drop and on panic.
//!
//! [`render`] is a pure function of a [`Snapshot`], tested on ratatui's in-memory backend.

use std::io::{IsTerminal, Stderr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};
use serde::Deserialize;

use super::summary::FrameCounts;
use crate::key::CLEAN;
use crate::metrics::{Metrics, Stage};

/// Most redraws per second.
const REFRESH: Duration = Duration::from_millis(200);

/// `[report] view` / `--view`: how a run shows its progress on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ViewMode {
    /// The live view when stderr is a terminal (and not `--quiet`), else plain progress lines.
    #[default]
    Auto,
    /// The live view (falls back to plain lines when stderr is not a terminal).
    Live,
    /// A progress bar on a terminal, plain lines otherwise.
    Plain,
}

impl ViewMode {
    /// Whether this mode shows the live view here: stderr is a terminal, `TERM` is not `dumb`,
    /// and the run is not quiet.
    pub(crate) fn wants_live(self, quiet: bool) -> bool {
        let terminal =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        !quiet && terminal && matches!(self, ViewMode::Auto | ViewMode::Live)
    }
}

/// One scenario's row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ScenarioRow {
    /// Scenario key.
    pub(crate) key: String,
    /// Records so far.
    pub(crate) n: u64,
    /// Cumulative top-1 accuracy (labelled) or agreement with clean (unlabelled), 0..1.
    pub(crate) value: Option<f64>,
    /// The same over the sliding window.
    pub(crate) window: Option<f64>,
    /// Cumulative drop against clean: accuracy drop, or 1 − agreement when unlabelled.
    pub(crate) drop: Option<f64>,
}

/// Everything the view shows, taken from the run's state at one moment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    /// The source, one line.
    pub(crate) source: String,
    /// The schedule, one line.
    pub(crate) schedule: String,
    /// Seconds since the run started.
    pub(crate) elapsed_s: f64,
    /// Frame counts (`read` includes dropped frames).
    pub(crate) frames: FrameCounts,
    /// Whether the rows are accuracies (frames carry a truth) or agreements.
    pub(crate) labelled: bool,
    /// Rows in plan order, `clean` first.
    pub(crate) rows: Vec<ScenarioRow>,
    /// The window's length in frames, and its drop volatility and the temporal volatility of its
    /// mean drop.
    pub(crate) window: Option<(usize, Option<f64>, Option<f64>)>,
    /// `(stage, p50, p90, p99)` in ms.
    pub(crate) latency: Vec<(Stage, f64, f64, f64)>,
    /// Warnings so far and the latest few.
    pub(crate) warnings: (u64, Vec<String>),
}

impl Snapshot {
    /// The snapshot of a run's metrics and counts.
    pub(crate) fn take(
        metrics: &Metrics,
        frames: &FrameCounts,
        elapsed: Duration,
        (source, schedule): (&str, &str),
        warnings: (u64, Vec<String>),
    ) -> Self {
        let labelled = metrics.tally(CLEAN).is_some_and(|t| t.top1().is_some());
        let window = metrics.window();
        let rows = metrics
            .tallies()
            .map(|(key, t)| {
                let w = window
                    .as_ref()
                    .and_then(|w| w.scenarios.iter().find(|s| s.scenario == key));
                let (value, win, drop) = if labelled {
                    (t.top1(), w.and_then(|w| w.top1), t.drop())
                } else {
                    let agree = if key == CLEAN {
                        Some(1.0)
                    } else {
                        t.agreement()
                    };
                    (
                        agree,
                        w.and_then(|w| if key == CLEAN { Some(1.0) } else { w.agreement }),
                        agree.map(|a| 1.0 - a),
                    )
                };
                ScenarioRow {
                    key: key.to_string(),
                    n: t.n,
                    value,
                    window: win,
                    drop: if key == CLEAN { None } else { drop },
                }
            })
            .collect();
        let mut latency: Vec<(Stage, f64, f64, f64)> = metrics
            .latencies()
            .map(|(stage, h)| {
                let q = h.quantiles();
                (stage, q.p50, q.p90, q.p99)
            })
            .collect();
        // How fresh the records are comes first (a short terminal cuts the panel's last lines):
        // `age` (capture → written) and `wait` (capture → work starts), then pipeline order.
        latency.sort_by_key(|(stage, ..)| match stage {
            Stage::Age => 0,
            Stage::Wait => 1,
            _ => 2,
        });
        Snapshot {
            source: source.to_string(),
            schedule: schedule.to_string(),
            elapsed_s: elapsed.as_secs_f64(),
            frames: frames.clone(),
            labelled,
            rows,
            window: window.map(|w| (w.frames, w.drop_volatility, w.temporal_volatility)),
            latency,
            warnings,
        }
    }
}

/// A bar of `width` cells for a value in 0..1 (eighths of a cell).
fn bar(value: f64, width: usize) -> String {
    const EIGHTHS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let v = if value.is_finite() {
        value.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let eighths = (v * width as f64 * 8.0).round() as usize;
    let mut s: String = "█".repeat(eighths / 8);
    if !eighths.is_multiple_of(8) && s.chars().count() < width {
        s.push(EIGHTHS[eighths % 8]);
    }
    let pad = width.saturating_sub(s.chars().count());
    s.extend(std::iter::repeat_n(' ', pad));
    s
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{:.1}", v * 100.0))
}

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 { n as f64 / s } else { 0.0 }
}

/// Draws the view of `s` into `area` of `frame`: the stream on top, the scenario table with the
/// window and latency panel beside it, the warnings at the foot.
fn render(frame: &mut ratatui::Frame, area: Rect, s: &Snapshot) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Min(5),
        Constraint::Length(4),
    ])
    .areas(area);
    let strong = Style::default().add_modifier(Modifier::BOLD);
    render_stream(frame, head, s, strong);
    let [table_area, side] =
        Layout::horizontal([Constraint::Min(40), Constraint::Length(38)]).areas(body);
    render_scenarios(frame, table_area, s, strong);
    render_side(frame, side, s, strong);
    render_warnings(frame, foot, s, strong);
}

/// The head: the source and schedule, then the stream's rates, drops (yellow when any, with the
/// frames the source lost), skipped items and frames read.
fn render_stream(frame: &mut ratatui::Frame, area: Rect, s: &Snapshot, strong: Style) {
    let evaluated = s.frames.read.saturating_sub(s.frames.dropped);
    let dropped_share = if s.frames.read > 0 {
        s.frames.dropped as f64 / s.frames.read as f64
    } else {
        0.0
    };
    let drop_style = if s.frames.dropped > 0 {
        Style::default().fg(Color::Yellow)
    } else {
        Style::default()
    };
    let stream = vec![
        Line::from(vec![
            Span::styled("robustream ", strong),
            Span::raw(format!("{}  ·  {}", s.source, s.schedule)),
        ]),
        Line::from(vec![
            Span::raw(format!(
                "{:.0} s  ·  in {:.1} frames/s  ·  evaluated {:.1} frames/s  ·  ",
                s.elapsed_s,
                rate(s.frames.read, s.elapsed_s),
                rate(evaluated, s.elapsed_s),
            )),
            Span::styled(
                format!(
                    "dropped {} ({:.1} %)",
                    s.frames.dropped,
                    dropped_share * 100.0
                ),
                drop_style,
            ),
            Span::raw(match s.frames.lost {
                0 => String::new(),
                n => format!(" + {n} lost by the source"),
            }),
            Span::raw(format!(
                "  ·  skipped {}  ·  frames {}",
                s.frames.skipped, s.frames.read
            )),
            // Last, so that a narrow terminal cuts the causes rather than the counts.
            Span::raw(
                s.frames
                    .lost_causes_text()
                    .map_or_else(String::new, |c| format!("  ·  lost: {c}")),
            ),
        ]),
    ];
    let stream = Paragraph::new(stream).block(Block::default().borders(Borders::BOTTOM));
    frame.render_widget(stream, area);
}

/// The rows that fit in `fit` lines, and whether that is all of them: every row in plan order when
/// they fit, else `clean` first and then the lowest figures (what needs attention).
fn shown_rows(s: &Snapshot, fit: usize) -> (Vec<&ScenarioRow>, bool) {
    let mut rows: Vec<&ScenarioRow> = s.rows.iter().collect();
    let shown_all = rows.len() <= fit;
    if !shown_all {
        let (clean, mut rest): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.key == CLEAN);
        rest.sort_by(|a, b| {
            a.value
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.value.unwrap_or(f64::INFINITY))
        });
        rows = clean.into_iter().chain(rest).take(fit).collect();
    }
    (rows, shown_all)
}

/// The scenario table: per row shown ([`shown_rows`]) its records, cumulative figure with a bar,
/// the window's figure and the drop against clean; the title says when rows were left out.
fn render_scenarios(frame: &mut ratatui::Frame, area: Rect, s: &Snapshot, strong: Style) {
    // Rows that fit inside the borders and under the header.
    let fit = area.height.saturating_sub(3) as usize;
    let (rows, shown_all) = shown_rows(s, fit);
    let what = if s.labelled { "top-1 %" } else { "agree %" };
    let header = Row::new(vec![
        Cell::from("scenario"),
        Cell::from("n"),
        Cell::from(what),
        Cell::from(""),
        Cell::from("window %"),
        Cell::from("drop %"),
    ])
    .style(strong);
    let (key_width, bar_width) = scenario_widths(area.width, rows.iter().map(|r| r.key.as_str()));
    let body_rows = rows.iter().map(|r| {
        Row::new(vec![
            Cell::from(r.key.clone()),
            Cell::from(r.n.to_string()),
            Cell::from(pct(r.value)),
            Cell::from(bar(r.value.unwrap_or(0.0), bar_width))
                .style(Style::default().fg(Color::Cyan)),
            Cell::from(pct(r.window)),
            Cell::from(pct(r.drop)),
        ])
    });
    let title = if shown_all {
        format!(" scenarios ({}) ", s.rows.len())
    } else {
        format!(
            " scenarios: clean + lowest {} of {} ",
            rows.len().saturating_sub(1),
            s.rows.len()
        )
    };
    let table = Table::new(
        body_rows,
        [
            Constraint::Length(key_width),
            Constraint::Length(7),
            Constraint::Length(8),
            Constraint::Length(bar_width as u16),
            Constraint::Length(9),
            Constraint::Length(7),
        ],
    )
    .header(header)
    .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, area);
}

/// The widths of the scenario table's key and bar columns in a table `width` cells wide: the key
/// column as wide as the longest key shown (so `corruption/elastic_transform/5` is not cut at 120
/// columns), the bar taking what is left up to 20 cells; only when even a bar-less table is too
/// narrow for a key is the key cut.
fn scenario_widths<'a>(width: u16, keys: impl Iterator<Item = &'a str>) -> (u16, usize) {
    // Borders 2, five column gaps, and the fixed n, value, window and drop columns.
    let fixed = 2 + 5 + 7 + 8 + 9 + 7;
    let free = usize::from(width).saturating_sub(fixed);
    let longest = keys.map(|k| k.chars().count()).max().unwrap_or(0).max(8);
    let key = longest.min(free);
    let bar = free.saturating_sub(key).min(20);
    (u16::try_from(key).unwrap_or(u16::MAX), bar)
}

/// The side panel: the window's volatilities (when there is a window), then the latency
/// percentiles per stage, freshest first.
fn render_side(frame: &mut ratatui::Frame, area: Rect, s: &Snapshot, strong: Style) {
    let mut lines = Vec::new();
    if let Some((n, vol, temporal)) = s.window {
        lines.push(Line::styled(format!("window: last {n} frames"), strong));
        // Both are variances of accuracy fractions: fraction², 0 = steady (0..~1).
        lines.push(Line::raw("volatility, fraction² (0 = steady)"));
        lines.push(Line::raw(format!(
            "drop volatility {}",
            vol.map_or_else(|| "–".into(), |v| format!("{v:.4}"))
        )));
        lines.push(Line::raw(format!(
            "temporal volatility {}",
            temporal.map_or_else(|| "–".into(), |v| format!("{v:.5}"))
        )));
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled("latency ms   p50    p90    p99", strong));
    for (stage, p50, p90, p99) in &s.latency {
        lines.push(Line::raw(format!(
            "{stage:<10} {p50:>6.1} {p90:>6.1} {p99:>6.1}"
        )));
    }
    let side_panel = Paragraph::new(lines).block(Block::default().borders(Borders::ALL));
    frame.render_widget(side_panel, area);
}

/// The foot: the warning count with the keys that stop the run, then the latest two warnings.
fn render_warnings(frame: &mut ratatui::Frame, area: Rect, s: &Snapshot, strong: Style) {
    let (count, recent) = &s.warnings;
    let mut warn_lines = vec![Line::styled(
        format!("warnings: {count}   (q / Esc / Ctrl-C: stop and write the summary)"),
        strong,
    )];
    warn_lines.extend(
        recent
            .iter()
            .rev()
            .take(2)
            .map(|w| Line::styled(w.clone(), Style::default().fg(Color::Yellow))),
    );
    frame.render_widget(
        Paragraph::new(warn_lines).block(Block::default().borders(Borders::TOP)),
        area,
    );
}

/// The terminal while the view is up.
pub(crate) struct LiveView {
    terminal: Terminal<CrosstermBackend<Stderr>>,
    last: Option<Instant>,
}

/// Puts the terminal back as it was (idempotent; errors ignored: nothing better can be done).
fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stderr(),
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

impl LiveView {
    /// Takes over the terminal (alternate screen, raw mode, hidden cursor) and installs a panic
    /// hook that restores it before the panic message is printed.
    pub(crate) fn start() -> std::io::Result<Self> {
        enable_raw_mode()?;
        if let Err(e) = execute!(std::io::stderr(), EnterAlternateScreen) {
            restore();
            return Err(e);
        }
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        // A terminal that reports no size (some pseudo-terminals) gets a fixed 120 × 30 view.
        let backend = CrosstermBackend::new(std::io::stderr());
        let made = match crossterm::terminal::size() {
            Ok((w, h)) if w > 0 && h > 0 => Terminal::new(backend),
            _ => Terminal::with_options(
                backend,
                ratatui::TerminalOptions {
                    viewport: ratatui::Viewport::Fixed(Rect::new(0, 0, 120, 30)),
                },
            ),
        };
        let mut terminal = match made {
            Ok(t) => t,
            Err(e) => {
                restore();
                return Err(e);
            }
        };
        let _ = terminal.hide_cursor();
        let _ = terminal.clear();
        Ok(Self {
            terminal,
            last: None,
        })
    }

    /// Whether a redraw is due ([`REFRESH`]); `force` always draws.
    pub(crate) fn due(&self, force: bool) -> bool {
        force || self.last.is_none_or(|t| t.elapsed() >= REFRESH)
    }

    /// Draws `s` (errors are ignored: a lost terminal must not stop the run).
    pub(crate) fn draw(&mut self, s: &Snapshot) {
        self.last = Some(Instant::now());
        let _ = self.terminal.draw(|f| render(f, f.area(), s));
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        restore();
    }
}

/// Polls the keyboard while the view is up: `q`, Esc or Ctrl-C raise `stop` (a second Ctrl-C exits
/// at once with status 130, as outside the view). Returns when `finished` is raised.
pub(crate) fn watch_keys(stop: &AtomicBool, finished: &AtomicBool) {
    while !finished.load(Ordering::Relaxed) {
        let Ok(true) = event::poll(Duration::from_millis(100)) else {
            continue;
        };
        let Ok(Event::Key(key)) = event::read() else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl_c && stop.load(Ordering::Relaxed) {
            restore();
            std::process::exit(130);
        }
        if ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) {
            stop.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Record;
    use ratatui::backend::TestBackend;

    fn rec(frame: &str, scenario: &str, truth: Option<usize>, pred: usize) -> Record {
        let mut r: Record = serde_json::from_str(&format!(
            r#"{{"frame":"{frame}","scenario":"{scenario}","truth":null,"pred":{pred},"top5":[{pred}],"prob":[0.9],"hit5":null,"ms":{{}}}}"#
        ))
        .unwrap();
        r.truth = truth;
        for (stage, ms) in [
            (Stage::Decode, 1.0),
            (Stage::Wait, 2.0),
            (Stage::Infer, 4.0),
            (Stage::Age, 9.0),
        ] {
            r.ms.set(stage, ms);
        }
        r
    }

    fn screen(s: &Snapshot, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| render(f, f.area(), s)).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn metrics(labelled: bool) -> Metrics {
        let keys: Vec<String> = ["clean", "corruption/fog/1", "corruption/fog/5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut m = Metrics::new(keys).with_window(10);
        let t = labelled.then_some(3);
        for i in 0..4 {
            let f = format!("f{i}");
            // fog 1 right on 3 of 4 frames, fog 5 on 1 of 4; clean always right.
            m.add_frame(&[
                rec(&f, "clean", t, 3),
                rec(&f, "corruption/fog/1", t, if i < 3 { 3 } else { 1 }),
                rec(&f, "corruption/fog/5", t, if i < 1 { 3 } else { 2 }),
            ]);
        }
        m
    }

    fn snapshot(m: &Metrics) -> Snapshot {
        let frames = FrameCounts {
            read: 10,
            skipped: 1,
            dropped: 2,
            lost: 3,
            lost_causes: [("sequence_gap", 2), ("incomplete", 1)]
                .map(|(c, n)| (c.to_string(), n))
                .into(),
        };
        Snapshot::take(
            m,
            &frames,
            Duration::from_secs(5),
            ("synthetic 96×64", "all scenarios on every frame"),
            (1, vec!["frame f9: something odd".into()]),
        )
    }

    #[test]
    fn scenario_keys_keep_their_width_and_the_bar_gives_way() {
        let keys = ["clean", "corruption/elastic_transform/5"];
        // 120 columns: the table is 82 wide; the 30-character key fits, the bar shrinks to 14.
        assert_eq!(scenario_widths(82, keys.into_iter()), (30, 14));
        // Wide: the bar stays at 20.
        assert_eq!(scenario_widths(200, keys.into_iter()), (30, 20));
        // Too narrow for even the key: it is cut, no bar.
        assert_eq!(scenario_widths(60, keys.into_iter()), (22, 0));
        assert_eq!(scenario_widths(10, keys.into_iter()), (0, 0));
    }

    #[test]
    fn bars_fill_in_eighths() {
        assert_eq!(bar(0.0, 4), "    ");
        assert_eq!(bar(1.0, 4), "████");
        assert_eq!(bar(0.5, 4), "██  ");
        assert_eq!(bar(1.0 / 32.0, 4), "▏   ");
        assert_eq!(bar(f64::NAN, 2), "  ");
        assert_eq!(bar(7.0, 2), "██");
    }

    #[test]
    fn snapshot_has_accuracy_window_and_drop_per_scenario() {
        let s = snapshot(&metrics(true));
        assert!(s.labelled);
        let fog5 = &s.rows[2];
        assert_eq!(fog5.key, "corruption/fog/5");
        assert_eq!(
            (fog5.n, fog5.value, fog5.window),
            (4, Some(0.25), Some(0.25))
        );
        assert_eq!(fog5.drop, Some(0.75));
        assert_eq!(s.rows[0].drop, None);
        // Freshness first (a short terminal cuts the panel's end), then pipeline order.
        let stages: Vec<&str> = s.latency.iter().map(|l| l.0.name()).collect();
        assert_eq!(stages, ["age", "wait", "decode", "infer"]);
        let s = snapshot(&metrics(false));
        assert!(!s.labelled);
        assert_eq!(s.rows[0].value, Some(1.0));
        assert_eq!(s.rows[1].value, Some(0.75));
        assert_eq!(s.rows[1].drop, Some(0.25));
    }

    #[test]
    fn renders_stream_rows_latency_and_warnings() {
        let text = screen(&snapshot(&metrics(true)), 110, 20);
        for want in [
            "synthetic 96×64",
            "in 2.0 frames/s",
            "evaluated 1.6 frames/s",
            "dropped 2 (20.0 %)",
            "+ 3 lost by the source",
            "skipped 1",
            "scenarios (3)",
            "corruption/fog/5",
            "25.0",
            "75.0",
            "top-1 %",
            "window: last 10 frames",
            "infer",
            "warnings: 1",
            "something odd",
        ] {
            assert!(text.contains(want), "{want:?} missing in\n{text}");
        }
        let unlabelled = screen(&snapshot(&metrics(false)), 110, 20);
        assert!(unlabelled.contains("agree %"), "{unlabelled}");
        // The causes of the lost frames close the line: a wide terminal shows them, a narrow one
        // cuts them and keeps the counts.
        let wide = screen(&snapshot(&metrics(true)), 180, 20);
        assert!(
            wide.contains("frames 10  ·  lost: 1 incomplete, 2 sequence gap"),
            "{wide}"
        );
    }

    #[test]
    fn a_short_terminal_shows_clean_and_the_lowest_rows() {
        // 13 lines: the table gets 13 − 8 = 5, i.e. 2 rows after its borders and header.
        let text = screen(&snapshot(&metrics(true)), 110, 13);
        assert!(text.contains("clean + lowest"), "{text}");
        assert!(text.contains("clean"), "{text}");
        assert!(!text.contains("corruption/fog/1 "), "{text}");
    }
}
