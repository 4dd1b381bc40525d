//! Keyed per-row random streams (`RngKey::stream(row)`), advanced four rows at a time.
//!
//! A xoshiro256++ step depends on the previous one, so a loop drawing from a single generator runs at
//! the latency of that chain (a few cycles per draw), whatever else the loop does. Rows draw from
//! independent streams; advancing four of them in lockstep lets the CPU overlap the four chains. Every
//! row still draws its own stream in element order, so the values are exactly those of processing the
//! rows one by one (and therefore independent of how rows are grouped into tasks or threads).

use crate::rng::{RngKey, ScenarioRng};

/// Calls `f(generator, element)` for every element of every row of `rows` (consecutive rows of
/// `row_len` elements; a trailing partial row is ignored), row `i` drawing from `key.stream(first + i)`
/// in element order — four rows at a time.
pub(crate) fn for_each_row_element<T, F>(
    rows: &mut [T],
    row_len: usize,
    key: RngKey,
    first: u64,
    mut f: F,
) where
    F: FnMut(&mut ScenarioRng, &mut T),
{
    if row_len == 0 {
        return;
    }
    let mut quads = rows.chunks_exact_mut(4 * row_len);
    let mut index = first;
    for quad in quads.by_ref() {
        let mut g = [0, 1, 2, 3].map(|k| key.stream(index + k));
        let (a, rest) = quad.split_at_mut(row_len);
        let (b, rest) = rest.split_at_mut(row_len);
        let (c, d) = rest.split_at_mut(row_len);
        let [ga, gb, gc, gd] = &mut g;
        for (((a, b), c), d) in a.iter_mut().zip(b).zip(c).zip(d) {
            f(ga, a);
            f(gb, b);
            f(gc, c);
            f(gd, d);
        }
        index += 4;
    }
    for row in quads.into_remainder().chunks_exact_mut(row_len) {
        let mut g = key.stream(index);
        for v in row {
            f(&mut g, v);
        }
        index += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn equals_row_by_row_drawing_for_any_row_count() {
        for rows in [0usize, 1, 3, 4, 5, 9] {
            let len = 7;
            let mut got = vec![0u64; rows * len];
            for_each_row_element(&mut got, len, RngKey(3), 10, |r, v| *v = r.random());
            let mut want = vec![0u64; rows * len];
            for (i, row) in want.chunks_exact_mut(len).enumerate() {
                let mut r = RngKey(3).stream(10 + i as u64);
                row.iter_mut().for_each(|v| *v = r.random());
            }
            assert_eq!(got, want, "{rows} rows");
        }
    }
}
