use super::*;

#[test]
fn norm_boxes_parse_and_reject_with_reasons() {
    let b = parse_norm_boxes(" 0 0 1 1 ;0.25 0.5 0.75 1;").unwrap();
    assert_eq!(
        b,
        vec![
            NormBox {
                x0: 0.0,
                y0: 0.0,
                x1: 1.0,
                y1: 1.0
            },
            NormBox {
                x0: 0.25,
                y0: 0.5,
                x1: 0.75,
                y1: 1.0
            }
        ]
    );
    assert_eq!(parse_norm_boxes("").unwrap(), vec![]);
    assert_eq!(parse_norm_boxes(" ; ").unwrap(), vec![]);
    let e = parse_norm_boxes("0 0 1").unwrap_err().to_string();
    assert!(e.starts_with("box 1 `0 0 1` has 3 numbers, not 4"), "{e}");
    let e = parse_norm_boxes("0 0 1 1;0 0 x 1").unwrap_err().to_string();
    assert!(e.starts_with("box 2 `0 0 x 1` is not four numbers"), "{e}");
    assert!(parse_norm_boxes("0 0 NaN 1").is_err());
    let e = parse_norm_boxes("0 0 1.5 1").unwrap_err().to_string();
    assert!(e.contains("outside [0, 1]"), "{e}");
    assert!(parse_norm_boxes("-0.1 0 1 1").is_err());
    let e = parse_norm_boxes("0.5 0 0.5 1").unwrap_err().to_string();
    assert!(e.contains("empty or reversed"), "{e}");
    // Pixel boxes written by mistake are outside [0, 1].
    assert!(parse_norm_boxes("10 20 100 200").is_err());
}

#[test]
fn norm_to_pixels_truncates_like_the_reference_and_round_trips() {
    let b = NormBox {
        x0: 0.119,
        y0: 0.0,
        x1: 0.999,
        y1: 0.5,
    };
    // 0.119 × 100 = 11.9 → 11; 0.999 × 100 = 99.9 → 99 (int() truncation,
    // docs/corner-cases.md#composition, step 1).
    assert_eq!(b.to_pixels(100, 10), Some(BBox::new(11, 0, 99, 5)));
    // Thinner than a pixel → nothing.
    let thin = NormBox {
        x0: 0.501,
        y0: 0.0,
        x1: 0.502,
        y1: 1.0,
    };
    assert_eq!(thin.to_pixels(100, 10), None);
    // Every pixel box of a few odd sizes survives format → parse → to_pixels exactly.
    for (w, h) in [
        (7u32, 3u32),
        (640, 427),
        (1280, 720),
        (224, 224),
        (333, 1000),
    ] {
        for (x0, x1) in [(0, 1), (1, 3), (w / 3, w - 1), (w - 1, w), (0, w)] {
            for (y0, y1) in [(0, h), (h / 2, h / 2 + 1), (1, h - 1)] {
                let p = BBox::new(x0, y0, x1, y1);
                let text = format_norm_boxes(&[NormBox::from_pixels(&p, w, h)]);
                let back = parse_norm_boxes(&text).unwrap()[0].to_pixels(w, h);
                assert_eq!(back, Some(p), "{w}x{h} {text}");
            }
        }
    }
}

const VOC: &str = r#"<?xml version="1.0"?>
<annotation>
  <folder>val</folder>
  <filename>ILSVRC2012_val_00000001</filename>
  <size><width>500</width><height>375</height><depth>3</depth></size>
  <object>
    <name>n01751748</name><truncated>0</truncated>
    <bndbox><xmin>111</xmin><ymin>108</ymin><xmax>441</xmax><ymax>193</ymax></bndbox>
  </object>
  <object><name>n01751748</name>
    <bndbox><xmin>0</xmin><ymin>0.9</ymin><xmax>499.7</xmax><ymax>374</ymax></bndbox>
  </object>
  <object><name>no box</name></object>
</annotation>"#;

#[test]
fn voc_parses_size_objects_and_inclusive_corners() {
    let a = parse_voc(VOC).unwrap();
    assert_eq!(a.size, Some((500, 375)));
    assert_eq!(a.objects.len(), 2);
    assert_eq!(a.objects[0].name, "n01751748");
    assert_eq!(a.objects[0].bbox, BBox::new(111, 108, 442, 194));
    // Decimals truncated; the last pixel (499, 374) is inside.
    assert_eq!(a.objects[1].bbox, BBox::new(0, 0, 500, 375));
    assert_eq!(
        voc_boxes(&a, (500, 375)).unwrap(),
        vec![BBox::new(111, 108, 442, 194), BBox::new(0, 0, 500, 375)]
    );
    let e = voc_boxes(&a, (375, 500)).unwrap_err().to_string();
    assert!(
        e.starts_with("the annotation is for a 500x375 image but the image is 375x500"),
        "{e}"
    );
}

#[test]
fn voc_errors_say_what_is_wrong() {
    assert!(
        parse_voc("<annotation><object>")
            .unwrap_err()
            .to_string()
            .contains("XML")
    );
    assert!(
        parse_voc("<svg/>")
            .unwrap_err()
            .to_string()
            .contains("<svg>, not <annotation>")
    );
    let e = parse_voc(
        "<annotation><object><bndbox><xmin>5</xmin><ymin>1</ymin><xmax>2</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("object 1") && e.contains("reversed"), "{e}");
    let e = parse_voc(
        "<annotation><object><bndbox><xmin>a</xmin><ymin>1</ymin><xmax>2</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("<xmin> is `a`, not a number"), "{e}");
    let e = parse_voc(
        "<annotation><object><bndbox><xmin>1</xmin><xmax>2</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("has no <ymin>"), "{e}");
    // No <size>: boxes only clipped; a box outside the image is an error.
    let a = parse_voc(
        "<annotation><object><bndbox><xmin>8</xmin><ymin>0</ymin><xmax>20</xmax>\
             <ymax>3</ymax></bndbox></object></annotation>",
    )
    .unwrap();
    assert_eq!(a.size, None);
    assert_eq!(
        voc_boxes(&a, (10, 10)).unwrap(),
        vec![BBox::new(8, 0, 10, 4)]
    );
    assert!(
        voc_boxes(&a, (8, 10))
            .unwrap_err()
            .to_string()
            .contains("lies outside the 8x10 image")
    );
}

#[test]
fn resolve_reads_voc_files_and_names_them_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("a.xml");
    std::fs::write(&xml, VOC).unwrap();
    let img = Path::new("img.JPEG");
    let spec = BoxSpec::Voc(xml.clone());
    assert_eq!(resolve_boxes(&spec, img, (500, 375)).unwrap().len(), 2);
    let e = resolve_boxes(&spec, img, (10, 10)).unwrap_err();
    assert_eq!(e.item, "img.JPEG");
    assert!(
        e.message
            .starts_with(&format!("annotation {}: ", xml.display())),
        "{e}"
    );
    let no = dir.path().join("no.xml");
    let e = resolve_boxes(&BoxSpec::Voc(no.clone()), img, (1, 1)).unwrap_err();
    assert!(
        e.message.starts_with(&format!(
            "annotation {}: cannot read annotation (",
            no.display()
        )) && e
            .message
            .ends_with("check that the file exists and is readable"),
        "{e}"
    );
    // Not a file, too large, not text: refused through the bounded reader, one line each.
    let e = resolve_boxes(&BoxSpec::Voc(dir.path().to_path_buf()), img, (1, 1)).unwrap_err();
    assert!(
        e.message.ends_with(
            ": is a directory, not an annotation file; give the path of an annotation file"
        ),
        "{e}"
    );
    let big = dir.path().join("big.xml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(super::super::decode::MAX_FILE_BYTES + 1)
        .unwrap();
    let e = resolve_boxes(&BoxSpec::Voc(big), img, (1, 1)).unwrap_err();
    assert!(
            e.message
                .ends_with(": the annotation file is larger than 256 MiB (the most robustream reads of one file); shrink or re-encode it"),
            "{e}"
        );
    let latin1 = dir.path().join("latin1.xml");
    std::fs::write(&latin1, b"<annotation>caf\xe9</annotation>").unwrap();
    let e = resolve_boxes(&BoxSpec::Voc(latin1), img, (1, 1)).unwrap_err();
    assert!(
        e.message
            .ends_with(": is not UTF-8 text (invalid byte at offset 15); save the XML as UTF-8"),
        "{e}"
    );
    let spec = BoxSpec::Normalized(parse_norm_boxes("0 0 0.5 1;0.5 0.5 0.5001 1").unwrap());
    let e = resolve_boxes(&spec, img, (10, 10)).unwrap_err();
    assert!(e.message.starts_with("box 2 "), "{e}");
    assert!(e.message.contains("thinner than a pixel"), "{e}");
}
