//! User text quoted in messages, bounded: a header, row field, path, label, key or value
//! that a message repeats is cut to [`MAX`] characters, so a 2,000-column header or a megabyte line
//! cannot turn one error line into 17,000 characters. The first and last characters are kept (the
//! start names what it is, the end of a path is its file name) with `…[N characters cut]…` between,
//! and control characters are escaped so the message stays on one line.
//!
//! Every message that quotes user content goes through [`clip`] (or [`clip_list`] for a list of
//! names, [`clip_path`] for a path).

use std::borrow::Cow;
use std::path::Path;

/// The most characters of user text a message quotes (plus the `…[N characters cut]…` marker).
const MAX: usize = 120;
/// The most characters of a path a message shows: paths are what a user copies to find the file,
/// so they get more room than other text.
pub(crate) const PATH_MAX: usize = 240;
/// The most characters of a list of names ([`clip_list`]): a few names say what kind of mistake it
/// is, the count says how many.
const LIST_MAX: usize = 80;

/// `text` bounded to [`MAX`] characters (see the module docs).
pub(crate) fn clip(text: &str) -> Cow<'_, str> {
    clip_to(text, MAX)
}

/// `text` bounded to `max` characters: unchanged when it fits and has no control character;
/// otherwise control characters escaped (`\n`, `\t`, `\u{1b}`) and, when longer than `max`, its
/// first ⅔ `max` and last ⅓ `max` characters around `…[N characters cut]…`.
pub(crate) fn clip_to(text: &str, max: usize) -> Cow<'_, str> {
    let has_control = text.chars().any(char::is_control);
    // Cheap bound first: a text of at most `max` bytes has at most `max` characters.
    if !has_control && (text.len() <= max || text.chars().count() <= max) {
        return Cow::Borrowed(text);
    }
    let escaped: Cow<'_, str> = match has_control {
        false => Cow::Borrowed(text),
        true => Cow::Owned(
            text.chars()
                .map(|c| match c {
                    c if c.is_control() => c.escape_default().collect(),
                    c => c.to_string(),
                })
                .collect(),
        ),
    };
    let n = escaped.chars().count();
    if n <= max {
        return Cow::Owned(escaped.into_owned());
    }
    let head = max.div_ceil(3) * 2;
    let head = head.min(max);
    let tail = max - head;
    let start: String = escaped.chars().take(head).collect();
    let end: String = escaped.chars().skip(n - tail).collect();
    Cow::Owned(format!(
        "{start}…[{} characters cut]…{end}",
        thousands(n - head - tail)
    ))
}

/// A path as [`Path::display`] shows it, bounded to [`PATH_MAX`] characters like [`clip_to`].
pub(crate) fn clip_path(path: &Path) -> String {
    clip_to(&path.display().to_string(), PATH_MAX).into_owned()
}

/// Names quoted in backticks and joined with `, `, each bounded by [`clip`], as many as fit in
/// [`LIST_MAX`] characters (at least one), then `… and N more`.
pub(crate) fn clip_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    let mut shown = 0usize;
    let mut more = 0usize;
    for item in items {
        if more > 0 {
            more += 1;
            continue;
        }
        let quoted = format!("`{}`", clip(item.as_ref()));
        let sep = if shown == 0 { "" } else { ", " };
        if shown > 0 && out.chars().count() + sep.len() + quoted.chars().count() > LIST_MAX {
            more = 1;
            continue;
        }
        out.push_str(sep);
        out.push_str(&quoted);
        shown += 1;
    }
    if more > 0 {
        out.push_str(&format!(", … and {} more", thousands(more)));
    }
    out
}

/// A message written by a parser that quotes user text in backticks (`` unknown field `…` ``):
/// every backticked span bounded by [`clip`], then the whole line by four times [`MAX`] (a parser
/// may quote in other ways too).
pub(crate) fn clip_backticked(line: &str) -> String {
    let spans: String = line
        .split('`')
        .enumerate()
        .map(|(i, part)| match i % 2 {
            1 => clip(part),
            _ => Cow::Borrowed(part),
        })
        .collect::<Vec<_>>()
        .join("`");
    clip_to(&spans, 4 * MAX).into_owned()
}

/// The name of `names` closest to `item` by edit distance (Levenshtein, in characters), if it is
/// at most 3 edits away: the "did you mean" of an unknown name. Names whose length differs by more
/// than 3 are passed over unmeasured (a megabyte-long item costs nothing); of equally close names
/// the first wins.
pub(crate) fn closest<'a>(item: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let n = item.chars().count();
    names
        .into_iter()
        .filter(|name| n.abs_diff(name.chars().count()) <= 3)
        .map(|name| (edit_distance(item, name), name))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

/// Levenshtein distance between `a` and `b`, in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `n` with thousands separators (`16,880`).
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_name_is_within_three_edits() {
        let names = ["torchvision", "timm", "keras", "keras-tf"];
        assert_eq!(closest("torchvison", names), Some("torchvision"));
        assert_eq!(closest("kerass", names), Some("keras"));
        assert_eq!(closest("keras_tf", names), Some("keras-tf"));
        assert_eq!(closest("pillow", names), None);
        assert_eq!(closest(&"x".repeat(100_000), names), None);
    }

    #[test]
    fn short_text_is_unchanged_and_borrowed() {
        assert!(matches!(clip("espresso"), Cow::Borrowed("espresso")));
        let exact = "é".repeat(MAX);
        assert_eq!(clip(&exact), exact.as_str(), "counted in characters");
        assert_eq!(clip(""), "");
    }

    #[test]
    fn long_text_keeps_its_ends_and_says_how_much_was_cut() {
        let header: String = (0..2000).map(|i| format!("c{i},")).collect();
        let c = clip(&header);
        assert!(c.starts_with("c0,c1,c2,"), "{c}");
        assert!(c.ends_with("c1998,c1999,"), "{c}");
        let cut = header.chars().count() - MAX;
        assert!(
            c.contains(&format!("…[{} characters cut]…", thousands(cut))),
            "{c}"
        );
        assert!(c.chars().count() <= MAX + 30, "{}", c.chars().count());
        // Multi-byte characters are never split.
        let wide = "日本".repeat(500);
        let c = clip(&wide);
        assert!(c.starts_with("日本日本") && c.ends_with("日本"), "{c}");
    }

    #[test]
    fn control_characters_are_escaped_onto_one_line() {
        assert_eq!(clip("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(clip("\u{1b}[31mred"), "\\u{1b}[31mred");
        let long = "x\n".repeat(1000);
        let c = clip(&long);
        assert!(!c.contains('\n') && c.chars().count() <= MAX + 30, "{c}");
    }

    #[test]
    fn lists_show_what_fits_and_count_the_rest() {
        assert_eq!(clip_list(["a", "b"]), "`a`, `b`");
        let names: Vec<String> = (0..2000).map(|i| format!("column{i}")).collect();
        let l = clip_list(&names);
        assert!(l.starts_with("`column0`, `column1`, "), "{l}");
        assert!(l.ends_with(" more"), "{l}");
        assert!(l.chars().count() <= LIST_MAX + 20, "{l}");
        let shown = l.matches('`').count() / 2;
        assert!(
            l.contains(&format!("… and {} more", thousands(2000 - shown))),
            "{l}"
        );
        // One huge name is still shown, clipped.
        let l = clip_list(["y".repeat(10_000)]);
        assert!(l.starts_with("`yyy") && l.chars().count() < MAX + 40, "{l}");
        assert_eq!(clip_list(Vec::<&str>::new()), "");
    }

    #[test]
    fn backticked_spans_are_clipped_and_the_rest_kept() {
        let long = "k".repeat(5000);
        let line = format!("unknown field `{long}`, expected one of `model`, `seed`");
        let c = clip_backticked(&line);
        assert!(c.starts_with("unknown field `kkk"), "{c}");
        assert!(c.ends_with("`, expected one of `model`, `seed`"), "{c}");
        assert!(c.contains("characters cut"), "{c}");
        assert_eq!(clip_backticked("plain `a` text"), "plain `a` text");
        assert!(clip_backticked(&"z".repeat(5000)).chars().count() <= 4 * MAX + 30);
    }

    #[test]
    fn paths_and_numbers() {
        let p = Path::new("/data")
            .join("d".repeat(400))
            .join("frame_0001.png");
        let c = clip_path(&p);
        assert!(
            c.starts_with("/data/ddd") && c.ends_with("/frame_0001.png"),
            "{c}"
        );
        assert!(c.chars().count() <= PATH_MAX + 30, "{c}");
        let short = Path::new("/data/val/n01440764/ILSVRC2012_val_00000293.JPEG");
        assert_eq!(clip_path(short), short.display().to_string());
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(16880), "16,880");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
