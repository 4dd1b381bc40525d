//! Capture modes: a fourcc, size and rate ([`Mode`]), V4L2 frame intervals as rates and back, the
//! line saying the driver gave another mode than asked ([`negotiation_note`]), and what an opened
//! camera negotiated ([`Negotiated`]).

// Dead code is allowed only in builds where `not(feature = "camera")`: without the `camera`
// feature nothing negotiates a mode outside the unit tests.
#![cfg_attr(not(feature = "camera"), allow(dead_code))]

use std::path::Path;

use crate::source::pixfmt::PixelFormat;

/// A frame interval in seconds as a V4L2 fraction for `fps` (1000/(fps·1000), reduced): 30 → 1/30,
/// 7.5 → 2/15, 29.97 → 100/2997.
pub(crate) fn fps_to_interval(fps: f64) -> (u32, u32) {
    let num = 1000u64;
    let den = (fps * 1000.0).round().max(1.0) as u64;
    let g = gcd(num, den);
    ((num / g) as u32, (den / g).min(u64::from(u32::MAX)) as u32)
}

/// Frames per second of a V4L2 frame interval `numerator/denominator` seconds; `None` when it is
/// not a positive interval.
pub(crate) fn interval_to_fps(numerator: u32, denominator: u32) -> Option<f64> {
    (numerator > 0 && denominator > 0).then(|| f64::from(denominator) / f64::from(numerator))
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// A frame rate as short text: `30`, `7.5`, `29.97`.
pub(crate) fn fps_text(fps: f64) -> String {
    let s = format!("{fps:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A fourcc as text (`YUYV`); bytes that are not printable ASCII as `?`.
pub(crate) fn fourcc_text(fourcc: [u8; 4]) -> String {
    fourcc
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '?'
            }
        })
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// A capture mode: fourcc, size and (when known) rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mode {
    /// The V4L2 fourcc.
    pub(crate) fourcc: [u8; 4],
    /// Width, pixels.
    pub(crate) width: u32,
    /// Height, pixels.
    pub(crate) height: u32,
    /// Frames per second; `None` when not asked for / not reported.
    pub(crate) fps: Option<f64>,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}×{}",
            fourcc_text(self.fourcc),
            self.width,
            self.height
        )?;
        match self.fps {
            Some(fps) => write!(f, "@{}", fps_text(fps)),
            None => Ok(()),
        }
    }
}

impl Mode {
    /// `{fourcc, width, height, fps}` for reports.
    pub(crate) fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "fourcc": fourcc_text(self.fourcc),
            "width": self.width,
            "height": self.height,
            "fps": self.fps,
        })
    }
}

/// The one line saying the driver gave another mode than asked (`camera /dev/video0: asked MJPG
/// 1280×720@30, driver gave YUYV 640×480@30`), or `None` when it gave what was asked. A rate that
/// was not asked for is not compared; rates within 0.5 % are the same.
pub(crate) fn negotiation_note(device: &Path, asked: &Mode, gave: &Mode) -> Option<String> {
    let fps_differs = match (asked.fps, gave.fps) {
        (Some(a), Some(g)) => (a - g).abs() > 0.005 * a,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let differs = asked.fourcc != gave.fourcc
        || asked.width != gave.width
        || asked.height != gave.height
        || fps_differs;
    differs.then(|| {
        // Show the rate on both sides when it was asked for, on neither otherwise.
        let gave = Mode {
            fps: asked.fps.and(gave.fps),
            ..*gave
        };
        format!(
            "camera {}: asked {asked}, driver gave {gave}",
            device.display()
        )
    })
}

/// What a `Camera` opened: the mode the driver gave and the row stride of its buffers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Negotiated {
    /// The mode in use.
    pub(crate) mode: Mode,
    /// The converter for the mode's fourcc.
    pub(crate) format: PixelFormat,
    /// Bytes per row of the driver's buffers (`bytesperline`; 0 = packed).
    pub(crate) stride: usize,
}
