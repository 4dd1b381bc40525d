//! `robustream report --format csv`: one row per scenario.

use super::Summary;
use crate::report::format::{csv_field, frac6};

impl Summary {
    /// CSV, one row per scenario: `scenario,n,n_labelled,top1,top1_ci_lo,top1_ci_hi,top5,drop,agreement,flip,flip_excess`;
    /// fractions with 6 decimals, empty where undefined.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "scenario,n,n_labelled,top1,top1_ci_lo,top1_ci_hi,top5,drop,agreement,flip,flip_excess\n",
        );
        for (key, s) in &self.scenarios {
            let ci = s.top1_ci95;
            let fields = [
                csv_field(key),
                s.n.to_string(),
                s.n_labelled.to_string(),
                frac6(s.top1),
                frac6(ci.map(|c| c[0])),
                frac6(ci.map(|c| c[1])),
                frac6(s.top5),
                frac6(s.drop),
                frac6(s.agreement),
                frac6(s.flip),
                frac6(s.flip_excess),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }
}
