//! Progress on stderr while a run goes: an indicatif bar on a terminal, plain lines otherwise (CI logs).
//! Warnings go through here too, so they do not tear the bar.
//!
//! On a long stream the same problem repeats on every frame (a pool scenario that cannot apply, a
//! camera glitch), so warnings are grouped by what they say with the frame id taken out: the first
//! [`SHOWN`] of a group are printed, then one line at 10, 100, 1000, … occurrences, and
//! [`Progress::finish`] prints how many of each group were not shown. Every occurrence is still
//! counted in the summary (skipped frames, failed variants).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Warnings of one group printed in full before they are only counted.
const SHOWN: u64 = 3;

/// Frame progress of one run.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: Option<u64>,
    done: u64,
    last_line: Instant,
    started: Instant,
    /// Warning group → (occurrences, one example).
    warnings: BTreeMap<String, (u64, String)>,
    /// Warnings are held, not printed, while the live view owns the terminal ([`Progress::held`]).
    hold: bool,
    /// The latest held warnings, for the live view.
    recent: std::collections::VecDeque<String>,
    /// Warnings so far.
    count: u64,
}

/// Held warnings kept for the live view.
const RECENT: usize = 5;

/// The group of a warning: the line without its leading `frame <id>: ` (what repeats per frame).
fn warning_group(line: &str) -> &str {
    match line.strip_prefix("frame ") {
        Some(rest) => rest.split_once(": ").map_or(line, |(_, tail)| tail),
        None => line,
    }
}

impl Progress {
    /// A progress display for `total` frames (if known). `quiet` hides it entirely.
    pub(crate) fn new(total: Option<u64>, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = match total {
                Some(n) => ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            };
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} frames {msg} (eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        let now = Instant::now();
        Self {
            bar,
            quiet,
            total,
            done: 0,
            last_line: now,
            started: now,
            warnings: BTreeMap::new(),
            hold: false,
            recent: std::collections::VecDeque::new(),
            count: 0,
        }
    }

    /// Progress while the live view (`report::tui`) owns the terminal: nothing is drawn, warnings
    /// are held (see [`Progress::recent`]) and [`Progress::finish`] prints each group once.
    pub(crate) fn held(total: Option<u64>) -> Self {
        let mut p = Self::new(total, true);
        p.hold = true;
        p
    }

    /// Warnings so far and the latest few (oldest first), for the live view.
    pub(crate) fn recent(&self) -> (u64, Vec<String>) {
        (self.count, self.recent.iter().cloned().collect())
    }

    /// One more frame finished (evaluated or skipped).
    pub(crate) fn frame(&mut self) {
        self.done += 1;
        match &self.bar {
            Some(bar) => {
                bar.set_position(self.done);
                let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
                bar.set_message(format!("{rate:.1}/s"));
            }
            None if self.quiet => {}
            None => {
                if self.last_line.elapsed() >= Duration::from_secs(5)
                    || Some(self.done) == self.total
                {
                    self.last_line = Instant::now();
                    let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(1e-9);
                    match self.total {
                        Some(t) => {
                            eprintln!("robustream: {}/{t} frames ({rate:.1} frames/s)", self.done)
                        }
                        None => eprintln!("robustream: {} frames ({rate:.1} frames/s)", self.done),
                    }
                }
            }
        }
    }

    /// Prints one warning line without disturbing the bar (grouped, see the module docs).
    pub(crate) fn warn(&mut self, line: &str) {
        let entry = self
            .warnings
            .entry(warning_group(line).to_string())
            .or_insert_with(|| (0, line.to_string()));
        entry.0 += 1;
        let n = entry.0;
        self.count += 1;
        if self.hold {
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(line.to_string());
            return;
        }
        let text = if n <= SHOWN {
            format!("warning: {line}")
        } else if n >= 10
            && n.to_string()
                .trim_start_matches('1')
                .bytes()
                .all(|b| b == b'0')
        {
            format!("warning: {line} ({n} times so far; the others are counted, not printed)")
        } else {
            return;
        };
        self.print(&text);
    }

    fn print(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{text}")),
            None => eprintln!("{text}"),
        }
    }

    /// Removes the bar and says how many warnings of each group were not printed.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        for (n, example) in self.warnings.values() {
            if self.hold {
                match n {
                    1 => eprintln!("warning: {example}"),
                    _ => eprintln!("warning: {example} ({n} like it)"),
                }
                continue;
            }
            if *n > SHOWN {
                let printed =
                    SHOWN + (1..=n.ilog10()).filter(|&k| 10u64.pow(k) <= *n).count() as u64;
                let hidden = n.saturating_sub(printed);
                if hidden > 0 {
                    eprintln!("warning: {hidden} more like: {example} ({n} in all)");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_warnings_are_kept_for_the_view_not_printed() {
        let mut p = Progress::held(None);
        for i in 0..7 {
            p.warn(&format!("frame f{i}: pool warming up"));
        }
        p.warn("camera lost");
        let (n, recent) = p.recent();
        assert_eq!(n, 8);
        assert_eq!(recent.len(), RECENT);
        assert_eq!(recent[0], "frame f3: pool warming up");
        assert_eq!(recent[4], "camera lost");
        assert_eq!(p.warnings.len(), 2, "two groups");
    }

    #[test]
    fn warnings_group_by_what_they_say_without_the_frame() {
        assert_eq!(
            warning_group("frame cam/000012: scenario `background/mixed_next`: pool warming up"),
            "scenario `background/mixed_next`: pool warming up"
        );
        assert_eq!(
            warning_group("skipped a.png: cannot decode"),
            "skipped a.png: cannot decode"
        );
        let mut p = Progress::new(None, true);
        for i in 0..250 {
            p.warn(&format!("frame f{i}: scenario `x`: no mask"));
        }
        p.warn("frame f0: scenario `y`: no mask");
        assert_eq!(p.warnings.len(), 2);
        assert_eq!(p.warnings["scenario `x`: no mask"].0, 250);
    }
}
