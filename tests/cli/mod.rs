//! The command line's contract: what a run writes (docs/output.md), one run per run directory,
//! the HTML report in a real browser, the `preview` contact sheet, `compare` and its gate, and bad
//! input of every kind as one clear line, never a panic.

mod bad_input;
mod compare;
mod gpu;
mod html_report;
mod presets;
mod preview;
mod readme;
mod run_contract;
mod run_lock;
mod shard_resume;
