//! Reading and decoding image files into RGB 8-bit pixels. The format is guessed from the file's
//! content, never from its extension.
//!
//! Nothing here trusts the input: a path must name a regular file (not a directory, a device such as
//! `/dev/zero`, a FIFO or a socket) of at most [`MAX_FILE_BYTES`], read through a bounded reader;
//! a header must declare at most [`MAX_SIDE`] pixels a side and [`MAX_DECODED_BYTES`] of decoded
//! pixels before anything is allocated for them; a JPEG or PNG must be complete
//! ([`check_complete`]: the decoders fill a cut-off JPEG with grey and return it as whole); and a
//! decoder's error text is folded to one bounded line ([`one_line`]).

use std::io::Cursor;
use std::path::Path;

use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader, Limits, RgbImage};

use super::{SourceError, SourceErrorKind};
use crate::fsread::{ReadError, size_text};

pub(crate) use crate::fsread::non_file_kind;

/// The largest file read as an image, mask or manifest (256 MiB): larger files are refused before
/// they are read, and no read goes past it (a file that grows while read included).
pub(crate) const MAX_FILE_BYTES: u64 = 256 << 20;

/// The most pixels an image may have on a side (JPEG's own limit; 65535).
const MAX_SIDE: u32 = 65_535;

/// The most bytes an image's decoded pixels may take (512 MiB, the `image` crate's default
/// allocation limit): a 100-megapixel RGB photo takes 300 MB. Checked on the header's dimensions,
/// before the pixels are allocated.
const MAX_DECODED_BYTES: u64 = 512 << 20;

/// The longest a decoder's own error text may be in a message (characters); longer ones are cut.
const MAX_REASON_CHARS: usize = 160;

/// File extensions (lowercase) a folder source picks up as images: every format this build
/// decodes (`jpg`, `jpeg`, `png`, `webp`, `bmp`, `gif`, `tif`, `tiff`). Files are still decoded by
/// content, so a misnamed image decodes all the same.
fn image_extensions() -> Vec<&'static str> {
    let mut exts = vec!["jpg", "jpeg", "png"];
    for (format, names) in [
        (ImageFormat::WebP, &["webp"][..]),
        (ImageFormat::Bmp, &["bmp"][..]),
        (ImageFormat::Gif, &["gif"][..]),
        (ImageFormat::Tiff, &["tif", "tiff"][..]),
    ] {
        if format.reading_enabled() {
            exts.extend_from_slice(names);
        }
    }
    exts
}

/// The [`image_extensions`] as messages list them: `.jpg .jpeg .png .bmp`.
pub(crate) fn extension_list() -> String {
    image_extensions()
        .iter()
        .map(|e| format!(".{e}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// True when `path` has one of the [`image_extensions`] (any case).
pub(crate) fn has_image_extension(path: &Path) -> bool {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return false;
    };
    image_extensions()
        .iter()
        .any(|known| ext.eq_ignore_ascii_case(known))
}

/// Extensions (lowercase) of image formats outside the `image` crate, which this build cannot
/// decode: HEIC/HEIF (phones), JPEG XL, JPEG 2000, Photoshop, SVG and camera raw files.
const FOREIGN_IMAGE_EXTENSIONS: [&str; 17] = [
    "heic", "heif", "jxl", "jp2", "j2k", "jpx", "jpf", "psd", "svg", "dng", "cr2", "cr3", "nef",
    "arw", "orf", "rw2", "raf",
];

/// The extension of `path` (as written) when it names an image format this build does not decode:
/// one of the `image` crate's formats left out of the build (`.avif`, `.ico`, `.tga`, `.exr`,
/// `.hdr`, `.qoi`, `.pnm`, …; AVIF decoding would need the system dav1d library) or one outside
/// it (`.heic`, `.jxl`, `.jp2`, `.psd`, `.svg`, camera raw, …). A folder source names such files as
/// skipped (see [`undecodable_message`]) instead of passing over them as it does other files.
pub(crate) fn undecodable_extension(path: &Path) -> Option<&str> {
    let ext = path.extension()?.to_str()?;
    if has_image_extension(path) {
        return None;
    }
    let lower = ext.to_ascii_lowercase();
    let ours = ImageFormat::from_extension(&lower).is_some_and(|f| !f.reading_enabled());
    (ours || FOREIGN_IMAGE_EXTENSIONS.contains(&lower.as_str())).then_some(ext)
}

/// The skip message for a file whose extension is an [`undecodable_extension`] `ext`: what this
/// build decodes and the fix (convert it).
pub(crate) fn undecodable_message(ext: &str) -> String {
    format!(
        "cannot decode image (.{ext} files are not decoded by this robustream, which reads {}); \
         convert the file to PNG or JPEG",
        extension_list()
    )
}

/// Reads the regular file at `path`, at most [`MAX_FILE_BYTES`] (through
/// [`crate::fsread::read_bounded`]): `what` names it in the message ("image", "mask", "manifest").
/// A directory, device, FIFO or socket is refused without being opened (reading `/dev/zero` would
/// never end, opening a FIFO can block), a larger file before it is read. The error is a complete
/// message: what is wrong and what to do.
pub(crate) fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, FileError> {
    crate::fsread::read_bounded(path, MAX_FILE_BYTES).map_err(|e| match e {
        ReadError::NotAFile(kind) => FileError::NotAFile {
            what: what.to_string(),
            kind,
        },
        ReadError::TooLarge { limit } => FileError::TooLarge {
            what: what.to_string(),
            limit,
        },
        other => FileError::Unreadable {
            what: what.to_string(),
            source: other,
        },
    })
}

/// Why [`read_file`] read nothing. Display = the message: what is wrong and what to do (the
/// caller's message names the file).
#[derive(Debug, thiserror::Error)]
pub(crate) enum FileError {
    /// The path names a directory, device, FIFO or socket, not a regular file.
    #[error(
        "is {kind}, not {} file; give the path of {} file",
        article(what),
        article(what)
    )]
    NotAFile {
        /// What the file was to be ("image", "mask", "manifest", "annotation").
        what: String,
        /// What the path is instead ("a directory", "a FIFO (named pipe)", …).
        kind: &'static str,
    },
    /// The file holds more than `limit` bytes.
    #[error(
        "the {what} file is larger than {} (the most robustream reads of one file); shrink or \
         re-encode it",
        size_text(*limit)
    )]
    TooLarge {
        /// What the file was to be.
        what: String,
        /// The limit, bytes ([`MAX_FILE_BYTES`]).
        limit: u64,
    },
    /// The file could not be opened or read.
    #[error(
        "cannot read {what} ({}); check that the file exists and is readable",
        one_line(&source.to_string())
    )]
    Unreadable {
        /// What the file was to be.
        what: String,
        /// The failed read.
        source: ReadError,
    },
}

/// Why [`decode_bytes`] made no image of a file's bytes. Display = the message: what is wrong and
/// what to do (the caller's message names the file).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// No bytes at all.
    #[error("cannot decode image (the file is empty); {FIX}")]
    Empty,
    /// The content is not a format the `image` crate knows.
    #[error("cannot decode image (the content is not a known image format); {FIX}")]
    UnknownFormat,
    /// A format this build was made without.
    #[error(
        "cannot decode image ({format:?} decoding is not built into this robustream); convert \
         the file to PNG or JPEG"
    )]
    NotBuiltIn {
        /// The format the content is in.
        format: ImageFormat,
    },
    /// The file ends early: `the {what} ends {place}`.
    #[error("truncated: the {what} ends {place}; re-copy the file")]
    Truncated {
        /// "JPEG", "PNG", or "`<format>` file".
        what: String,
        /// Where it ends ("before its end-of-image marker", "inside its IEND chunk", …).
        place: String,
    },
    /// The header declares more pixels than robustream decodes.
    #[error(
        "the image is too large to decode: its header declares {width}×{height} pixels ({} \
         decoded; robustream decodes at most {MAX_SIDE} pixels a side and {}); shrink the image",
        size_text(*bytes),
        size_text(MAX_DECODED_BYTES)
    )]
    TooLarge {
        /// Declared width, pixels.
        width: u32,
        /// Declared height, pixels.
        height: u32,
        /// The decoded pixels' bytes.
        bytes: u64,
    },
    /// The decoder hit its allocation limit.
    #[error(
        "the image is too large to decode ({}; robustream decodes at most {}); shrink the image",
        one_line(&source.to_string()),
        size_text(MAX_DECODED_BYTES)
    )]
    Limits {
        /// The decoder's error.
        source: ImageError,
    },
    /// The decoder refused the content.
    #[error("cannot decode image ({}); {FIX}", one_line(&source.to_string()))]
    Corrupt {
        /// The decoder's error.
        source: ImageError,
    },
    /// The image decoded to no pixels.
    #[error("cannot decode image (it has zero width or height); {FIX}")]
    ZeroSize,
}

/// The fix for a file that does not decode.
const FIX: &str = "remove or replace the file";

/// "an image", "a mask", "a manifest" (the article for `what`).
fn article(what: &str) -> String {
    match what.chars().next() {
        Some('a' | 'e' | 'i' | 'o' | 'u') => format!("an {what}"),
        _ => format!("a {what}"),
    }
}

/// Reads the file at `path` and decodes it to RGB 8-bit (gray → 3 channels, alpha dropped,
/// 16-bit → 8-bit; an animated GIF or multi-page TIFF gives its first image). Errors name the
/// file and say what to do.
pub(crate) fn read_rgb(path: &Path) -> Result<RgbImage, SourceError> {
    let bytes = read_file(path, "image").map_err(|why| {
        SourceError::at(SourceErrorKind::Unreadable, path, why.to_string()).caused_by(why)
    })?;
    let image = decode_bytes(&bytes).map_err(|why| {
        SourceError::at(SourceErrorKind::Unreadable, path, why.to_string()).caused_by(why)
    })?;
    Ok(image.into_rgb8())
}

/// `text` on one line: every run of whitespace and control characters (a decoder's newline, a
/// trailing `\n`) becomes one space.
pub(crate) fn fold(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` [`fold`]ed to one line and cut to at most [`MAX_REASON_CHARS`] characters (`…` marks a
/// cut): how a decoder's or the system's own error text goes into a message.
pub(crate) fn one_line(text: &str) -> String {
    let folded = fold(text);
    if folded.chars().count() <= MAX_REASON_CHARS {
        return folded;
    }
    let mut cut: String = folded.chars().take(MAX_REASON_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Decodes an image held in memory, guessing its format from the content. The error is a complete
/// message: what is wrong and what to do.
pub(crate) fn decode_bytes(bytes: &[u8]) -> Result<DynamicImage, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| DecodeError::Corrupt {
            source: ImageError::IoError(e),
        })?;
    let Some(format) = reader.format() else {
        return Err(DecodeError::UnknownFormat);
    };
    if !format.reading_enabled() {
        return Err(DecodeError::NotBuiltIn { format });
    }
    check_complete(format, bytes)?;
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODED_BYTES);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(|e| decode_error(e, format))?;
    let (w, h) = decoder.dimensions();
    let need = decoder.total_bytes();
    if w > MAX_SIDE || h > MAX_SIDE || need > MAX_DECODED_BYTES {
        return Err(DecodeError::TooLarge {
            width: w,
            height: h,
            bytes: need,
        });
    }
    let image = DynamicImage::from_decoder(decoder).map_err(|e| decode_error(e, format))?;
    if image.width() == 0 || image.height() == 0 {
        return Err(DecodeError::ZeroSize);
    }
    Ok(image)
}

/// A decoder's error by kind: the end of the data reached early is a truncated file, an allocation
/// limit an image too large; anything else the decoder's text on one line.
fn decode_error(e: ImageError, format: ImageFormat) -> DecodeError {
    match e {
        ImageError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            DecodeError::Truncated {
                what: format!("{} file", format_name(format)),
                place: "before its image data does".into(),
            }
        }
        ImageError::Limits(_) => DecodeError::Limits { source: e },
        _ => DecodeError::Corrupt { source: e },
    }
}

/// A format's usual name ("JPEG", "PNG", "WebP", …).
fn format_name(format: ImageFormat) -> String {
    match format {
        ImageFormat::Jpeg => "JPEG".into(),
        ImageFormat::Png => "PNG".into(),
        ImageFormat::Gif => "GIF".into(),
        ImageFormat::Bmp => "BMP".into(),
        ImageFormat::Tiff => "TIFF".into(),
        other => format!("{other:?}"),
    }
}

/// Refuses a JPEG or PNG that was cut short, which the decoders would return with the missing
/// part grey (JPEG) or, cut inside the last chunk, as whole (PNG). A JPEG must reach its
/// end-of-image marker (FF D9) after its last scan, found by walking the marker segments (so a
/// thumbnail's marker inside an APP segment does not count) and the scans' entropy-coded data;
/// bytes after that marker are allowed (the image before them is complete). A PNG must reach the
/// end of its IEND chunk, every chunk before it whole. Other formats are left to their decoders
/// (whose end-of-data error becomes "truncated" in [`decode_bytes`]).
fn check_complete(format: ImageFormat, bytes: &[u8]) -> Result<(), DecodeError> {
    match format {
        ImageFormat::Jpeg if !jpeg_reaches_eoi(bytes) => Err(DecodeError::Truncated {
            what: "JPEG".into(),
            place: "before its end-of-image marker".into(),
        }),
        ImageFormat::Png => match png_cut_chunk(bytes) {
            None => Ok(()),
            Some(chunk) => {
                let place = match chunk.as_deref() {
                    Some("IEND") => "inside its IEND chunk".to_string(),
                    Some(c) => format!("inside its {c} chunk, before its IEND chunk"),
                    None => "before its IEND chunk".to_string(),
                };
                Err(DecodeError::Truncated {
                    what: "PNG".into(),
                    place,
                })
            }
        },
        _ => Ok(()),
    }
}

/// Whether the JPEG in `b` (starting with SOI) reaches its EOI marker: marker segments are
/// skipped by their lengths, a scan (SOS) by its entropy-coded data (where FF is followed by a
/// stuffed 00 or a restart marker), bytes between segments that are not a marker are passed over
/// as decoders do.
fn jpeg_reaches_eoi(b: &[u8]) -> bool {
    let n = b.len();
    let mut i = 2; // after SOI
    loop {
        // The next marker: FF (fill FFs allowed) then a code; stray bytes before it are skipped.
        while i < n && b[i] != 0xFF {
            i += 1;
        }
        while i < n && b[i] == 0xFF {
            i += 1;
        }
        let Some(&code) = b.get(i) else {
            return false;
        };
        i += 1;
        match code {
            0xD9 => return true,
            // Markers without a segment: TEM, RST0..7, SOI, and a stuffed 00 out of place.
            0x00 | 0x01 | 0xD0..=0xD8 => continue,
            _ => {}
        }
        let Some(len) = b
            .get(i..i + 2)
            .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]])))
        else {
            return false;
        };
        i += len.max(2);
        if i > n {
            return false;
        }
        if code == 0xDA {
            // Entropy-coded data up to the next marker that is neither a stuffed 00 nor RSTn.
            loop {
                match b[i..].iter().position(|&x| x == 0xFF) {
                    None => return false,
                    Some(k) => i += k,
                }
                let mut j = i + 1;
                while j < n && b[j] == 0xFF {
                    j += 1;
                }
                match b.get(j) {
                    None => return false,
                    Some(0x00 | 0xD0..=0xD7) => i = j + 1,
                    Some(_) => break,
                }
            }
        }
    }
}

/// Where the PNG in `b` (starting with its 8-byte signature) is cut: `None` when it reaches the
/// end of its IEND chunk, `Some(Some(type))` when it ends inside a chunk, `Some(None)` when it ends
/// between chunks (or inside one whose type is not four letters).
fn png_cut_chunk(b: &[u8]) -> Option<Option<String>> {
    let mut i: usize = 8;
    loop {
        let Some(head) = b.get(i..i + 8) else {
            return Some(None);
        };
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = &head[4..8];
        let end = i.saturating_add(12).saturating_add(len);
        if end > b.len() {
            // A chunk type is four ASCII letters; anything else is not worth naming.
            let name = kind.iter().all(u8::is_ascii_alphabetic);
            return Some(name.then(|| String::from_utf8_lossy(kind).into_owned()));
        }
        if kind == b"IEND" {
            return None;
        }
        i = end;
    }
}

#[cfg(test)]
mod tests;
