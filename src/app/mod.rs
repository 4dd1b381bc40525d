//! The top floor: the run and everything around it — the pipeline (batch assembly, the engine
//! thread, the collector), the passes after the main pass (challenge, saliency), and the commands
//! (run, resume, merge, bench, preview, apply, watch…) with their configuration and command line.
//! The rooms below (`source/` … `report/`) and the flat files of `src/` (the ground floor) never
//! import from here (docs/ARCHITECTURE.md#floors).

pub mod apply;
pub mod bench;
pub mod challenge;
pub mod cli;
pub mod config;
mod fingerprint;
pub mod merge;
pub mod one_image;
pub mod pipeline;
mod post;
pub mod preview;
mod resume;
pub mod run;
pub mod run_lock;
pub mod saliency;
pub mod watch;
