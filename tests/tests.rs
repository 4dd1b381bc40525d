//! robustream's integration tests, compiled into one binary: sources, scenarios, metrics, live
//! runs, the command line and the engine, driven as a user drives them — through the `robustream`
//! binary, and through the library where a test needs to reach inside — on the real model
//! (EfficientNet-Lite0), the real ONNX Runtime and the demo photos. Nothing is mocked, so the
//! cached assets must be in place first: `bash scripts/assets.sh` (scripts/test.sh runs it).
//!
//! One area or file at a time: `cargo test --release --test tests sources::camera::`.

mod util;

mod cli;
mod engine;
mod live;
mod metrics;
mod scenarios;
mod sources;
