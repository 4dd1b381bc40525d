use super::*;
use crate::source::test_util::{labels, write_rgb};
use crate::source::{RawSourceConfig, Source, open};

/// `path` opened as a source with `[source.groups]` = `table` (TOML).
fn open_with(path: &Path, table: &str) -> Result<Box<dyn Source>, SourceError> {
    let mut c = RawSourceConfig::new(path);
    c.groups = Some(toml::from_str(table).unwrap());
    open(&c.settle()?, &labels())
}

/// Every item: the frame id and its groups as `dim=value` joined by `,`, or the error line.
fn drain(mut s: Box<dyn Source>) -> Vec<Result<(String, String), String>> {
    std::iter::from_fn(|| s.next_frame())
        .map(|f| match f {
            Ok(f) => {
                let g: Vec<String> = f.groups.iter().map(|(d, v)| format!("{d}={v}")).collect();
                Ok((f.id, g.join(",")))
            }
            Err(e) => Err(e.to_string()),
        })
        .collect()
}

fn ok(id: &str, groups: &str) -> Result<(String, String), String> {
    Ok((id.to_string(), groups.to_string()))
}

/// A manifest `m.csv` in `dir` with `text`, its images written.
fn manifest(dir: &Path, text: &str) -> PathBuf {
    for line in text.lines().skip(1) {
        let name = line.split(',').next().unwrap();
        write_rgb(&dir.join(name), 2, 2, [1, 2, 3]);
    }
    let m = dir.join("m.csv");
    std::fs::write(&m, text).unwrap();
    m
}

#[test]
fn manifest_columns_are_groups_and_an_empty_cell_is_a_skipped_row() {
    let d = tempfile::tempdir().unwrap();
    let m = manifest(
        d.path(),
        "path,label,Style,line\na.png,tench,apple,1\nb.png,espresso,,2\nc.png,,google,2\n",
    );
    let got = drain(open_with(&m, "columns = [\"style\", \"line\"]").unwrap());
    assert_eq!(got[0], ok("a.png", "line=1,style=apple"));
    let e = got[1].as_ref().unwrap_err();
    assert!(
        e.ends_with(&format!(
            "b.png: the group column `style` is empty on line 3 of {}; give the frame's style \
             or remove the row",
            m.display()
        )),
        "{e}"
    );
    assert_eq!(got[2], ok("c.png", "line=2,style=google"));
    // The skipped row is counted in the shard of its frame id.
    let mut c = RawSourceConfig::new(&m);
    c.groups = Some(toml::from_str("columns = [\"style\", \"line\"]").unwrap());
    let mut s = open(&c.settle().unwrap(), &labels()).unwrap();
    s.next_frame();
    assert_eq!(
        s.next_frame().unwrap().err().unwrap().frame.as_deref(),
        Some("b.png")
    );
    // A group column the header lacks fails the source when it opens.
    let e = open_with(&m, "columns = [\"style\", \"line\", \"camera\"]")
        .err()
        .unwrap();
    assert!(
        e.message.starts_with(
            "manifest has no column `camera`, which `[source.groups] columns` names as a group"
        ),
        "{e}"
    );
    // Without `columns` the group columns are unknown columns, as before (the message stays as
    // it was: a 2,000-column header must still give a short line, tests/cli/bad_input.rs).
    let e = open(&RawSourceConfig::new(&m).settle().unwrap(), &labels())
        .err()
        .unwrap();
    assert!(e.message.contains("unknown columns `Style`, `line`"), "{e}");
}

#[test]
fn folder_levels_below_the_class_folder_and_an_image_above_them_is_skipped() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    write_rgb(&root.join("tench/line1/night/a.png"), 2, 2, [1, 2, 3]);
    write_rgb(&root.join("tench/line2/day/deeper/b.png"), 2, 2, [1, 2, 3]);
    write_rgb(&root.join("espresso/line1/c.png"), 2, 2, [1, 2, 3]);
    let got = drain(open_with(root, "levels = [\"line\", \"shift\"]").unwrap());
    assert_eq!(got.len(), 3, "{got:?}");
    // The class folders in name order: espresso first.
    let e = got[0].as_ref().unwrap_err();
    assert!(
        e.ends_with(
            "c.png: lies 1 folder below its class folder but `[source.groups] levels` names 2 \
             (line, shift); move it into <class>/<line>/<shift>/ or remove `levels`"
        ),
        "{e}"
    );
    assert_eq!(
        got[1],
        ok("tench/line1/night/a.png", "line=line1,shift=night")
    );
    assert_eq!(
        got[2],
        ok("tench/line2/day/deeper/b.png", "line=line2,shift=day")
    );
}

#[test]
fn a_sidecar_by_frame_skips_stray_rows_and_frames_without_a_row() {
    let d = tempfile::tempdir().unwrap();
    let m = manifest(
        d.path(),
        "path,label\na.png,tench\nb.png,tench\nc.png,tench\ne.png,tench\n",
    );
    let side = d.path().join("groups.csv");
    std::fs::write(
        &side,
        "# camera per frame\nframe,camera,shift\na.png,3,night\nzz.png,1,day\nc.png,2,\na.png,4,day\ne.png,1,day\n",
    )
    .unwrap();
    let table = format!("file = {:?}", side.display().to_string());
    let got = drain(open_with(&m, &table).unwrap());
    let shown = side.display().to_string();
    // The rows first: one naming no frame, one repeating a frame.
    assert_eq!(
        got[0],
        Err(format!(
            "{shown}:4: frame `zz.png` is no frame of the source; fix the frame (as the records' \
             `frame` names it) or remove the row"
        ))
    );
    assert_eq!(
        got[1],
        Err(format!(
            "{shown}:6: frame `a.png` has a row already (line 3); keep one"
        ))
    );
    assert_eq!(got[2], ok("a.png", "camera=3,shift=night"));
    let e = got[3].as_ref().unwrap_err();
    assert!(
        e.ends_with(&format!(
            "b.png: has no row in the groups file {shown}; add a row for its frame `b.png`, or \
             remove the frame"
        )),
        "{e}"
    );
    let e = got[4].as_ref().unwrap_err();
    assert!(
        e.ends_with(&format!(
            "c.png: its `shift` is empty in the groups file {shown}:5; give the frame's shift"
        )),
        "{e}"
    );
    assert_eq!(got[5], ok("e.png", "camera=1,shift=day"));
    assert_eq!(got.len(), 6);
}

#[test]
fn a_sidecar_by_path_and_its_header_problems() {
    let d = tempfile::tempdir().unwrap();
    write_rgb(&d.path().join("data/tench/a.png"), 2, 2, [1, 2, 3]);
    let side = d.path().join("groups.csv");
    std::fs::write(&side, "path,camera\n./data/tench/a.png,7\n").unwrap();
    let table = format!("file = {:?}", side.display().to_string());
    let got = drain(open_with(&d.path().join("data"), &table).unwrap());
    assert_eq!(got, [ok("tench/a.png", "camera=7")]);
    for (header, want) in [
        (
            "camera,shift\n",
            "the header needs exactly one of the columns `frame`",
        ),
        (
            "frame,path,camera\n",
            "the header needs exactly one of the columns `frame`",
        ),
        ("frame\n", "the header has no dimension column"),
        ("frame,camera,Camera\n", "the header names `Camera` twice"),
        (
            "frame,two words\n",
            "header: `two words` is not a dimension name",
        ),
    ] {
        std::fs::write(&side, header).unwrap();
        let e = open_with(&d.path().join("data"), &table).err().unwrap();
        assert_eq!(e.kind, SourceErrorKind::Group);
        assert!(e.message.starts_with(want), "{header}: {e}");
    }
    let e = open_with(&d.path().join("data"), "file = \"nope.csv\"")
        .err()
        .unwrap();
    assert!(e.message.starts_with("cannot read the groups file"), "{e}");
    // A dimension the sidecar and the levels both give.
    std::fs::write(&side, "frame,camera\ntench/a.png,1\n").unwrap();
    let both = format!("{table}\nlevels = [\"camera\"]");
    let e = open_with(&d.path().join("data"), &both).err().unwrap();
    assert!(
        e.message.starts_with("the column `camera` is a dimension"),
        "{e}"
    );
}

#[test]
fn names_take_the_first_listed_value_in_the_frame_id() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    for f in [
        "tench/microsoft_small_airplane.png",
        "tench/apple_duck.png",
        "tench/other.png",
    ] {
        write_rgb(&root.join(f), 2, 2, [1, 2, 3]);
    }
    let got = drain(
        open_with(
            root,
            "names = { style = [\"apple\", \"microsoft\"], subtype = [\"small_airplane\", \"duck\"] }",
        )
        .unwrap(),
    );
    assert_eq!(
        got[0],
        ok("tench/apple_duck.png", "style=apple,subtype=duck")
    );
    assert_eq!(
        got[1],
        ok(
            "tench/microsoft_small_airplane.png",
            "style=microsoft,subtype=small_airplane"
        )
    );
    let e = got[2].as_ref().unwrap_err();
    assert!(
        e.ends_with(
            "other.png: its name contains none of the values of `[source.groups] names.style` \
             (`apple`, `microsoft`); add its style to the list, or remove the image"
        ),
        "{e}"
    );
    assert_eq!(got.len(), 3);
}

#[test]
fn references_and_max_values_are_checked_when_the_source_opens() {
    let d = tempfile::tempdir().unwrap();
    let m = manifest(
        d.path(),
        "path,label,style\na.png,tench,apple\nb.png,tench,google\nc.png,tench,microsoft\n",
    );
    assert!(
        open_with(
            &m,
            "columns = [\"style\"]\nreference = { style = \"apple\" }"
        )
        .is_ok()
    );
    let e = open_with(
        &m,
        "columns = [\"style\"]\nreference = { style = \"aple\" }",
    )
    .err()
    .unwrap();
    assert!(
        e.message.ends_with(
            "`[source.groups] reference.style = \"aple\"` is no group of `style` in this source \
             (its groups: `apple`, `google`, `microsoft`); fix the value or remove it"
        ),
        "{e}"
    );
    let e = open_with(&m, "columns = [\"style\"]\nmax_values = 2")
        .err()
        .unwrap();
    assert_eq!(
        e.message,
        "the source has 3 group values (style 3), more than `[source.groups] max_values` = 2, \
         which bounds the summary's groups and the Prometheus series; raise `max_values` or use \
         coarser groups"
    );
    assert_eq!(e.kind, SourceErrorKind::Settings);
    // The description names the dimensions.
    let s = open_with(&m, "columns = [\"style\"]").unwrap();
    assert!(
        s.describe().ends_with("(3 rows), groups style"),
        "{}",
        s.describe()
    );
}

#[test]
fn the_table_is_checked_when_the_config_settles() {
    let refused = |path: &str, table: &str| {
        let mut c = RawSourceConfig::new(path);
        c.groups = Some(toml::from_str(table).unwrap());
        c.settle().err().unwrap().to_string()
    };
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().display().to_string();
    let e = refused("m.csv", "levels = [\"line\"]");
    assert_eq!(
        e,
        "m.csv: `[source.groups] levels` applies to folder sources only but this is a manifest \
         source; use `columns` (manifest columns) or `file`"
    );
    let e = refused(&dir, "columns = [\"line\"]");
    assert!(
        e.contains("`[source.groups] columns` applies to manifest sources only"),
        "{e}"
    );
    let e = refused("clip.mp4", "file = \"g.csv\"");
    assert!(
        e.ends_with(
            "`[source.groups]` applies to folder and manifest sources only but this is a video \
             source; remove `[source.groups]` or give a manifest with group columns"
        ),
        "{e}"
    );
    let e = refused("m.csv", "reference = { style = \"a\" }");
    assert!(e.contains("`[source.groups]` names no groups"), "{e}");
    let e = refused(
        "m.csv",
        "columns = [\"style\"]\nreference = { stlye = \"a\" }",
    );
    assert!(
        e.ends_with(
            "`[source.groups] reference` names `stlye`, which is no group dimension (the \
             dimensions are `style`); fix the name or remove it"
        ),
        "{e}"
    );
    let e = refused("m.csv", "columns = [\"label\"]");
    assert!(
        e.contains("names `label`, a column robustream reads itself"),
        "{e}"
    );
    let e = refused("m.csv", "columns = [\"a\", \"A\"]");
    assert!(e.contains("names the dimension `A` twice"), "{e}");
    let e = refused("m.csv", "columns = [\"a=b\"]");
    assert!(e.contains("`a=b` is not a dimension name"), "{e}");
    let e = refused("m.csv", "columns = [\"a\"]\nmax_values = 0");
    assert!(e.contains("`[source.groups] max_values` is 0"), "{e}");
    let e = refused(&dir, "names = { style = [] }");
    assert!(
        e.contains("`[source.groups] names.style` needs values"),
        "{e}"
    );
    // Unknown keys are refused by the table itself.
    assert!(toml::from_str::<GroupsConfig>("colums = [\"a\"]").is_err());
    let g: GroupsConfig = toml::from_str("columns = [\"a\"]").unwrap();
    assert_eq!(g.max_values, DEFAULT_MAX_VALUES);
}

#[test]
fn a_settled_source_without_groups_prints_as_before() {
    // The run's fingerprint holds this text: a source without groups keeps its fingerprint.
    let s = RawSourceConfig::new("m.csv").settle().unwrap();
    assert_eq!(
        format!("{s:?}"),
        "SourceConfig { path: \"m.csv\", input: Manifest, masks: None, truth: None }"
    );
    let mut c = RawSourceConfig::new("m.csv");
    c.groups = Some(toml::from_str("columns = [\"style\"]").unwrap());
    assert!(format!("{:?}", c.settle().unwrap()).contains("groups: GroupsConfig"));
}
