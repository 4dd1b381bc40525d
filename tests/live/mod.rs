//! Runs on a live source and how they end: dropping frames a slow pipeline cannot take, latency
//! bounded by design, interim summaries and the live terminal view, the Prometheus endpoint and a
//! fleet's central Prometheus grouping it by device, soak runs ended by `--duration`, and stopping a
//! run with Ctrl-C or another signal.

mod fleet;
mod interrupt;
mod live_drops;
mod live_latency;
mod live_report;
mod prometheus;
mod signals;
mod soak;
