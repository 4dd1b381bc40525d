use super::*;
use crate::frame::Frame;
use crate::source::Source;
use crate::source::test_util::{labels, write_rgb};

/// root/espresso/{b.png, a.JPG, notes.txt}, root/tabby cat/c.png, root/loose.png, root/.hidden/x.png
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write_rgb(&r.join("espresso/b.png"), 3, 2, [10, 20, 30]);
    write_rgb(&r.join("espresso/a.JPG"), 3, 2, [200, 200, 200]);
    std::fs::write(r.join("espresso/notes.txt"), "not an image").unwrap();
    write_rgb(&r.join("tabby cat/c.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join("loose.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join(".hidden/x.png"), 2, 2, [0, 0, 0]);
    dir
}

fn drain(s: &mut dyn Source) -> Vec<Frame> {
    std::iter::from_fn(|| s.next_frame())
        .map(|f| f.unwrap())
        .collect()
}

fn ids_and_truth(frames: &[Frame]) -> Vec<(String, Option<usize>)> {
    frames
        .iter()
        .map(|f| (f.id.clone(), f.truth.map(|t| t.0)))
        .collect()
}

#[test]
fn labels_order_resolves_folder_names_and_aliases() {
    let dir = tree();
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    assert_eq!(s.len_hint(), Some(4));
    let frames = drain(&mut s);
    assert_eq!(
        ids_and_truth(&frames),
        vec![
            ("loose.png".to_string(), None),
            ("espresso/a.JPG".to_string(), Some(2)),
            ("espresso/b.png".to_string(), Some(2)),
            ("tabby cat/c.png".to_string(), Some(1)),
        ]
    );
    let seqs: Vec<u64> = frames.iter().map(|f| f.seq).collect();
    assert_eq!(seqs, vec![0, 1, 2, 3]);
    assert_eq!(frames[2].image.get_pixel(0, 0).0, [10, 20, 30]);
    assert_eq!(frames[2].image.dimensions(), (3, 2));
    assert!(
        frames
            .iter()
            .all(|f| f.regions.is_none() && f.decode_ms >= 0.0)
    );
    assert!(
        s.describe().contains("2 classes, 4 images"),
        "{}",
        s.describe()
    );
}

#[test]
fn labels_order_rejects_unknown_folder_at_open() {
    let dir = tree();
    write_rgb(&dir.path().join("n01440364/z.png"), 2, 2, [0, 0, 0]);
    let e = open(dir.path(), &ClassOrder::Labels, &labels())
        .err()
        .unwrap();
    assert!(
        e.message
            .contains("class folder `n01440364` is not a class"),
        "{e}"
    );
    assert!(e.message.contains("classes = \"sorted\""), "{e}");
}

#[test]
fn sorted_order_uses_position_among_sorted_folders() {
    let dir = tree();
    write_rgb(&dir.path().join("aardvark/z.png"), 2, 2, [0, 0, 0]);
    let mut s = open(dir.path(), &ClassOrder::Sorted, &LabelSpace::new(vec![])).unwrap();
    let got = ids_and_truth(&drain(&mut s));
    assert_eq!(
        got,
        vec![
            ("loose.png".to_string(), None),
            ("aardvark/z.png".to_string(), Some(0)),
            ("espresso/a.JPG".to_string(), Some(1)),
            ("espresso/b.png".to_string(), Some(1)),
            ("tabby cat/c.png".to_string(), Some(2)),
        ]
    );
}

#[test]
fn list_order_uses_line_numbers() {
    let dir = tree();
    let list = dir.path().join(".classes.txt");
    std::fs::write(&list, "zebra\ntabby cat\n  espresso  \n").unwrap();
    let mut s = open(dir.path(), &ClassOrder::List(list.clone()), &labels()).unwrap();
    let got = ids_and_truth(&drain(&mut s));
    assert_eq!(got[1], ("espresso/a.JPG".to_string(), Some(2)));
    assert_eq!(got[3], ("tabby cat/c.png".to_string(), Some(1)));

    std::fs::write(&list, "espresso\n").unwrap();
    let e = open(dir.path(), &ClassOrder::List(list.clone()), &labels())
        .err()
        .unwrap();
    assert!(
        e.message
            .contains("class folder `tabby cat` is not in the class list"),
        "{e}"
    );

    let e = open(
        dir.path(),
        &ClassOrder::List(dir.path().join("nope.txt")),
        &labels(),
    )
    .err()
    .unwrap();
    assert!(e.message.starts_with("cannot read class list"), "{e}");
}

#[test]
fn nested_folders_are_searched_with_slash_ids() {
    let dir = tempfile::tempdir().unwrap();
    write_rgb(&dir.path().join("tench/sub/deep.png"), 2, 2, [0, 0, 0]);
    write_rgb(&dir.path().join("tench/top.png"), 2, 2, [0, 0, 0]);
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    let got = ids_and_truth(&drain(&mut s));
    assert_eq!(
        got,
        vec![
            ("tench/top.png".to_string(), Some(0)),
            ("tench/sub/deep.png".to_string(), Some(0)),
        ]
    );
}

#[test]
fn corrupt_image_is_skipped_and_iteration_continues() {
    let dir = tempfile::tempdir().unwrap();
    write_rgb(&dir.path().join("tench/a.png"), 2, 2, [0, 0, 0]);
    std::fs::write(dir.path().join("tench/b.jpg"), b"\xff\xd8garbage").unwrap();
    std::fs::write(dir.path().join("tench/c.png"), b"").unwrap();
    write_rgb(&dir.path().join("tench/d.png"), 2, 2, [0, 0, 0]);
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    let results: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
    assert_eq!(results.len(), 4);
    assert!(results[0].is_ok() && results[3].is_ok());
    let e = results[1].as_ref().unwrap_err();
    assert!(e.item.ends_with("b.jpg"), "{e}");
    assert!(e.message.starts_with("cannot decode image"), "{e}");
    assert!(results[2].is_err());
    assert_eq!(results[3].as_ref().unwrap().seq, 1);
}

#[test]
fn masks_and_annotations_next_to_images_are_attached() {
    use crate::frame::BBox;
    use crate::source::test_util::{write_gray, write_npy};
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("tench");
    write_rgb(&c.join("a.png"), 4, 3, [1, 1, 1]);
    write_gray(&c.join("a.mask.png"), 4, 3, 255);
    std::fs::write(
        c.join("a.xml"),
        "<annotation><size><width>4</width><height>3</height></size><object><name>x</name>\
             <bndbox><xmin>1</xmin><ymin>0</ymin><xmax>2</xmax><ymax>1</ymax></bndbox></object>\
             </annotation>",
    )
    .unwrap();
    write_rgb(&c.join("b.jpg"), 2, 2, [1, 1, 1]);
    write_gray(&c.join("b.mask.png"), 2, 2, 255);
    write_npy(&c.join("b.mask.npy"), "|u1", false, "(2, 2)", &[1; 4]);
    write_rgb(&c.join("c.png"), 2, 2, [1, 1, 1]);
    write_npy(&c.join("c.mask.npy"), "|u1", false, "(2, 2)", &[0, 1, 0, 0]);
    write_gray(&c.join("orphan.mask.png"), 2, 2, 255);
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    // The mask files are not images: a, b, c.
    assert_eq!(s.len_hint(), Some(3));
    let got: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
    let a = got[0].as_ref().unwrap();
    let r = a.regions.as_ref().unwrap();
    assert_eq!(r.mask.as_ref().unwrap().dimensions(), (4, 3));
    assert_eq!(r.boxes, vec![BBox::new(1, 0, 3, 2)]);
    let e = got[1].as_ref().unwrap_err();
    assert!(e.item.ends_with("b.jpg"), "{e}");
    assert!(
        e.message
            .starts_with("has two masks next to it, b.mask.png and b.mask.npy"),
        "{e}"
    );
    let c = got[2].as_ref().unwrap();
    let r = c.regions.as_ref().unwrap();
    assert_eq!(r.mask.as_ref().unwrap().as_raw(), &vec![0, 255, 0, 0]);
    assert!(r.boxes.is_empty());
}

#[test]
fn every_decodable_format_is_listed_and_other_files_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("tench");
    for ext in ["png", "jpg", "webp", "bmp", "gif", "tif", "tiff"] {
        write_rgb(&c.join(format!("a.{ext}")), 3, 2, [9, 9, 9]);
    }
    for other in [
        "notes.txt",
        "list.csv",
        "meta.json",
        "voc.xml",
        "z.mask.png",
        "y.mask.npy",
    ] {
        std::fs::write(c.join(other), "x").unwrap();
    }
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    let ids: Vec<String> = std::iter::from_fn(|| s.next_frame())
        .map(|f| f.unwrap().id)
        .collect();
    assert_eq!(
        ids,
        [
            "tench/a.bmp",
            "tench/a.gif",
            "tench/a.jpg",
            "tench/a.png",
            "tench/a.tif",
            "tench/a.tiff",
            "tench/a.webp"
        ]
    );
}

#[test]
fn formats_this_build_cannot_decode_are_named_as_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let c = dir.path().join("tench");
    write_rgb(&c.join("b.png"), 3, 2, [9, 9, 9]);
    // Named by extension, never read: the content does not matter.
    for name in ["a.heic", "c.AVIF", "d.jxl", "z.mask.avif", ".hidden.heic"] {
        std::fs::write(c.join(name), "x").unwrap();
    }
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    let got: Vec<Result<String, String>> = std::iter::from_fn(|| s.next_frame())
        .map(|f| f.map(|f| f.id).map_err(|e| e.to_string()))
        .collect();
    let list = crate::source::decode::extension_list();
    let skip = |name: &str, ext: &str| {
        Err(format!(
            "{}: cannot decode image (.{ext} files are not decoded by this robustream, which \
                 reads {list}); convert the file to PNG or JPEG",
            c.join(name).display()
        ))
    };
    assert_eq!(
        got,
        [
            skip("a.heic", "heic"),
            Ok("tench/b.png".to_string()),
            skip("c.AVIF", "AVIF"),
            skip("d.jxl", "jxl"),
        ]
    );
    // A folder holding only such files is not "no images": each is named.
    let only = tempfile::tempdir().unwrap();
    std::fs::write(only.path().join("IMG_0001.HEIC"), "x").unwrap();
    let mut s = open(only.path(), &ClassOrder::Labels, &labels()).unwrap();
    let e = s.next_frame().unwrap().unwrap_err();
    assert!(e.item.ends_with("IMG_0001.HEIC"), "{e}");
    assert!(s.next_frame().is_none());
}

#[cfg(unix)]
#[test]
fn links_back_into_the_tree_are_named_not_followed() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path().join("data");
    write_rgb(&r.join("tench/a.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join("loose.png"), 2, 2, [0, 0, 0]);
    symlink(".", r.join("loop")).unwrap();
    symlink("..", r.join("tench/up")).unwrap();
    symlink("../tench", r.join("tench/again")).unwrap();
    // A link out of the tree is followed, once.
    write_rgb(&dir.path().join("outside/b.png"), 2, 2, [0, 0, 0]);
    symlink("../../outside", r.join("tench/ext")).unwrap();
    symlink("../../outside", r.join("tench/ext2")).unwrap();
    let mut s = open(&r, &ClassOrder::Labels, &labels()).unwrap();
    let got: Vec<Result<String, String>> = std::iter::from_fn(|| s.next_frame())
        .map(|f| f.map(|f| f.id).map_err(|e| e.to_string()))
        .collect();
    let ok: Vec<&str> = got.iter().flatten().map(String::as_str).collect();
    assert_eq!(ok, ["loose.png", "tench/a.png", "tench/ext/b.png"]);
    let errs: Vec<&String> = got.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(errs.len(), 4, "{errs:#?}");
    for (e, name) in errs.iter().zip(["loop", "again", "ext2", "up"]) {
        assert!(e.contains(&format!("{name}: is a link to ")), "{e}");
        assert!(e.ends_with("not followed, so its images are read once; remove the link"));
    }
    assert!(errs[0].contains("inside the source folder"), "{}", errs[0]);
    assert!(errs[2].contains("a folder already read"), "{}", errs[2]);
}

#[test]
fn folders_too_deep_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let mut deep = dir.path().join("tench");
    write_rgb(&deep.join("top.png"), 2, 2, [0, 0, 0]);
    for i in 0..MAX_DEPTH {
        deep = deep.join(format!("d{i}"));
    }
    write_rgb(&deep.join("deep.png"), 2, 2, [0, 0, 0]);
    let mut s = open(dir.path(), &ClassOrder::Labels, &labels()).unwrap();
    let got: Vec<_> = std::iter::from_fn(|| s.next_frame()).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().unwrap().id, "tench/top.png");
    let e = got[1].as_ref().unwrap_err();
    assert!(e.item.ends_with(&format!("d{}", MAX_DEPTH - 1)), "{e}");
    assert!(
        e.message.starts_with("is more than 16 folders below"),
        "{e}"
    );
}

#[test]
fn empty_folder_is_an_open_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("readme.txt"), "x").unwrap();
    let e = open(dir.path(), &ClassOrder::Sorted, &labels())
        .err()
        .unwrap();
    assert!(e.message.starts_with("no images (.jpg .jpeg .png"), "{e}");
}

#[test]
fn many_unknown_folders_are_summarised() {
    let names: Vec<String> = (0..7).map(|i| format!("c{i}")).collect();
    let e = class_indices(&names, &ClassOrder::Labels, &labels(), Path::new("r")).unwrap_err();
    assert!(e.message.starts_with("class folders `c0`, `c1`"), "{e}");
    assert!(e.message.contains("(7 in all) are not a class"), "{e}");
}

#[test]
fn a_class_list_that_is_a_device_a_fifo_or_huge_is_refused_with_its_fix() {
    let dir = tree();
    let files = tempfile::tempdir().unwrap();
    let limit = crate::fsread::MAX_TEXT_BYTES;
    for (list, why) in crate::fsread::refused_paths(files.path(), limit) {
        let e = open(dir.path(), &ClassOrder::List(list.clone()), &labels())
            .err()
            .unwrap();
        assert_eq!(e.item, list.display().to_string());
        assert!(
            e.message
                .starts_with(&format!("cannot read class list ({why}"))
                && e.message.ends_with("check `classes` in `[source]`"),
            "{e}"
        );
    }
}

#[test]
fn wordnet_id_folders_are_imagenet_classes_in_a_1000_class_space() {
    let d = tempfile::tempdir().unwrap();
    write_rgb(&d.path().join("n01440764/a.png"), 2, 2, [1, 2, 3]);
    write_rgb(&d.path().join("n02123045/b.png"), 2, 2, [1, 2, 3]);
    // The ImageNet-1k space, written by names that are not the wnids.
    let imagenet = LabelSpace::new((0..1000).map(|i| format!("class {i}")).collect());
    let mut s = open(d.path(), &ClassOrder::Labels, &imagenet).unwrap();
    assert_eq!(
        ids_and_truth(&drain(&mut s)),
        [
            ("n01440764/a.png".to_string(), Some(0)),
            // tabby cat, ImageNet-1k class 281.
            ("n02123045/b.png".to_string(), Some(281)),
        ]
    );
    // In another label space a wnid is no class: the usual refusal, naming the folders.
    let e = open(d.path(), &ClassOrder::Labels, &labels())
        .err()
        .unwrap();
    assert!(e.message.contains("`n01440764`"), "{e}");
}
