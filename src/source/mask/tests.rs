use super::*;
use crate::source::test_util::{write_gray, write_npy, write_rgb};

fn le_bytes<const N: usize, T>(values: &[T], f: impl Fn(&T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(f).collect()
}

#[test]
fn mask_values_scale_binary_and_clip_byte_range() {
    assert_eq!(to_mask_values(&[0.0, 1.0, 0.5]), vec![0, 255, 128]);
    assert_eq!(to_mask_values(&[0.0, 0.0]), vec![0, 0]);
    assert_eq!(
        to_mask_values(&[0.0, 7.0, 255.0, 300.0, -4.0]),
        vec![0, 7, 255, 255, 0]
    );
    assert_eq!(to_mask_values(&[f64::NAN, 1.0]), vec![0, 255]);
    assert_eq!(to_mask_values(&[]), Vec::<u8>::new());
}

#[test]
fn png_mask_is_read_as_gray_with_values_kept() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.png");
    write_gray(&m, 3, 2, 200);
    let mask = load(&m, Path::new("img.png"), (3, 2)).unwrap();
    assert_eq!(mask.get_pixel(2, 1).0, [200]);
    // An RGB mask is converted to gray.
    let rgb = dir.path().join("rgb.png");
    write_rgb(&rgb, 3, 2, [255, 255, 255]);
    assert_eq!(
        load(&rgb, Path::new("i"), (3, 2))
            .unwrap()
            .get_pixel(0, 0)
            .0,
        [255]
    );
}

#[test]
fn npy_u8_and_bool_binary_masks_map_to_255() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.npy");
    // 2 rows × 3 columns, C order.
    write_npy(&p, "|u1", false, "(2, 3)", &[0, 1, 0, 1, 1, 0]);
    let m = load(&p, Path::new("i"), (3, 2)).unwrap();
    assert_eq!(m.as_raw(), &vec![0, 255, 0, 255, 255, 0]);

    write_npy(&p, "|b1", false, "(2, 3, 1)", &[1, 0, 0, 0, 0, 1]);
    let m = load(&p, Path::new("i"), (3, 2)).unwrap();
    assert_eq!(m.as_raw(), &vec![255, 0, 0, 0, 0, 255]);
}

#[test]
fn npy_int_and_float_dtypes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.npy");
    write_npy(
        &p,
        "<i8",
        false,
        "(1, 3)",
        &le_bytes(&[0i64, 1, 1], |v| v.to_le_bytes()),
    );
    assert_eq!(
        npy_to_mask(&std::fs::read(&p).unwrap()).unwrap().as_raw(),
        &vec![0, 255, 255]
    );

    write_npy(
        &p,
        "<i4",
        false,
        "(1, 3)",
        &le_bytes(&[0i32, 128, 999], |v| v.to_le_bytes()),
    );
    assert_eq!(
        npy_to_mask(&std::fs::read(&p).unwrap()).unwrap().as_raw(),
        &vec![0, 128, 255]
    );

    write_npy(
        &p,
        "<f4",
        false,
        "(1, 3)",
        &le_bytes(&[0f32, 0.5, 1.0], |v| v.to_le_bytes()),
    );
    assert_eq!(
        npy_to_mask(&std::fs::read(&p).unwrap()).unwrap().as_raw(),
        &vec![0, 128, 255]
    );

    // Big-endian float64.
    write_npy(
        &p,
        ">f8",
        false,
        "(1, 2)",
        &le_bytes(&[1f64, 0.0], |v| v.to_be_bytes()),
    );
    assert_eq!(
        npy_to_mask(&std::fs::read(&p).unwrap()).unwrap().as_raw(),
        &vec![255, 0]
    );
}

#[test]
fn npy_writer_round_trips_as_binary() {
    let mut m = GrayImage::new(5, 3);
    m.put_pixel(4, 2, image::Luma([255]));
    m.put_pixel(0, 1, image::Luma([7]));
    let bytes = mask_to_npy(&m);
    assert_eq!((bytes.len() - 15) % 64, 0, "header is padded to 64 bytes");
    let back = npy_to_mask(&bytes).unwrap();
    assert_eq!(back.dimensions(), (5, 3));
    assert_eq!(back.get_pixel(4, 2).0, [255]);
    assert_eq!(back.get_pixel(0, 1).0, [255]);
    assert_eq!(back.as_raw().iter().filter(|&&v| v != 0).count(), 2);
}

#[test]
fn npy_fortran_order_is_transposed() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.npy");
    // Logical 2×3 array [[0,1,1],[0,0,1]] stored column by column.
    write_npy(&p, "|u1", true, "(2, 3)", &[0, 0, 1, 0, 1, 1]);
    let m = npy_to_mask(&std::fs::read(&p).unwrap()).unwrap();
    assert_eq!(m.dimensions(), (3, 2));
    assert_eq!(m.as_raw(), &vec![0, 255, 255, 0, 0, 255]);
}

#[test]
fn npy_bad_shape_dtype_and_length_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.npy");
    write_npy(&p, "|u1", false, "(2, 2, 3)", &[0; 12]);
    let e = load(&p, Path::new("img.png"), (2, 2)).unwrap_err();
    assert!(e.message.contains("masks must be 2-D"), "{e}");
    assert_eq!(e.item, "img.png");

    write_npy(&p, "|u1", false, "(4,)", &[0; 4]);
    assert!(
        npy_to_mask(&std::fs::read(&p).unwrap())
            .unwrap_err()
            .to_string()
            .contains("2-D")
    );

    write_npy(&p, "<u2", false, "(1, 2)", &[0; 4]);
    let e = npy_to_mask(&std::fs::read(&p).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("dtype `<u2` is not supported"), "{e}");

    write_npy(&p, "<f2", false, "(1, 2)", &[0; 4]);
    assert!(
        npy_to_mask(&std::fs::read(&p).unwrap())
            .unwrap_err()
            .to_string()
            .contains("not supported")
    );

    // Header claims a huge array but the data is short.
    write_npy(&p, "<f8", false, "(100000, 100000)", &[0; 16]);
    let e = npy_to_mask(&std::fs::read(&p).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated"), "{e}");

    write_npy(&p, "|u1", false, "(0, 3)", &[]);
    assert!(
        npy_to_mask(&std::fs::read(&p).unwrap())
            .unwrap_err()
            .to_string()
            .contains("non-empty")
    );

    // Bool with a value other than 0/1.
    write_npy(&p, "|b1", false, "(1, 2)", &[0, 7]);
    assert!(npy_to_mask(&std::fs::read(&p).unwrap()).is_err());

    // Dimensions whose product overflows u64.
    write_npy(&p, "|u1", false, "(4294967296, 4294967296, 2)", &[0; 4]);
    assert!(
        npy_to_mask(&std::fs::read(&p).unwrap())
            .unwrap_err()
            .to_string()
            .contains("corrupt")
    );
    write_npy(&p, "|u1", false, "(4294967296, 4294967296)", &[0; 4]);
    assert!(npy_to_mask(&std::fs::read(&p).unwrap()).is_err());

    // Magic but broken header.
    std::fs::write(&p, b"\x93NUMPY\x01\x00\xff\xffgarbage").unwrap();
    assert!(
        npy_to_mask(&std::fs::read(&p).unwrap())
            .unwrap_err()
            .to_string()
            .contains(".npy")
    );
}

#[test]
fn wrong_size_mask_is_an_item_error_with_both_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.png");
    write_gray(&m, 4, 4, 255);
    let e = load(&m, Path::new("dir/img.png"), (8, 6)).unwrap_err();
    assert_eq!(e.item, "dir/img.png");
    assert_eq!(
        e.message,
        format!(
            "mask {} is 4x4 but image dir/img.png is 8x6; masks must have the image's size",
            m.display()
        )
    );
}

#[test]
fn empty_mask_is_an_item_error_naming_the_mask() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("m.png");
    write_gray(&m, 3, 2, 0);
    let e = load(&m, Path::new("a/img.png"), (3, 2)).unwrap_err();
    assert_eq!(e.item, "a/img.png");
    assert!(
        e.message.starts_with(&format!(
            "mask {} has no foreground pixel (all 0)",
            m.display()
        )),
        "{e}"
    );
    let n = dir.path().join("m.npy");
    write_npy(&n, "|u1", false, "(2, 3)", &[0; 6]);
    assert!(
        load(&n, Path::new("i"), (3, 2))
            .unwrap_err()
            .message
            .contains("no foreground")
    );
}

#[test]
fn label_image_masks_become_binary() {
    let dir = tempfile::tempdir().unwrap();
    // A 0/1 gray PNG (a label image) → 0/255.
    let m = dir.path().join("01.png");
    let mut g = GrayImage::new(3, 1);
    g.put_pixel(1, 0, image::Luma([1]));
    g.save(&m).unwrap();
    assert_eq!(
        load(&m, Path::new("i"), (3, 1)).unwrap().as_raw(),
        &vec![0, 255, 0]
    );
    // Red object on black (XIMAGENET-12's V7 masks) → 255 where any channel is set; a gray soft
    // edge (values > 1) is kept.
    let rgb = dir.path().join("red.png");
    let mut c = image::RgbImage::new(3, 1);
    c.put_pixel(0, 0, image::Rgb([255, 0, 0]));
    c.put_pixel(2, 0, image::Rgb([0, 0, 1]));
    c.save(&rgb).unwrap();
    assert_eq!(
        load(&rgb, Path::new("i"), (3, 1)).unwrap().as_raw(),
        &vec![255, 0, 255]
    );
    let soft = dir.path().join("soft.png");
    let mut g = GrayImage::new(2, 1);
    g.put_pixel(0, 0, image::Luma([2]));
    g.put_pixel(1, 0, image::Luma([128]));
    g.save(&soft).unwrap();
    assert_eq!(
        load(&soft, Path::new("i"), (2, 1)).unwrap().as_raw(),
        &vec![2, 128]
    );
}

#[test]
fn missing_or_corrupt_mask_is_an_item_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = load(&dir.path().join("nope.png"), Path::new("i.png"), (1, 1)).unwrap_err();
    assert!(e.message.contains(": cannot read mask ("), "{e}");
    let bad = dir.path().join("bad.png");
    std::fs::write(&bad, b"xx").unwrap();
    let e = load(&bad, Path::new("i.png"), (1, 1)).unwrap_err();
    assert!(e.message.contains("cannot decode image"), "{e}");
}
