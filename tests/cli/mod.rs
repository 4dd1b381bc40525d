//! The command line's contract: what a run writes (README's output contract), one run per run
//! directory, the `preview` contact sheet, and bad input of every kind as one clear line, never a
//! panic.

mod bad_input;
mod presets;
mod preview;
mod readme;
mod run_contract;
mod run_lock;
