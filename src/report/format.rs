//! How numbers and tables are written in the text renderings (the terminal table, `summary.md`,
//! `compare`'s table): percentages, fixed decimals, Markdown cells and tables, aligned columns.
//! The HTML page has its own (`html/svg.rs`: `71.4 %`, `—`).

use std::fmt::Write as _;

/// Shown for an undefined value.
pub(crate) const NONE: &str = "–";

/// A fraction as a percentage with one decimal (`71.4%`), or `–`.
pub(crate) fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{:.1}%", v * 100.0))
}

/// A number with `decimals` decimals (sign shown for negatives only), or `–`.
pub(crate) fn num(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| NONE.to_string(), |v| format!("{v:.decimals$}"))
}

/// A fraction with 6 decimals, or empty (CSV).
pub(crate) fn frac6(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// Text safe inside a Markdown table cell or list item: `|` escaped, line breaks as spaces.
pub(crate) fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Lines as a Markdown list, one `- ` item per line (each escaped with [`md_cell`]).
pub(crate) fn md_list(lines: &str) -> String {
    let mut out = String::new();
    for line in lines.lines() {
        let _ = writeln!(out, "- {}", md_cell(line));
    }
    out
}

/// A CSV field, quoted (RFC 4180) when it holds a comma, quote or line break.
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// `rows` as aligned plain text: the first column left-aligned, the others right-aligned, two
/// spaces apart, a rule of `-` under the first row (the header); trailing spaces trimmed.
pub(crate) fn aligned(rows: &[Vec<String>]) -> String {
    let widths = column_widths(rows);
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (j, (cell, w)) in row.iter().zip(&widths).enumerate() {
            if j == 0 {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 {
            let total = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// Widths of each column in characters.
fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..cols)
        .map(|j| {
            rows.iter()
                .filter_map(|r| r.get(j))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// A Markdown table from rows (the first is the header); first column left-aligned, others right.
pub(crate) fn md_table(rows: &[Vec<String>]) -> String {
    // At least 3 wide, so the alignment rule (`:--`, `--:`) fits.
    let widths: Vec<usize> = column_widths(rows).into_iter().map(|w| w.max(3)).collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(j, (c, w))| {
                if j == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let rule: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(j, w)| {
                    let dashes = "-".repeat(w - 1);
                    if j == 0 {
                        format!(":{dashes}")
                    } else {
                        format!("{dashes}:")
                    }
                })
                .collect();
            let _ = writeln!(out, "| {} |", rule.join(" | "));
        }
    }
    out
}
