//! The command line's contract: what a run writes (docs/output.md), one run per run directory,
//! the HTML report in a real browser, the `preview` contact sheet, `compare` and its gate, bad
//! input of every kind as one clear line, never a panic, and deploy/'s Kubernetes and Slurm jobs
//! starting sharded runs as docs/deploy.md says.

mod bad_input;
mod compare;
mod deploy;
mod gpu;
mod html_report;
mod merge;
mod presets;
mod preview;
mod readme;
mod run_contract;
mod run_lock;
mod shard_resume;
