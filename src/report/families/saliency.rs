//! The saliency family (`metrics.saliency`, docs/hard-imagenet.md#saliency-alignment): written by
//! the saliency post pass (`saliency.rs`, with [`crate::metrics::saliency`]'s alignment), read
//! back by nothing but the user; a recompute carries it over. No rendering yet.

use crate::report::family::Family;

/// The family.
pub(crate) struct SaliencyFamily;

impl Family for SaliencyFamily {
    fn key(&self) -> &'static str {
        "saliency"
    }

    fn rebuilt_from_records(&self) -> bool {
        false
    }
}
