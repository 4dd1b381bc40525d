//! `robustream devices`: the V4L2 nodes there are ([`video_nodes`]; probed by
//! `super::list_devices`), what each offers ([`DeviceInfo`]) and the listing as text
//! ([`render_devices`]).

use std::path::{Path, PathBuf};

use super::mode::fps_text;

/// A camera (or other V4L2 node) as `robustream devices` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeviceInfo {
    /// The device node, e.g. `/dev/video0`.
    pub(crate) path: String,
    /// Driver name (`uvcvideo`).
    pub(crate) driver: String,
    /// Card (product) name.
    pub(crate) card: String,
    /// Bus (`usb-0000:00:14.0-1`).
    pub(crate) bus: String,
    /// Whether the node captures video (UVC cameras also have metadata nodes, which do not).
    pub(crate) capture: bool,
    /// The formats it offers, in the driver's order (empty when not a capture node).
    pub(crate) formats: Vec<FormatInfo>,
    /// Why the node could not be queried (permissions, busy…), if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
}

/// One pixel format a camera offers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FormatInfo {
    /// The fourcc (`YUYV`).
    pub(crate) fourcc: String,
    /// The driver's description (`YUYV 4:2:2`).
    pub(crate) description: String,
    /// Whether robustream converts it ([`crate::source::pixfmt::PixelFormat::from_fourcc`]).
    pub(crate) convertible: bool,
    /// The frame sizes it comes in.
    pub(crate) sizes: Vec<SizeInfo>,
}

/// A frame size of a format and its frame rates.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum SizeInfo {
    /// One size.
    Discrete {
        /// Width, pixels.
        width: u32,
        /// Height, pixels.
        height: u32,
        /// The discrete frame rates (frames per second), fastest first.
        fps: Vec<f64>,
        /// A continuous/stepwise rate range `[min, max]` frames per second, when so reported.
        #[serde(skip_serializing_if = "Option::is_none")]
        fps_range: Option<[f64; 2]>,
    },
    /// A range of sizes.
    Stepwise {
        /// Smallest width.
        min_width: u32,
        /// Largest width.
        max_width: u32,
        /// Width step.
        step_width: u32,
        /// Smallest height.
        min_height: u32,
        /// Largest height.
        max_height: u32,
        /// Height step.
        step_height: u32,
    },
}

/// The `/dev/video<N>` nodes in `dir`, by N (`video2` before `video10`).
pub fn video_nodes(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut nodes: Vec<(u64, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("video")?.parse::<u64>().ok()?;
            Some((n, e.path()))
        })
        .collect();
    nodes.sort();
    nodes.into_iter().map(|(_, p)| p).collect()
}

/// The message when there are none.
pub const NO_CAMERAS: &str = "no V4L2 cameras found (no /dev/video* devices)";

/// `robustream devices` as text: each capture node with its formats, sizes and rates; other nodes
/// in one line each.
pub fn render_devices(devices: &[DeviceInfo]) -> String {
    if devices.is_empty() {
        return format!("{NO_CAMERAS}\n");
    }
    let mut out = String::new();
    for d in devices {
        if let Some(e) = &d.error {
            out += &format!("{}: cannot query ({e})\n", d.path);
            continue;
        }
        let card = format!("{} ({}, {})", d.card, d.driver, d.bus);
        if !d.capture {
            out += &format!("{}: {card}: not a video capture node; skipped\n", d.path);
            continue;
        }
        let index = d.path.strip_prefix("/dev/video").unwrap_or_default();
        let hint = if index.is_empty() {
            String::new()
        } else {
            format!(" — --source {} or camera:{index}", d.path)
        };
        out += &format!("{}: {card}{hint}\n", d.path);
        for f in &d.formats {
            let note = if f.convertible {
                ""
            } else {
                " (not converted by robustream)"
            };
            out += &format!("  {} {}{note}\n", f.fourcc, f.description);
            for s in &f.sizes {
                match s {
                    SizeInfo::Discrete {
                        width,
                        height,
                        fps,
                        fps_range,
                    } => {
                        let mut rates: Vec<String> = fps.iter().map(|&r| fps_text(r)).collect();
                        if let Some([lo, hi]) = fps_range {
                            rates.push(format!("{}–{}", fps_text(*lo), fps_text(*hi)));
                        }
                        let rates = if rates.is_empty() {
                            String::new()
                        } else {
                            format!(" @ {} fps", rates.join(", "))
                        };
                        out += &format!("    {width}×{height}{rates}\n");
                    }
                    SizeInfo::Stepwise {
                        min_width,
                        max_width,
                        step_width,
                        min_height,
                        max_height,
                        step_height,
                    } => {
                        out += &format!(
                            "    {min_width}–{max_width} (step {step_width}) × {min_height}–\
                             {max_height} (step {step_height})\n"
                        );
                    }
                }
            }
        }
    }
    out
}
