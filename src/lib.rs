//! robustream: a streaming robustness evaluator for image classifiers.
//!
//! Frames flow one way: [`source`] → [`scenario`] → [`preprocess`] → batch assembly ([`pipeline`]) →
//! [`engine`] → [`metrics`] → [`report`]. See `docs/ARCHITECTURE.md`.

#![warn(missing_docs)]

pub mod apply;
pub mod bench;
pub mod challenge;
pub mod cli;
pub mod config;
pub mod engine;
pub mod frame;
pub mod metrics;
pub mod pipeline;
pub mod post;
pub mod preprocess;
pub mod preview;
pub mod quote;
pub mod report;
pub mod resample;
pub mod run;
pub mod saliency;
pub mod scenario;
pub mod scene;
pub mod source;
pub mod watch;
