//! The scores a run reports, end to end on the real model: the background and object metric
//! families, CE / mCE against another baseline, the adversarial-background challenge, occlusion
//! saliency, the XIMAGENET-12 Table 2 score and the accuracy per group of frames.

pub(crate) mod background_metrics;
mod ce_baseline;
mod challenge;
mod groups;
mod saliency;
mod ximagenet_table2;
