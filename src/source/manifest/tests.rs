use super::*;
use crate::source::Source;
use crate::source::test_util::{labels, write_gray, write_npy, write_rgb};

fn items(csv: &str) -> Result<Vec<Result<Item, SourceError>>, SourceError> {
    parse(csv.as_bytes(), Path::new("base"), &labels(), "m.csv", &[])
}

#[test]
fn columns_in_any_order_with_optional_mask() {
    let got = items("label,mask,path\n2,m.png,a.png\n").unwrap();
    let item = got[0].as_ref().unwrap();
    assert_eq!(item.path, Path::new("base/a.png"));
    assert_eq!(item.id, "a.png");
    assert_eq!(item.truth, Some(Truth(2)));
    assert_eq!(item.mask.as_deref(), Some(Path::new("base/m.png")));

    let got = items("PATH, Label\na.png , tabby cat\nb.png,\n").unwrap();
    assert_eq!(got[0].as_ref().unwrap().truth, Some(Truth(1)));
    assert_eq!(got[0].as_ref().unwrap().id, "a.png");
    assert_eq!(got[1].as_ref().unwrap().truth, None);
    assert_eq!(got[1].as_ref().unwrap().mask, None);
}

#[test]
fn bom_and_absolute_paths() {
    let abs = if cfg!(windows) {
        "C:\\\\x\\\\a.png"
    } else {
        "/x/a.png"
    };
    let csv = format!("\u{feff}path,label\n{abs},0\n");
    let got = parse(csv.as_bytes(), Path::new("base"), &labels(), "m.csv", &[]).unwrap();
    assert_eq!(got[0].as_ref().unwrap().path, Path::new(abs));
}

#[test]
fn quoted_path_with_comma() {
    let got = items("path,label\n\"a, b.png\",espresso\n").unwrap();
    let item = got[0].as_ref().unwrap();
    assert_eq!(item.id, "a, b.png");
    assert_eq!(item.path, Path::new("base/a, b.png"));
}

#[test]
fn unknown_missing_and_duplicate_columns_fail_at_open() {
    let e = items("path,label,weight\na.png,0,1\n").err().unwrap();
    assert_eq!(e.item, "m.csv");
    assert!(e.message.contains("unknown column `weight`"), "{e}");
    assert!(
        e.message
            .contains("`path`, `label`, and optionally `mask`, `boxes` and `annotation`"),
        "{e}"
    );

    let e = items("path,mask\na.png,m.png\n").err().unwrap();
    assert!(e.message.contains("lacks the `label` column"), "{e}");
    let e = items("file,label\n").err().unwrap();
    assert!(e.message.contains("unknown column `file`"), "{e}");
    let e = items("label\n0\n").err().unwrap();
    assert!(e.message.contains("lacks the `path` column"), "{e}");
    let e = items("path,label,Path\n").err().unwrap();
    assert!(e.message.contains("more than once"), "{e}");
    let e = items("").err().unwrap();
    assert!(e.message.contains("`path,label`"), "{e}");
}

#[test]
fn an_empty_manifest_or_one_without_rows_fails_at_open() {
    let d = tempfile::tempdir().unwrap();
    for (csv, want) in [
        ("", "manifest is empty"),
        ("\u{feff} \n\n", "manifest is empty"),
        ("path,label\n", "header but no rows"),
        ("path,label\n\n\n", "header but no rows"),
    ] {
        let p = d.path().join("m.csv");
        std::fs::write(&p, csv).unwrap();
        let e = open(&p, &labels()).err().unwrap();
        assert_eq!(e.item, p.display().to_string());
        assert!(e.message.contains(want), "{csv:?}: {e}");
    }
}

#[test]
fn unknown_label_and_empty_path_are_item_errors() {
    let got = items("path,label\na.png,zebra\n,0\nb.png,99\nc.png,1\n").unwrap();
    assert_eq!(got.len(), 4);
    let e = got[0].as_ref().unwrap_err();
    assert_eq!(e.item, Path::new("base/a.png").display().to_string());
    assert_eq!(
        e.message,
        "label `zebra` is not a class of the model/class map; use a class name from the \
             labels file or an index"
    );
    assert_eq!(got[1].as_ref().unwrap_err().item, "m.csv line 3");
    assert!(got[2].as_ref().unwrap_err().message.contains("`99`"));
    assert!(got[3].is_ok());
}

#[test]
fn malformed_row_names_its_line_and_parsing_goes_on() {
    let got = items("path,label\na.png,0\nb.png,0,extra\n\nc.png,1\n").unwrap();
    assert_eq!(got.len(), 3);
    let e = got[1].as_ref().unwrap_err();
    assert_eq!(e.item, "m.csv line 3");
    assert!(e.message.starts_with("malformed CSV row"), "{e}");
    assert_eq!(got[2].as_ref().unwrap().id, "c.png");

    let got = parse(
        b"path,label\n\xff\xfe.png,0\nok.png,0\n",
        Path::new(""),
        &labels(),
        "m",
        &[],
    )
    .unwrap();
    assert_eq!(got[0].as_ref().unwrap_err().item, "m line 2");
    assert!(got[1].is_ok());
}

#[test]
fn end_to_end_with_masks() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write_rgb(&r.join("imgs/a, b.png"), 4, 3, [1, 2, 3]);
    write_gray(&r.join("masks/a.png"), 4, 3, 255);
    write_rgb(&r.join("imgs/c.jpg"), 2, 2, [9, 9, 9]);
    write_npy(
        &r.join("masks/c.npy"),
        "|u1",
        false,
        "(2, 2)",
        &[0, 1, 1, 0],
    );
    write_rgb(&r.join("imgs/d.png"), 5, 5, [0, 0, 0]);
    write_gray(&r.join("masks/small.png"), 2, 2, 255);
    std::fs::write(r.join("imgs/e.png"), b"garbage").unwrap();
    write_rgb(&r.join("imgs/f.png"), 2, 2, [0, 0, 0]);
    std::fs::write(
        r.join("m.csv"),
        "path,label,mask\n\
             \"imgs/a, b.png\",tabby,masks/a.png\n\
             imgs/c.jpg,2,masks/c.npy\n\
             imgs/d.png,0,masks/small.png\n\
             imgs/e.png,0,\n\
             imgs/f.png,,masks/missing.png\n\
             imgs/f.png,,\n",
    )
    .unwrap();
    let mut s = open(&r.join("m.csv"), &labels()).unwrap();
    assert_eq!(s.len_hint(), Some(6));
    assert!(s.describe().starts_with("manifest "), "{}", s.describe());
    let got: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
    assert_eq!(got.len(), 6);

    let a = got[0].as_ref().unwrap();
    assert_eq!(
        (a.id.as_str(), a.seq, a.truth),
        ("imgs/a, b.png", 0, Some(Truth(1)))
    );
    let mask = a.regions.as_ref().unwrap().mask.as_ref().unwrap();
    assert_eq!(mask.dimensions(), (4, 3));
    assert_eq!(mask.get_pixel(3, 2).0, [255]);

    let c = got[1].as_ref().unwrap();
    assert_eq!(c.seq, 1);
    let mask = c.regions.as_ref().unwrap().mask.as_ref().unwrap();
    assert_eq!(mask.as_raw(), &vec![0, 255, 255, 0]);

    let e = got[2].as_ref().unwrap_err();
    assert!(e.message.contains("is 2x2 but image"), "{e}");
    assert!(
        e.message
            .contains("is 5x5; masks must have the image's size"),
        "{e}"
    );

    assert!(
        got[3]
            .as_ref()
            .unwrap_err()
            .message
            .starts_with("cannot decode image")
    );
    assert!(
        got[4]
            .as_ref()
            .unwrap_err()
            .message
            .contains(": cannot read mask (")
    );
    let f = got[5].as_ref().unwrap();
    assert_eq!((f.seq, f.truth), (2, None));
    assert!(f.regions.is_none());
    assert!(s.next_frame().is_none());
}

#[test]
fn header_only_manifest_is_an_open_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("m.csv"), "path,label\n").unwrap();
    let e = open(&dir.path().join("m.csv"), &labels()).err().unwrap();
    assert!(e.message.contains("no rows"), "{e}");
}
