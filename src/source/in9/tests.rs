use super::*;
use crate::source::test_util::{write_npy, write_rgb};

fn in9_labels() -> LabelSpace {
    in_to_in9().unwrap().classes().clone()
}

/// A small release: original + mixed_rand + only_fg for classes 00 and 08, masks for some.
fn release() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    for (class, stems) in [("00_dog", ["n1_1", "n1_2"]), ("08_fish", ["n8_1", "n8_2"])] {
        for s in stems {
            write_rgb(
                &r.join(format!("original/val/{class}/{s}.png")),
                4,
                3,
                [1, 2, 3],
            );
            write_rgb(
                &r.join(format!("only_fg/val/{class}/{s}.png")),
                4,
                3,
                [4, 5, 6],
            );
            write_rgb(
                &r.join(format!("mixed_rand/val/{class}/fg_{s}_bg_n9_9.png")),
                4,
                3,
                [7, 8, 9],
            );
        }
    }
    write_npy(
        &r.join("fg_mask/val/00_dog/n1_2.npy"),
        "|u1",
        false,
        "(3, 4)",
        &[0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0],
    );
    std::fs::write(r.join("original/val/00_dog/notes.txt"), "x").unwrap();
    d
}

fn drain(s: &mut dyn Source) -> Vec<Result<Frame, SourceError>> {
    std::iter::from_fn(|| s.next_frame()).collect()
}

#[test]
fn class_map_has_the_reference_ranges() {
    let m = in_to_in9().unwrap();
    assert_eq!(m.classes().len(), 9);
    assert_eq!(m.classes().resolve("dog"), Some(0));
    assert_eq!(m.classes().resolve("wheeled vehicle"), Some(2));
    assert_eq!(m.classes().resolve("musical instrument"), Some(6));
    // The ranges of docs/in9.md#classes-and-the-imagenet-mapping: dog 151–170 and 173–268
    // (171–172 unmapped), bird 7–24, 87–100, 127–146, fish 0–6 and 389–397, vehicle 407–408 and
    // 880, instrument 889.
    for (i, want) in [
        (151, Some(0)),
        (170, Some(0)),
        (171, None),
        (172, None),
        (173, Some(0)),
        (268, Some(0)),
        (269, Some(4)),
        (0, Some(8)),
        (6, Some(8)),
        (7, Some(1)),
        (25, None),
        (32, None),
        (33, Some(3)),
        (68, Some(3)),
        (300, Some(5)),
        (326, Some(5)),
        (365, Some(7)),
        (384, Some(7)),
        (389, Some(8)),
        (397, Some(8)),
        (407, Some(2)),
        (880, Some(2)),
        (889, Some(6)),
        (999, None),
    ] {
        assert_eq!(m.map(i), want, "ImageNet class {i}");
    }
    let per_class: Vec<usize> = (0..9)
        .map(|c| (0..1000).filter(|&i| m.map(i) == Some(c)).count())
        .collect();
    assert_eq!(per_class, [116, 52, 42, 36, 35, 27, 26, 20, 16]);
    assert!(m.check_model_classes(1000).is_ok());
}

#[test]
fn names_and_indices() {
    assert_eq!(class_index("00_dog"), Some(0));
    assert_eq!(class_index("02_wheeled vehicle"), Some(2));
    assert_eq!(class_index("08_fish"), Some(8));
    assert_eq!(class_index("09_x"), None);
    assert_eq!(class_index("dog"), None);
    assert_eq!(class_index("0_dog"), None);
    assert_eq!(class_index("00dog"), None);
    assert_eq!(class_index("ü0_x"), None);
    assert_eq!(foreground_stem("fg__bg_x.png"), "fg__bg_x");
    assert_eq!(foreground_stem("a.b.png"), "a.b");
    assert_eq!(variation_key("original"), Some("clean"));
    assert_eq!(variation_key("mixed_same"), Some("background/mixed_same"));
    assert_eq!(variation_key("in9l"), None);
}

#[test]
fn stored_mode_reads_every_variation_image_by_image() {
    let d = release();
    assert!(looks_like_release(d.path()));
    let mut s = open(d.path(), None, &in9_labels()).unwrap();
    assert_eq!(s.len_hint(), Some(12));
    assert!(
        s.describe()
            .contains("(stored: original, only_fg, mixed_rand; 12 images)"),
        "{}",
        s.describe()
    );
    let frames: Vec<Frame> = drain(&mut s).into_iter().map(Result::unwrap).collect();
    let got: Vec<(String, Option<String>, Option<usize>)> = frames
        .iter()
        .map(|f| (f.id.clone(), f.variant.clone(), f.truth.map(|t| t.0)))
        .collect();
    let want = |id: &str, t| {
        ["clean", "background/only_fg", "background/mixed_rand"]
            .map(|k| (id.to_string(), Some(k.to_string()), Some(t)))
            .to_vec()
    };
    let expected: Vec<_> = [
        want("00_dog/n1_1", 0),
        want("00_dog/n1_2", 0),
        want("08_fish/n8_1", 8),
        want("08_fish/n8_2", 8),
    ]
    .concat();
    assert_eq!(got, expected);
    assert_eq!(frames[6].image.get_pixel(0, 0).0, [1, 2, 3]);
    assert_eq!(frames[7].image.get_pixel(0, 0).0, [4, 5, 6]);
    assert_eq!(frames[8].image.get_pixel(0, 0).0, [7, 8, 9]);
    // Stored frames are evaluated as they are: no masks read.
    assert!(frames.iter().all(|f| f.regions.is_none()));
    assert_eq!(
        frames.iter().map(|f| f.seq).collect::<Vec<_>>(),
        (0..12).collect::<Vec<_>>()
    );
    assert_eq!(
        plan_keys(d.path(), None),
        ["clean", "background/only_fg", "background/mixed_rand"]
    );
}

#[test]
fn original_alone_gives_ordinary_frames_with_masks() {
    let d = release();
    let pick = vec!["original".to_string()];
    let mut s = open(d.path(), Some(&pick), &in9_labels()).unwrap();
    assert!(
        s.describe()
            .contains("(original; 4 images, 1 with fg_mask)"),
        "{}",
        s.describe()
    );
    let frames: Vec<Frame> = drain(&mut s).into_iter().map(Result::unwrap).collect();
    assert_eq!(frames.len(), 4);
    assert!(frames.iter().all(|f| f.variant.is_none()));
    let mask = frames[1].regions.as_ref().unwrap().mask.as_ref().unwrap();
    assert_eq!(mask.get_pixel(1, 1).0, [255]);
    assert_eq!(mask.get_pixel(0, 0).0, [0]);
    assert!(
        frames
            .iter()
            .enumerate()
            .all(|(i, f)| (i == 1) == f.regions.is_some())
    );
    assert_eq!(plan_keys(d.path(), Some(&pick)), ["clean"]);
}

#[test]
fn chosen_variations_come_in_canonical_order() {
    let d = release();
    let pick = vec!["mixed_rand".to_string(), "original".to_string()];
    let mut s = open(d.path(), Some(&pick), &in9_labels()).unwrap();
    let keys: Vec<Option<String>> = drain(&mut s)
        .into_iter()
        .map(|f| f.unwrap().variant)
        .collect();
    assert_eq!(keys.len(), 8);
    assert_eq!(keys[0].as_deref(), Some("clean"));
    assert_eq!(keys[1].as_deref(), Some("background/mixed_rand"));
    assert_eq!(
        plan_keys(d.path(), Some(&pick)),
        ["clean", "background/mixed_rand"]
    );
}

#[test]
fn layout_problems_fail_at_open_and_name_the_fix() {
    let d = release();
    let e = open(d.path(), None, &LabelSpace::new(vec!["a".into(); 1000]))
        .err()
        .unwrap();
    assert!(e.message.contains("configs/in_to_in9.json"), "{e}");
    let e = open(d.path(), Some(&["in9l".to_string()]), &in9_labels())
        .err()
        .unwrap();
    assert!(e.message.contains("`in9l`, not an IN-9 variation"), "{e}");
    let e = open(d.path(), Some(&["no_fg".to_string()]), &in9_labels())
        .err()
        .unwrap();
    assert!(e.item.ends_with("val"), "{e}");
    assert!(e.message.contains("variation `no_fg` was asked for"), "{e}");
    let empty = tempfile::tempdir().unwrap();
    let e = open(empty.path(), None, &in9_labels()).err().unwrap();
    assert!(e.message.starts_with("no IN-9 variation folder"), "{e}");
    assert!(!looks_like_release(empty.path()));
    std::fs::create_dir_all(d.path().join("only_fg/val/dog")).unwrap();
    let e = open(d.path(), None, &in9_labels()).err().unwrap();
    assert!(e.item.ends_with("dog"), "{e}");
    assert!(e.message.contains("not an IN-9 class folder"), "{e}");
    // The layout without a single image: an error naming what was looked for.
    let hollow = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(hollow.path().join("original/val/00_dog")).unwrap();
    let e = open(hollow.path(), None, &in9_labels()).err().unwrap();
    assert!(
        e.message.starts_with("no images (.jpg .jpeg .png")
            && e.message.contains("variations read (original)"),
        "{e}"
    );
}

#[test]
fn duplicate_image_and_bad_mask_are_item_errors() {
    let d = release();
    let r = d.path();
    write_rgb(&r.join("original/val/08_fish/n8_1.JPEG"), 4, 3, [0, 0, 0]);
    // A mask of the wrong size.
    write_npy(
        &r.join("fg_mask/val/08_fish/n8_2.npy"),
        "|u1",
        false,
        "(2, 2)",
        &[1, 0, 0, 1],
    );
    let pick = vec!["original".to_string()];
    let mut s = open(r, Some(&pick), &in9_labels()).unwrap();
    let got = drain(&mut s);
    assert_eq!(got.len(), 4);
    let e = got[2].as_ref().err().unwrap();
    assert!(
        e.message
            .contains("2 images of variation `original` are image `08_fish/n8_1`"),
        "{e}"
    );
    let e = got[3].as_ref().err().unwrap();
    assert!(e.message.contains("is 2x2 but image"), "{e}");
    assert!(got[0].is_ok() && got[1].is_ok());
}
