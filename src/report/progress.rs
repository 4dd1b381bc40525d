//! Progress on stderr while a run goes: an indicatif bar on a terminal, plain lines otherwise (CI logs).
//! Warnings go through here too, so they do not tear the bar.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Frame progress of one run.
pub struct Progress {
    bar: Option<ProgressBar>,
    quiet: bool,
    total: Option<u64>,
    done: u64,
    last_line: Instant,
    started: Instant,
}

impl Progress {
    /// A progress display for `total` frames (if known). `quiet` hides it entirely.
    pub fn new(total: Option<u64>, quiet: bool) -> Self {
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
        }
    }

    /// One more frame finished (evaluated or skipped).
    pub fn frame(&mut self) {
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

    /// Prints one warning line without disturbing the bar.
    pub fn warn(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("warning: {line}")),
            None => eprintln!("warning: {line}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
