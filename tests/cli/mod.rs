//! The command line's contract: what a run writes (README's output contract), one run per run
//! directory, the `preview` contact sheet, `compare` and its gate, and bad input of every kind as
//! one clear line, never a panic.

mod bad_input;
mod compare;
mod preview;
mod readme;
mod run_contract;
mod run_lock;
