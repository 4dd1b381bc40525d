//! The scores a run reports, end to end on the real model: the background and object metric
//! families, CE / mCE against another baseline, the adversarial-background challenge, occlusion
//! saliency and the XIMAGENET-12 Table 2 score.

pub(crate) mod background_metrics;
mod ce_baseline;
mod challenge;
mod saliency;
mod ximagenet_table2;
