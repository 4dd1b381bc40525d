use super::*;
use crate::source::test_util::write_rgb;
use image::{ImageBuffer, Luma, LumaA, Rgb, Rgba};

#[test]
fn extension_filter_is_case_insensitive() {
    assert!(has_image_extension(Path::new("a/b.JPG")));
    assert!(has_image_extension(Path::new("b.Jpeg")));
    assert!(has_image_extension(Path::new("b.png")));
    assert!(has_image_extension(Path::new("b.bmp")));
    for ext in ["webp", "GIF", "tif", "TIFF"] {
        assert!(has_image_extension(Path::new(&format!("b.{ext}"))), "{ext}");
    }
    for ext in ["txt", "csv", "json", "xml", "npy"] {
        assert!(
            !has_image_extension(Path::new(&format!("b.{ext}"))),
            "{ext}"
        );
    }
    assert!(!has_image_extension(Path::new("b.txt")));
    assert!(!has_image_extension(Path::new("png")));
    assert!(!has_image_extension(Path::new(".DS_Store")));
}

#[test]
fn formats_we_cannot_decode_are_told_apart_from_other_files() {
    for name in [
        "a.heic", "a.HEIF", "a.avif", "a.AVIF", "a.jxl", "a.jp2", "a.ico", "a.tga", "a.exr",
        "a.hdr", "a.qoi", "a.ppm", "a.psd", "a.svg", "a.dng", "a.NEF",
    ] {
        let ext = undecodable_extension(Path::new(name));
        assert_eq!(ext, Path::new(name).extension().and_then(|e| e.to_str()));
        // If one of these ever decodes here, the test says so: it must not be listed as both.
        assert!(!has_image_extension(Path::new(name)), "{name}");
    }
    for name in [
        "a.png", "a.JPG", "a.webp", "a.tiff", "a.txt", "a.xml", "a.npy", "avif",
    ] {
        assert_eq!(undecodable_extension(Path::new(name)), None, "{name}");
    }
    // AVIF files are AVIF by content too: the decoder's refusal says the same thing.
    let avif = b"\0\0\0\x1cftypavif\0\0\0\0avifmif1miaf\0\0\0\0";
    let e = decode_bytes(avif).unwrap_err().to_string();
    assert!(
        e.contains("not built into this robustream")
            && e.ends_with("convert the file to PNG or JPEG"),
        "{e}"
    );
    assert_eq!(
        undecodable_message("HEIC"),
        format!(
            "cannot decode image (.HEIC files are not decoded by this robustream, which reads \
                 {}); convert the file to PNG or JPEG",
            extension_list()
        )
    );
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

    // A PNG signature followed by junk: the format is known, the file ends inside a chunk.
    let truncated = dir.path().join("trunc.png");
    std::fs::write(&truncated, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRjunk").unwrap();
    let e = read_rgb(&truncated).unwrap_err();
    assert_eq!(
        e.message,
        "truncated: the PNG ends inside its IHDR chunk, before its IEND chunk; re-copy the file"
    );
    // Whole chunks with junk in them: the decoder's error, on one line.
    let mut junk = b"\x89PNG\r\n\x1a\n\0\0\0\x04IHDRjunkcrc!".to_vec();
    junk.extend_from_slice(b"\0\0\0\0IEND\xaeB`\x82");
    let e = decode_bytes(&junk).unwrap_err().to_string();
    assert!(e.starts_with("cannot decode image ("), "{e}");

    let empty = dir.path().join("empty.png");
    std::fs::write(&empty, b"").unwrap();
    let e = read_rgb(&empty).unwrap_err();
    assert!(e.message.contains("empty"), "{e}");

    let e = read_rgb(&dir.path().join("missing.png")).unwrap_err();
    assert!(e.message.starts_with("cannot read image ("), "{e}");
}

#[test]
fn unsupported_format_says_to_convert() {
    // QOI is recognised by its magic bytes but not built in.
    assert!(!ImageFormat::Qoi.reading_enabled());
    let mut qoi = b"qoif".to_vec();
    qoi.extend_from_slice(&[0u8; 60]);
    let e = decode_bytes(&qoi).unwrap_err().to_string();
    assert!(e.contains("convert the file to PNG or JPEG"), "{e}");
}

/// A 64×48 gradient (so the encoders have real data to write).
fn gradient() -> RgbImage {
    RgbImage::from_fn(64, 48, |x, y| {
        Rgb([(x * 4) as u8, (y * 5) as u8, ((x ^ y) * 3) as u8])
    })
}

fn encode(format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    gradient().write_to(&mut out, format).unwrap();
    out.into_inner()
}

#[test]
fn webp_bmp_gif_and_tiff_decode() {
    for format in [
        ImageFormat::WebP,
        ImageFormat::Bmp,
        ImageFormat::Gif,
        ImageFormat::Tiff,
    ] {
        let img = decode_bytes(&encode(format)).unwrap().into_rgb8();
        assert_eq!(img.dimensions(), (64, 48), "{format:?}");
        if format != ImageFormat::Gif {
            // Lossless (GIF quantises to 256 colours).
            assert_eq!(img, gradient(), "{format:?}");
        }
    }
}

const JPEG_CUT: &str = "truncated: the JPEG ends before its end-of-image marker; re-copy the file";

#[test]
fn truncated_jpeg_is_refused_though_the_decoder_accepts_it() {
    let jpeg = encode(ImageFormat::Jpeg);
    assert!(decode_bytes(&jpeg).is_ok());
    for cut in [jpeg.len() / 2, jpeg.len() - 2, jpeg.len() - 1, 40, 3] {
        let part = &jpeg[..cut];
        // What the issue is about: the decoder returns the cut file as a whole image ...
        if cut == jpeg.len() - 2 {
            let lenient = ImageReader::with_format(Cursor::new(part), ImageFormat::Jpeg);
            assert!(lenient.decode().is_ok());
        }
        // ... which is refused here.
        assert_eq!(
            decode_bytes(part).unwrap_err().to_string(),
            JPEG_CUT,
            "cut at {cut}"
        );
    }
    // Bytes after the end-of-image marker are allowed: the image before them is whole.
    let mut trailing = jpeg.clone();
    trailing.extend_from_slice(b"\0\0padding\xff\xd8");
    assert!(decode_bytes(&trailing).is_ok());
}

#[test]
fn an_end_marker_inside_a_segment_does_not_count() {
    // An APP1 segment holding a whole thumbnail (with its own FF D9) after SOI, then the real
    // image cut short: the thumbnail's marker is skipped with its segment.
    let jpeg = encode(ImageFormat::Jpeg);
    let thumb = b"Exif\0\0\xff\xd8\xff\xdb\x00\x02\xff\xd9";
    let mut with_thumb = vec![0xFF, 0xD8, 0xFF, 0xE1];
    with_thumb.extend_from_slice(&((thumb.len() + 2) as u16).to_be_bytes());
    with_thumb.extend_from_slice(thumb);
    with_thumb.extend_from_slice(&jpeg[2..]);
    assert!(decode_bytes(&with_thumb).is_ok());
    let cut = &with_thumb[..with_thumb.len() * 2 / 3];
    assert_eq!(decode_bytes(cut).unwrap_err().to_string(), JPEG_CUT);
}

#[test]
fn truncated_png_names_where_it_ends() {
    let png = encode(ImageFormat::Png);
    let n = png.len();
    // Cut inside IEND (its CRC), the decoder returns the image: refused all the same.
    assert!(
        ImageReader::with_format(Cursor::new(&png[..n - 2]), ImageFormat::Png)
            .decode()
            .is_ok()
    );
    for (cut, want) in [
        (n - 2, "truncated: the PNG ends inside its IEND chunk"),
        (n - 12, "truncated: the PNG ends before its IEND chunk"),
        (
            n / 2,
            "truncated: the PNG ends inside its IDAT chunk, before its IEND chunk",
        ),
    ] {
        let e = decode_bytes(&png[..cut]).unwrap_err().to_string();
        assert_eq!(e, format!("{want}; re-copy the file"), "cut at {cut}");
    }
    let mut trailing = png.clone();
    trailing.extend_from_slice(b"junk");
    assert!(decode_bytes(&trailing).is_ok());
}

#[test]
fn other_formats_cut_short_say_truncated() {
    for format in [ImageFormat::Bmp, ImageFormat::Tiff] {
        let bytes = encode(format);
        let e = decode_bytes(&bytes[..bytes.len() - 100])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("truncated: the "), "{format:?}: {e}");
        assert!(
            e.ends_with("ends before its image data does; re-copy the file"),
            "{e}"
        );
    }
}

/// PNG chunk with its CRC (CRC-32 of type + data, as the format says).
fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut crc = crc32fast::Hasher::new();
    crc.update(kind);
    crc.update(data);
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
    out
}

/// A structurally complete PNG of a few dozen bytes whose header declares `w`×`h` RGB pixels.
fn png_claiming(w: u32, h: u32) -> Vec<u8> {
    let mut ihdr = w.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(chunk(b"IHDR", &ihdr));
    // An empty zlib stream: far too little data, never reached.
    png.extend(chunk(
        b"IDAT",
        &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
    ));
    png.extend(chunk(b"IEND", &[]));
    png
}

#[test]
fn a_header_claiming_a_huge_image_is_refused_before_allocating() {
    let e = decode_bytes(&png_claiming(60_000, 60_000))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the image is too large to decode: its header declares 60000×60000 pixels (10.1 GiB \
             decoded; robustream decodes at most 65535 pixels a side and 512 MiB); shrink the image"
    );
    let e = decode_bytes(&png_claiming(70_000, 1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("declares 70000×1 pixels"), "{e}");
    // A small claim gets as far as the missing pixel data.
    let e = decode_bytes(&png_claiming(4, 4)).unwrap_err().to_string();
    assert!(!e.contains("too large"), "{e}");
}

#[test]
fn only_regular_files_of_bounded_size_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_file(dir.path(), "image").unwrap_err().to_string();
    assert_eq!(
        e,
        "is a directory, not an image file; give the path of an image file"
    );
    let zero = Path::new("/dev/zero");
    if zero.exists() {
        let e = read_rgb(zero).unwrap_err();
        assert_eq!(e.item, "/dev/zero");
        assert!(
            e.message
                .starts_with("is a character device, not an image file"),
            "{e}"
        );
    }
    let fifo = dir.path().join("pipe.png");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        // Refused without being opened (opening a FIFO with no writer would block).
        let e = read_file(&fifo, "mask").unwrap_err().to_string();
        assert_eq!(
            e,
            "is a FIFO (named pipe), not a mask file; give the path of a mask file"
        );
    }
    // A sparse file one byte over the limit: refused before reading.
    let big = dir.path().join("big.png");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_FILE_BYTES + 1)
        .unwrap();
    let e = read_file(&big, "image").unwrap_err().to_string();
    assert_eq!(
        e,
        "the image file is larger than 256 MiB (the most robustream reads of one file); \
             shrink or re-encode it"
    );
}

#[test]
fn decoder_text_is_folded_to_one_bounded_line() {
    assert_eq!(one_line("Not enough bytes\n"), "Not enough bytes");
    assert_eq!(one_line(" a \n\t b\r\nc "), "a b c");
    let long = one_line(&"word ".repeat(100));
    assert_eq!(long.chars().count(), MAX_REASON_CHARS);
    assert!(long.ends_with('…'));
    assert_eq!(
        one_line("é".repeat(MAX_REASON_CHARS).as_str())
            .chars()
            .count(),
        MAX_REASON_CHARS
    );
}

#[test]
fn decode_errors_of_damaged_files_are_one_line() {
    // Random damage to small files of every format (a fixed generator): whatever the decoders
    // say, the message is one line of bounded length. zune-jpeg ends some of its errors with
    // a newline, the PNG decoder's are long.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for format in [
        ImageFormat::Jpeg,
        ImageFormat::Png,
        ImageFormat::WebP,
        ImageFormat::Gif,
        ImageFormat::Bmp,
        ImageFormat::Tiff,
    ] {
        let clean = encode(format);
        for _ in 0..300 {
            let mut bytes = clean.clone();
            for _ in 0..4 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = next() as u8;
            }
            if next() % 3 == 0 {
                bytes.truncate(1 + (next() % bytes.len() as u64) as usize);
            }
            if let Err(e) = decode_bytes(&bytes) {
                let e = e.to_string();
                assert!(!e.contains(char::is_control), "{format:?}: {e:?}");
                assert!(
                    e.chars().count() < MAX_REASON_CHARS + 120,
                    "{format:?}: {e}"
                );
            }
        }
    }
}
