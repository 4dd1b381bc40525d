//! What a source path names, told from its spelling: a URL ([`url_scheme`], [`URL_SCHEMES`]), a
//! video file ([`VIDEO_EXTENSIONS`]), and the name its frame ids start with ([`id_name`]); and what
//! the file system says against a video file before FFmpeg tries it ([`file_problem`]).

use std::path::Path;

use crate::source::{RawSourceConfig, SourceKind};

/// File extensions taken for video files when no `kind` is given (compared case-insensitively).
pub(crate) const VIDEO_EXTENSIONS: &[&str] = &[
    "mp4", "m4v", "mkv", "webm", "avi", "mov", "qt", "ts", "mts", "m2ts", "mpg", "mpeg", "m2v",
    "y4m", "flv", "wmv", "asf", "ogv", "3gp", "h264", "264", "h265", "265", "hevc", "ivf", "mjpeg",
    "mxf",
];

/// URL schemes read as network streams.
pub(crate) const URL_SCHEMES: &[&str] = &[
    "rtsp", "rtsps", "http", "https", "udp", "rtp", "srt", "rtmp", "rtmps", "tcp",
];
/// The scheme of `path` when it is spelled as a URL (`scheme://…`, scheme letters, digits, `+-.`),
/// lowercased; `None` for ordinary paths. The scheme may be one we do not read (see
/// [`URL_SCHEMES`]).
pub(crate) fn url_scheme(path: &Path) -> Option<String> {
    let s = path.to_str()?;
    let (scheme, _) = s.split_once("://")?;
    let ok = scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    ok.then(|| scheme.to_ascii_lowercase())
}

/// Whether `path` is spelled as a URL (see [`url_scheme`]); such paths are never made relative to
/// the config file.
pub(crate) fn is_url(path: &Path) -> bool {
    url_scheme(path).is_some()
}

/// Whether the extension of `path` is a video file's ([`VIDEO_EXTENSIONS`]).
pub(crate) fn has_video_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| VIDEO_EXTENSIONS.iter().any(|v| v.eq_ignore_ascii_case(e)))
}

/// Whether `config` names a video source: `kind = "video"`, or no kind and a URL or a video
/// extension. Decided from the spelling alone, before the path is looked at.
pub(crate) fn is_video_source(config: &RawSourceConfig) -> bool {
    match config.kind {
        Some(kind) => kind == SourceKind::Video,
        // `genicam://…` names a GenICam camera, not a stream (`source::genicam`).
        None => {
            !crate::source::genicam::is_genicam(config)
                && (is_url(&config.path) || has_video_extension(&config.path))
        }
    }
}

/// The name frame ids start with: a file's name, or a URL's last path segment (its host when the
/// path is empty), without any query.
// Called by the video source (feature `video`) and the unit tests.
#[cfg_attr(not(feature = "video"), allow(dead_code))]
pub(crate) fn id_name(target: &str) -> String {
    if let Some((_, rest)) = target.split_once("://") {
        let rest = rest.split(['?', '#']).next().unwrap_or_default();
        let mut parts = rest.split('/').filter(|p| !p.is_empty());
        let host = parts.next().unwrap_or("stream");
        return parts.next_back().unwrap_or(host).to_string();
    }
    Path::new(target)
        .file_name()
        .map_or_else(|| target.to_string(), |n| n.to_string_lossy().into_owned())
}

/// What keeps the file at `path` from being read as a video, as far as the file system tells
///: a missing path, a folder, a file this user may not read, an empty file. `None`
/// when FFmpeg may try (it then tells a file that is no video, a stream-less or video-less file
/// and a codec it cannot decode apart, `input::open_error`).
pub(crate) fn file_problem(path: &Path) -> Option<String> {
    use std::io::ErrorKind;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Some("no such file; check `[source] path` or --source".into());
        }
        Err(e) => {
            return Some(format!(
                "cannot look at it ({e}); check `[source] path` or --source"
            ));
        }
    };
    if meta.is_dir() {
        return Some(
            "is a folder, not a video file; give a video file, or read the images in it with \
             `kind = \"folder\"` (--source-kind folder)"
                .into(),
        );
    }
    if let Err(e) = std::fs::File::open(path) {
        return Some(match e.kind() {
            ErrorKind::PermissionDenied => PERMISSION_DENIED.into(),
            _ => format!("cannot be read ({e}); check the file"),
        });
    }
    (meta.is_file() && meta.len() == 0)
        .then(|| "is empty (0 bytes); give a complete video file".into())
}

/// The message for a video file this user may not read.
pub(super) const PERMISSION_DENIED: &str = "cannot be read: permission denied; make it readable (`chmod a+r`) \
                                 or run robustream as a user who may read it";
