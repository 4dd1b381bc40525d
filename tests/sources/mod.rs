//! Where frames come from: folders, manifests and released layouts (ImageNet-C, IN-9), masks and
//! boxes next to them, the synthetic and V4L2 cameras, video files and network streams, labels on
//! a stream, masks learned from a background plate or a segmentation model, and sources with
//! nothing to evaluate or frames lost before robustream sees them.

mod camera;
mod empty_sources;
#[cfg(feature = "genicam")]
mod genicam;
#[cfg(feature = "gstreamer")]
mod gstreamer;
mod imagenet_c_layout;
mod in9_run;
#[cfg(feature = "video")]
mod network_streams;
mod plate_masks;
mod regions;
mod segment_masks;
mod source_lost;
mod sources_and_labels;
mod stream_labels;
#[cfg(feature = "video")]
mod video_stream;
