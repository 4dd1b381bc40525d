//! Reading and decoding image files into RGB 8-bit pixels. The format is guessed from the file's
//! content, never from its extension.

use std::io::Cursor;
use std::path::Path;

use image::{DynamicImage, ImageFormat, ImageReader, RgbImage};

use super::SourceError;

/// File extensions (lowercase) a folder source picks up as images: `jpg`, `jpeg`, `png`, `bmp`, and
/// `webp` when this build can decode WebP. A `.bmp` file is listed even when this build cannot
/// decode BMP, so that it is reported as skipped rather than silently ignored.
pub fn image_extensions() -> Vec<&'static str> {
    let mut exts = vec!["jpg", "jpeg", "png", "bmp"];
    if ImageFormat::WebP.reading_enabled() {
        exts.push("webp");
    }
    exts
}

/// The [`image_extensions`] as messages list them: `.jpg .jpeg .png .bmp`.
pub fn extension_list() -> String {
    image_extensions()
        .iter()
        .map(|e| format!(".{e}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// True when `path` has one of the [`image_extensions`] (any case).
pub fn has_image_extension(path: &Path) -> bool {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return false;
    };
    image_extensions()
        .iter()
        .any(|known| ext.eq_ignore_ascii_case(known))
}

/// Reads the file at `path` and decodes it to RGB 8-bit (gray → 3 channels, alpha dropped,
/// 16-bit → 8-bit). Errors name the file and say what to do.
pub fn read_rgb(path: &Path) -> Result<RgbImage, SourceError> {
    let bytes = std::fs::read(path).map_err(|e| {
        SourceError::at(
            path,
            format!("cannot read image ({e}); check that the file exists and is readable"),
        )
    })?;
    let image = decode_bytes(&bytes).map_err(|why| SourceError::at(path, why))?;
    Ok(image.into_rgb8())
}

/// Decodes an image held in memory, guessing its format from the content. The error is a complete
/// message: what is wrong and what to do.
pub fn decode_bytes(bytes: &[u8]) -> Result<DynamicImage, String> {
    const FIX: &str = "remove or replace the file";
    if bytes.is_empty() {
        return Err(format!("cannot decode image (the file is empty); {FIX}"));
    }
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("cannot decode image ({e}); {FIX}"))?;
    let Some(format) = reader.format() else {
        return Err(format!(
            "cannot decode image (the content is not a known image format); {FIX}"
        ));
    };
    if !format.reading_enabled() {
        return Err(format!(
            "cannot decode image ({format:?} decoding is not built into this robustream); \
             convert the file to PNG or JPEG"
        ));
    }
    let image = reader
        .decode()
        .map_err(|e| format!("cannot decode image ({e}); {FIX}"))?;
    if image.width() == 0 || image.height() == 0 {
        return Err(format!(
            "cannot decode image (it has zero width or height); {FIX}"
        ));
    }
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::test_util::write_rgb;
    use image::{ImageBuffer, Luma, LumaA, Rgb, Rgba};

    #[test]
    fn extension_filter_is_case_insensitive() {
        assert!(has_image_extension(Path::new("a/b.JPG")));
        assert!(has_image_extension(Path::new("b.Jpeg")));
        assert!(has_image_extension(Path::new("b.png")));
        assert!(has_image_extension(Path::new("b.bmp")));
        assert!(!has_image_extension(Path::new("b.txt")));
        assert!(!has_image_extension(Path::new("png")));
        assert!(!has_image_extension(Path::new(".DS_Store")));
    }

    #[test]
    fn decodes_png_and_jpeg_regardless_of_extension() {
        let dir = tempfile::tempdir().unwrap();
        let jpg = dir.path().join("a.jpg");
        write_rgb(&jpg, 4, 3, [200, 10, 10]);
        // A JPEG stored under a .png name decodes by content.
        let misnamed = dir.path().join("really_jpeg.png");
        std::fs::copy(&jpg, &misnamed).unwrap();
        let img = read_rgb(&misnamed).unwrap();
        assert_eq!(img.dimensions(), (4, 3));
        assert!(img.get_pixel(1, 1)[0] > 150);

        let png = dir.path().join("b.png");
        write_rgb(&png, 5, 2, [1, 2, 3]);
        assert_eq!(read_rgb(&png).unwrap().get_pixel(4, 1).0, [1, 2, 3]);
    }

    #[test]
    fn converts_gray_alpha_and_16_bit_to_rgb8() {
        let dir = tempfile::tempdir().unwrap();
        let gray = dir.path().join("g.png");
        ImageBuffer::from_pixel(2, 2, Luma([77u8]))
            .save(&gray)
            .unwrap();
        assert_eq!(read_rgb(&gray).unwrap().get_pixel(0, 0).0, [77, 77, 77]);

        let gray_alpha = dir.path().join("ga.png");
        ImageBuffer::from_pixel(2, 2, LumaA([90u8, 0]))
            .save(&gray_alpha)
            .unwrap();
        assert_eq!(
            read_rgb(&gray_alpha).unwrap().get_pixel(0, 0).0,
            [90, 90, 90]
        );

        let rgba = dir.path().join("rgba.png");
        ImageBuffer::from_pixel(2, 2, Rgba([10u8, 20, 30, 0]))
            .save(&rgba)
            .unwrap();
        assert_eq!(read_rgb(&rgba).unwrap().get_pixel(1, 1).0, [10, 20, 30]);

        let deep = dir.path().join("rgb16.png");
        ImageBuffer::from_pixel(2, 2, Rgb([65535u16, 0, 32896]))
            .save(&deep)
            .unwrap();
        assert_eq!(read_rgb(&deep).unwrap().get_pixel(0, 0).0, [255, 0, 128]);
    }

    #[test]
    fn corrupt_empty_and_missing_files_are_item_errors() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("bad.jpg");
        std::fs::write(&garbage, b"this is not an image at all").unwrap();
        let e = read_rgb(&garbage).unwrap_err();
        assert!(e.item.ends_with("bad.jpg"));
        assert!(e.message.starts_with("cannot decode image ("), "{e}");
        assert!(e.message.ends_with("; remove or replace the file"), "{e}");

        // A PNG signature followed by junk: the format is known but decoding fails.
        let truncated = dir.path().join("trunc.png");
        std::fs::write(&truncated, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRjunk").unwrap();
        let e = read_rgb(&truncated).unwrap_err();
        assert!(e.message.starts_with("cannot decode image ("), "{e}");

        let empty = dir.path().join("empty.png");
        std::fs::write(&empty, b"").unwrap();
        let e = read_rgb(&empty).unwrap_err();
        assert!(e.message.contains("empty"), "{e}");

        let e = read_rgb(&dir.path().join("missing.png")).unwrap_err();
        assert!(e.message.starts_with("cannot read image ("), "{e}");
    }

    #[test]
    fn unsupported_format_says_to_convert() {
        if ImageFormat::Bmp.reading_enabled() {
            return;
        }
        // Minimal BMP header: the format is recognised from the "BM" signature.
        let mut bmp = b"BM".to_vec();
        bmp.extend_from_slice(&[0u8; 60]);
        let e = decode_bytes(&bmp).unwrap_err();
        assert!(e.contains("convert the file to PNG or JPEG"), "{e}");
    }
}
