//! The saliency family (`metrics.saliency`, docs/hard-imagenet.md#saliency-alignment): written by
//! the saliency post pass (`saliency.rs`, with [`crate::metrics::saliency`]'s alignment), read
//! back by `robustream merge` and the user; a recompute carries it over. No rendering yet.

use crate::metrics::saliency::SaliencyEntry;
use crate::report::family::{Family, to_value};
use crate::report::summary::Summary;

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

impl Summary {
    /// `metrics.saliency`, the saliency pass's entry; `None` when no pass ran (or the entry is of
    /// another shape, as [`Summary::family`] reads).
    pub(crate) fn saliency(&self) -> Option<SaliencyEntry> {
        self.family(SaliencyFamily.key())
    }

    /// Puts the saliency pass's entry into `metrics.saliency`.
    pub(crate) fn set_saliency(&mut self, entry: &SaliencyEntry) {
        self.metrics
            .insert(SaliencyFamily.key().into(), to_value(entry));
    }
}
