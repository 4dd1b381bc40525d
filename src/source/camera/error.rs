//! Why a camera did not open, by kind ([`CameraError`]), and the one line each kind says.

// Dead code is allowed only in builds where `not(feature = "camera")`: without the `camera`
// feature no camera opens, so its errors are made only by the unit tests.
#![cfg_attr(not(feature = "camera"), allow(dead_code))]

use super::config::CameraConfigError;
use super::mode::{Mode, fourcc_text};
use crate::source::pixfmt::PixelFormat;

/// Why a `Camera` did not open: the kinds a caller tells apart (the reconnect loop stays quiet
/// about [`CameraError::Missing`] while a camera is unplugged). Display = the one line after the
/// device's path (`/dev/video7: No such device; …`), saying what is wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CameraError {
    /// Nothing at the path (`ENOENT`), or the device went away (`ENODEV`): a typo at start, an
    /// unplugged camera while reconnecting.
    #[error("No such device; run `robustream devices` to list cameras")]
    Missing,
    /// This user may not open the device node.
    #[error(
        "cannot open ({source}); add your user to the `video` group or check the device's \
         permissions"
    )]
    PermissionDenied {
        /// The driver's refusal.
        source: std::io::Error,
    },
    /// Another program holds the camera (`EBUSY`).
    #[error("cannot open ({source}); another program is using the camera")]
    Busy {
        /// The driver's refusal.
        source: std::io::Error,
    },
    /// The node did not open for another reason.
    #[error("cannot open ({source}); run `robustream devices` to list cameras")]
    Open {
        /// Why.
        source: std::io::Error,
    },
    /// The node opened but is no V4L2 device (`ENOTTY`: `/dev/null`, a file).
    #[error("is not a V4L2 device ({source}); run `robustream devices` to list cameras")]
    NotV4l2 {
        /// The refused query.
        source: std::io::Error,
    },
    /// A V4L2 node that does not capture video the way robustream reads it: a metadata node (UVC
    /// cameras have those beside the capture node), or a multi-planar capture device.
    #[error(
        "{card} ({driver}) is {}; run `robustream devices` to list cameras",
        not_capture_text(*multiplanar)
    )]
    NotCapture {
        /// The card (product) name.
        card: String,
        /// The driver's name.
        driver: String,
        /// Whether it is a multi-planar capture device (else not a capture node at all).
        multiplanar: bool,
    },
    /// A capture device without V4L2 streaming I/O (robustream streams through mmap buffers).
    #[error("{card} ({driver}) cannot stream (no V4L2 streaming I/O)")]
    NoStreaming {
        /// The card (product) name.
        card: String,
        /// The driver's name.
        driver: String,
    },
    /// The device offers none of the asked formats (`[source.camera] format`).
    #[error(
        "offers none of the asked formats [{}]; it offers {}; set `[source.camera] format` to one \
         of those robustream converts",
        asked.iter().map(|f| fourcc_text(*f)).collect::<Vec<_>>().join(", "),
        offers_text(offered)
    )]
    Unsupported {
        /// The fourccs asked for, in order of preference.
        asked: Vec<[u8; 4]>,
        /// What the device offers: each fourcc with the driver's description, in its order.
        offered: Vec<([u8; 4], String)>,
    },
    /// The driver settled on a mode whose format robustream does not convert.
    #[error(
        "the driver gave {mode}, which robustream does not convert; set `[source.camera] format` \
         to another of the device's formats (`robustream devices`)"
    )]
    NotConverted {
        /// The mode the driver gave.
        mode: Mode,
    },
    /// A driver call failed while negotiating or mapping buffers (an I/O error of the device).
    #[error("cannot {action} ({source})")]
    Device {
        /// What was being done (`query the device`, `set format YUYV 640×480`, …).
        action: String,
        /// The driver's error.
        source: std::io::Error,
    },
    /// A `[source.camera]` setting that cannot be used.
    #[error(transparent)]
    Config(#[from] CameraConfigError),
    /// The `v4l` crate panicked (on an unexpected driver value, or while releasing buffers).
    #[error("the v4l crate failed while {what} ({message})")]
    Panicked {
        /// What was being done (`opening the device`).
        what: &'static str,
        /// The panic's message.
        message: String,
    },
}

/// What [`CameraError::NotCapture`] says the node is.
fn not_capture_text(multiplanar: bool) -> &'static str {
    if multiplanar {
        "a multi-planar capture device, which robustream does not read"
    } else {
        "not a video capture node (UVC cameras also have metadata nodes)"
    }
}

/// The formats of [`CameraError::Unsupported`] as text: `YUYV (YUYV 4:2:2), H264 (H.264, not
/// converted)`, or `nothing`.
fn offers_text(offered: &[([u8; 4], String)]) -> String {
    if offered.is_empty() {
        return "nothing".to_string();
    }
    offered
        .iter()
        .map(|(f, d)| {
            let conv = if PixelFormat::from_fourcc(*f).is_some() {
                ""
            } else {
                ", not converted"
            };
            format!("{} ({d}{conv})", fourcc_text(*f))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// This robustream was built without the `camera` feature ([`FEATURE_MISSING`] says how to get it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{FEATURE_MISSING}")]
pub struct FeatureMissing;

/// The line of a build without the `camera` feature.
pub(crate) const FEATURE_MISSING: &str = "camera sources need the `camera` feature, and this robustream \
     was built without it; rebuild with default features (`cargo build --release`, needs \
     libclang-dev)";
