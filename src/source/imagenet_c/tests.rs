use super::*;
use crate::source::test_util::write_rgb;
use std::path::Path;

fn imagenet_labels() -> LabelSpace {
    LabelSpace::new((0..1000).map(|i| format!("class{i}")).collect())
}

/// `[source]` of an imagenet-c layout at `root`, as written.
fn config(root: &Path, clean: Option<PathBuf>) -> RawSourceConfig {
    let mut c = RawSourceConfig::new(root);
    c.kind = Some(crate::source::SourceKind::ImagenetC);
    c.clean = clean;
    c
}

/// The layout of [`config`] scanned.
fn scan(root: &Path, clean: Option<PathBuf>) -> Result<Layout, SourceError> {
    Layout::scan(root, clean.as_deref())
}

fn drain(s: &mut dyn Source) -> Vec<Result<Frame, SourceError>> {
    std::iter::from_fn(|| s.next_frame()).collect()
}

#[test]
fn wnid_list_is_the_sorted_imagenet_1k_list() {
    let w = wnids();
    assert_eq!(w.len(), 1000);
    assert!(w.windows(2).all(|p| p[0] < p[1]), "sorted and unique");
    assert!(
        w.iter().all(|n| n.len() == 9
            && n.starts_with('n')
            && n[1..].bytes().all(|b| b.is_ascii_digit()))
    );
    assert_eq!(wnid_index("n01440764"), Some(0)); // tench
    assert_eq!(wnid_index("n02123045"), Some(281)); // tabby
    assert_eq!(wnid_index("n07920052"), Some(967)); // espresso
    assert_eq!(wnid_index("n15075141"), Some(999)); // toilet tissue
    assert_eq!(wnid_index("n99999999"), None);
}

#[test]
fn formats_this_build_cannot_decode_are_named_as_skipped() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("ImageNet-C");
    write_rgb(&r.join("fog/3/n07920052/a.JPEG"), 4, 4, [1, 2, 3]);
    std::fs::write(r.join("fog/3/n07920052/b.avif"), "x").unwrap();
    let layout = scan(&r, None).unwrap();
    let mut s = layout
        .open(&["corruption/fog/3"], &imagenet_labels())
        .unwrap();
    assert_eq!(s.len_hint(), Some(2));
    let got: Vec<Result<String, String>> = drain(&mut s)
        .into_iter()
        .map(|f| f.map(|f| f.id).map_err(|e| e.to_string()))
        .collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], Ok("fog/3/n07920052/a.JPEG".to_string()));
    let e = got[1].as_ref().unwrap_err();
    assert!(
        e.contains("b.avif: cannot decode image (.avif files are not decoded")
            && e.ends_with("convert the file to PNG or JPEG"),
        "{e}"
    );
}

#[test]
fn frames_are_stored_variants_with_wnid_truth_in_plan_order() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().join("ImageNet-C");
    write_rgb(&r.join("fog/3/n07920052/b.JPEG"), 4, 4, [1, 2, 3]);
    write_rgb(&r.join("fog/3/n07920052/a.JPEG"), 4, 4, [1, 2, 3]);
    write_rgb(&r.join("fog/1/n01440764/c.png"), 4, 4, [1, 2, 3]);
    write_rgb(&r.join("contrast/5/n15075141/d.png"), 4, 4, [1, 2, 3]);
    std::fs::write(r.join("README.txt"), "ignored").unwrap();
    let clean = d.path().join("val");
    write_rgb(&clean.join("n01440764/e.JPEG"), 4, 4, [1, 2, 3]);
    let layout = scan(&r, Some(clean)).unwrap();
    assert_eq!(
        layout.keys(),
        [
            "clean",
            "corruption/fog/1",
            "corruption/fog/3",
            "corruption/contrast/5"
        ]
    );
    let mut s = layout
        .open(
            &[
                "clean",
                "corruption/fog/3",
                "corruption/fog/1",
                "corruption/snow/2",
            ],
            &imagenet_labels(),
        )
        .unwrap();
    assert_eq!(s.len_hint(), Some(4));
    assert!(
        s.describe().contains("2 corruption variants + clean"),
        "{}",
        s.describe()
    );
    let got: Vec<(String, Option<usize>, Option<String>, u64)> = drain(&mut s)
        .into_iter()
        .map(|f| {
            let f = f.unwrap();
            (f.id, f.truth.map(|t| t.0), f.variant, f.seq)
        })
        .collect();
    let want = [
        ("clean/n01440764/e.JPEG", 0, "clean"),
        ("fog/3/n07920052/a.JPEG", 967, "corruption/fog/3"),
        ("fog/3/n07920052/b.JPEG", 967, "corruption/fog/3"),
        ("fog/1/n01440764/c.png", 0, "corruption/fog/1"),
    ];
    assert_eq!(got.len(), want.len());
    for (i, ((id, truth, variant, seq), (wid, wt, wv))) in got.iter().zip(want).enumerate() {
        assert_eq!(
            (id.as_str(), *truth, variant.as_deref()),
            (wid, Some(wt), Some(wv))
        );
        assert_eq!(*seq, i as u64);
    }
}

#[test]
fn unknown_wnids_and_stray_files_are_skipped_items_naming_the_path() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    write_rgb(&r.join("snow/2/n01440764/ok.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join("snow/2/n00000001/x.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join("snow/2/n00000001/y.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join("snow/2/loose.png"), 2, 2, [0, 0, 0]);
    std::fs::write(r.join("snow/2/n01440764/bad.jpg"), b"not a jpeg").unwrap();
    let mut s = open(r, None, &imagenet_labels()).unwrap();
    assert_eq!(s.len_hint(), Some(5));
    let got = drain(&mut s);
    let msgs: Vec<String> = got
        .iter()
        .map(|f| match f {
            Ok(f) => format!("ok {}", f.id),
            Err(e) => e.to_string(),
        })
        .collect();
    // Stray files first, then wnid folders in sorted order (n00000001 < n01440764).
    assert_eq!(msgs.len(), 5, "{msgs:?}");
    assert!(
        msgs[0].contains("loose.png: is not inside a <wnid> folder"),
        "{msgs:?}"
    );
    for (m, f) in msgs[1..3].iter().zip(["x.png", "y.png"]) {
        assert!(
            m.contains(&format!(
                "n00000001/{f}: its folder `n00000001` is not an ImageNet-1k wnid"
            )),
            "{m}"
        );
    }
    assert!(msgs[3].contains("bad.jpg: cannot decode"), "{msgs:?}");
    assert_eq!(msgs[4], "ok snow/2/n01440764/ok.png");
    // Sequence numbers only for frames that came out.
    assert_eq!(got[4].as_ref().unwrap().seq, 0);
}

#[test]
fn layout_errors_name_the_folder_and_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    write_rgb(&r.join("fog/3/n01440764/a.png"), 2, 2, [0, 0, 0]);
    write_rgb(&r.join("foggy/3/n01440764/a.png"), 2, 2, [0, 0, 0]);
    let e = scan(r, None).unwrap_err();
    assert!(e.item.ends_with("foggy"), "{e}");
    assert!(
        e.message.contains("is not an ImageNet-C corruption folder"),
        "{e}"
    );
    std::fs::remove_dir_all(r.join("foggy")).unwrap();
    for bad in ["6", "03", "severity1"] {
        write_rgb(
            &r.join(format!("fog/{bad}/n01440764/a.png")),
            2,
            2,
            [0, 0, 0],
        );
        let e = scan(r, None).unwrap_err();
        assert!(
            e.item.ends_with(bad) && e.message.contains("is not a severity folder"),
            "{e}"
        );
        std::fs::remove_dir_all(r.join(format!("fog/{bad}"))).unwrap();
    }
    let empty = tempfile::tempdir().unwrap();
    let e = scan(empty.path(), None).unwrap_err();
    assert!(
        e.message
            .contains("holds no <corruption>/<severity> folders"),
        "{e}"
    );
    let e = scan(r, Some(r.join("nope"))).unwrap_err();
    assert!(
        e.item.ends_with("nope") && e.message.contains("cannot list folder"),
        "{e}"
    );
    // The layout's folders without a single image: an error, not an empty run.
    let hollow = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(hollow.path().join("fog/3/n01440764")).unwrap();
    std::fs::create_dir_all(hollow.path().join("snow/1")).unwrap();
    let e = open(hollow.path(), None, &imagenet_labels()).err().unwrap();
    assert_eq!(e.item, hollow.path().display().to_string());
    assert!(
        e.message.starts_with("no images (.jpg .jpeg .png")
            && e.message.contains("(snow/1, fog/3)")
            && e.message.contains("put the images in their wnid folders"),
        "{e}"
    );
}

#[test]
fn open_dispatches_on_the_kind_and_keeps_clean_to_imagenet_c() {
    let d = tempfile::tempdir().unwrap();
    write_rgb(&d.path().join("fog/3/n01440764/a.png"), 2, 2, [0, 0, 0]);
    let c = config(d.path(), None);
    let settled = c.clone().settle().unwrap();
    assert_eq!(settled.input, Input::ImagenetC { clean: None });
    let mut s = crate::source::open(&settled, &imagenet_labels()).unwrap();
    let f = s.next_frame().unwrap().unwrap();
    assert_eq!(f.variant.as_deref(), Some("corruption/fog/3"));
    // `clean` on another kind, and `classes` on this one, are errors naming the key.
    let mut folder = config(d.path(), Some(d.path().to_path_buf()));
    folder.kind = Some(crate::source::SourceKind::Folder);
    let e = folder.settle().err().unwrap();
    assert!(
        e.message
            .contains("`clean` applies to imagenet-c sources only"),
        "{e}"
    );
    let mut classes = c.clone();
    classes.classes = Some(crate::source::ClassOrder::Sorted);
    let e = classes.settle().unwrap_err();
    assert!(e.message.contains("`classes` does not apply"), "{e}");
    // A mask source, a given truth or IN-9's `variations` would be ignored: refused, naming it.
    let mut masked = c.clone();
    masked.plate = Some(crate::source::plate::PlateConfig::default());
    let e = masked.clone().settle().unwrap_err();
    assert!(
        e.message.starts_with("[source.plate] does not apply"),
        "{e}"
    );
    masked.plate = None;
    masked.label = Some("tench".into());
    let e = masked.clone().settle().unwrap_err();
    assert!(e.message.starts_with("`label` does not apply"), "{e}");
    masked.label = None;
    masked.variations = Some(vec!["original".into()]);
    let e = masked.settle().unwrap_err();
    assert!(e.message.starts_with("`variations` does not apply"), "{e}");
    let e = scan(&d.path().join("fog/3/n01440764/a.png"), None).unwrap_err();
    assert!(e.message.starts_with("is not a folder"), "{e}");
    // The kind's TOML name.
    let t: RawSourceConfig = toml::from_str("path = \"x\"\nkind = \"imagenet-c\"").unwrap();
    assert_eq!(t.kind, Some(crate::source::SourceKind::ImagenetC));
    assert_eq!(crate::source::SourceKind::ImagenetC.name(), "imagenet-c");
}

#[test]
fn plans_and_label_spaces_that_cannot_work_are_open_errors() {
    let d = tempfile::tempdir().unwrap();
    write_rgb(&d.path().join("fog/3/n01440764/a.png"), 2, 2, [0, 0, 0]);
    let layout = || scan(d.path(), None).unwrap();
    let e = layout()
        .open(
            &["clean", "corruption/fog/3"],
            &LabelSpace::new(vec!["a".into()]),
        )
        .err()
        .unwrap();
    assert!(e.message.contains("label space has 1 classes"), "{e}");
    let e = layout()
        .open(&["clean", "corruption/fog/2"], &imagenet_labels())
        .err()
        .unwrap();
    assert!(
        e.message
            .contains("holds none of the plan's corruptions (it holds corruption/fog/3)"),
        "{e}"
    );
    let e = layout()
        .open(
            &["clean", "corruption/fog/3", "background/x"],
            &imagenet_labels(),
        )
        .err()
        .unwrap();
    assert!(
        e.message
            .contains("scenario `background/x` cannot come from an imagenet-c source"),
        "{e}"
    );
}
