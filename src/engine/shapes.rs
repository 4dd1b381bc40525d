//! The fixed batch sizes an engine runs at, and how a batch of any size is cut or padded to them.
//!
//! An execution provider that tunes per input shape (cuDNN's convolution algorithm search, a
//! TensorRT optimisation profile, ONNX Runtime's memory planning) pays that cost the first time it
//! sees each shape: 0.7–1.4 s per new batch size with cuDNN's exhaustive search on an H100 (measured
//! on the earlier pipeline; BENCHMARKS.md, "Latency and cores"). A stream's partial batches would otherwise present a new shape every few
//! batches. So the engine only ever sees the sizes in [`BatchShapes`], each run once when the
//! session starts ([`crate::engine::Engine::warm_up`]), and a batch of `n` images goes through
//! [`BatchShapes::runs`]:
//!
//! - [`Partial::Pad`] (default on GPUs, where a batch of 8 costs little more than a batch of 5): the
//!   smallest size ≥ `n`, the rows after `n` filled with zeros and their outputs ignored;
//! - [`Partial::Split`] (default on the CPU, where an image costs the same in any batch): the largest
//!   sizes ≤ what is left, e.g. 7 → 4 + 2 + 1, so no arithmetic is wasted on padding.
//!
//! Each image of a batch is computed independently by a classifier in inference mode (batch norm is
//! folded into fixed scales), so neither changes any image's result beyond the few ULPs of a
//! differently blocked matrix product (tested: same top-5, probabilities within 1e-5 on the CPU).

use serde::Deserialize;

/// How a batch that is not one of the sizes is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Partial {
    /// Pad to the smallest size that holds it (zeros; outputs of the padding rows ignored).
    Pad,
    /// Cut into the largest sizes that fit, padding only what the smallest size cannot hold.
    Split,
}

/// One engine call of a batch: `rows` images starting at `start`, run at batch size `shape`
/// (`shape - rows` rows of padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeRun {
    /// First image of the batch in this call.
    pub(crate) start: usize,
    /// Images of the batch in this call.
    pub(crate) rows: usize,
    /// The batch size the engine runs (≥ `rows`).
    pub(crate) shape: usize,
}

/// Batch sizes that cannot be run; the message names `batch_sizes` and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapesError {
    /// No size at all.
    #[error("`batch_sizes` is empty; give at least one size, e.g. [1, 8]")]
    Empty,
    /// A size of 0.
    #[error("`batch_sizes` = {sizes:?} holds 0; sizes are ≥ 1")]
    Zero {
        /// The sizes as given.
        sizes: Vec<usize>,
    },
}

/// The batch sizes an engine runs at (ascending, distinct, ≥ 1) and the rule for other sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchShapes {
    sizes: Vec<usize>,
    partial: Partial,
}

impl BatchShapes {
    /// The given sizes (any order; duplicates removed). Errors when empty or when a size is 0.
    pub(crate) fn new(sizes: &[usize], partial: Partial) -> Result<Self, ShapesError> {
        if sizes.is_empty() {
            return Err(ShapesError::Empty);
        }
        if sizes.contains(&0) {
            return Err(ShapesError::Zero {
                sizes: sizes.to_vec(),
            });
        }
        let mut sizes = sizes.to_vec();
        sizes.sort_unstable();
        sizes.dedup();
        Ok(Self { sizes, partial })
    }

    /// The default sizes for batches of at most `max`: the powers of two below it, and `max`
    /// (8 → 1, 2, 4, 8; 12 → 1, 2, 4, 8, 12).
    pub fn powers_of_two(max: usize, partial: Partial) -> Self {
        let max = max.max(1);
        let mut sizes: Vec<usize> = (0..usize::BITS)
            .map(|b| 1usize << b)
            .take_while(|&s| s < max)
            .collect();
        sizes.push(max);
        Self { sizes, partial }
    }

    /// The sizes, ascending.
    pub(crate) fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The largest size: the most images one call takes.
    pub fn max(&self) -> usize {
        *self.sizes.last().expect("BatchShapes is never empty")
    }

    /// The rule for other sizes.
    pub(crate) fn partial(&self) -> Partial {
        self.partial
    }

    /// The calls that run a batch of `n` images, in order (none for `n = 0`). Batches larger than
    /// [`BatchShapes::max`] are first cut into calls of the largest size.
    pub(crate) fn runs(&self, n: usize) -> Vec<ShapeRun> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < n {
            let left = n - start;
            let shape = if left >= self.max() {
                self.max()
            } else {
                match self.partial {
                    // The smallest size that holds the rest (exists: left < max).
                    Partial::Pad => *self.sizes.iter().find(|&&s| s >= left).unwrap_or(&left),
                    // The largest size that fits, else the smallest (padded).
                    Partial::Split => self
                        .sizes
                        .iter()
                        .rev()
                        .find(|&&s| s <= left)
                        .copied()
                        .unwrap_or(self.sizes[0]),
                }
            };
            let rows = shape.min(left);
            out.push(ShapeRun { start, rows, shape });
            start += rows;
        }
        out
    }

    /// A short description for reports: `1, 2, 4, 8 (split)`.
    pub(crate) fn describe(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(usize::to_string).collect();
        format!(
            "{} ({})",
            sizes.join(", "),
            match self.partial {
                Partial::Pad => "pad",
                Partial::Split => "split",
            }
        )
    }
}

/// The one batch size of a live source's `plan` shape policy (`[engine] live_shapes`,
/// docs/gpu.md#live-shapes): a frame's `variants` cut into the fewest batches of at most
/// `max_batch`, all of one size: ⌈v / ⌈v / max⌉⌉ (96 variants, batches of up to 64 → two of 48;
/// 11 → one of 11; 1 → 1). A frame whose variants the workers finish together then fills whole
/// batches with no padding, and the engine only ever sees this one shape.
pub(crate) fn plan_size(variants: usize, max_batch: usize) -> usize {
    let (v, max) = (variants.max(1), max_batch.max(1));
    let batches = v.div_ceil(max);
    v.div_ceil(batches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_size_cuts_a_frame_into_equal_batches() {
        assert_eq!(plan_size(96, 64), 48);
        assert_eq!(plan_size(96, 96), 96);
        assert_eq!(plan_size(96, 128), 96);
        assert_eq!(plan_size(11, 64), 11);
        assert_eq!(plan_size(11, 8), 6);
        assert_eq!(plan_size(1, 64), 1);
        assert_eq!(plan_size(0, 0), 1);
        for v in 1..200 {
            for max in 1..70 {
                let s = plan_size(v, max);
                assert!(s >= 1 && s <= max, "{v} {max} {s}");
                // No more batches than the fewest that hold the frame at `max`.
                assert_eq!(v.div_ceil(s), v.div_ceil(max), "{v} {max} {s}");
            }
        }
    }

    fn runs(s: &BatchShapes, n: usize) -> Vec<(usize, usize, usize)> {
        s.runs(n)
            .into_iter()
            .map(|r| (r.start, r.rows, r.shape))
            .collect()
    }

    #[test]
    fn powers_of_two_end_at_the_maximum() {
        let s = |m| BatchShapes::powers_of_two(m, Partial::Pad).sizes().to_vec();
        assert_eq!(s(8), [1, 2, 4, 8]);
        assert_eq!(s(12), [1, 2, 4, 8, 12]);
        assert_eq!(s(1), [1]);
        assert_eq!(s(0), [1]);
    }

    #[test]
    fn pad_takes_the_smallest_size_that_holds_the_batch() {
        let s = BatchShapes::new(&[8, 1, 4, 2, 4], Partial::Pad).unwrap();
        assert_eq!(s.sizes(), [1, 2, 4, 8]);
        assert_eq!(runs(&s, 5), [(0, 5, 8)]);
        assert_eq!(runs(&s, 3), [(0, 3, 4)]);
        assert_eq!(runs(&s, 8), [(0, 8, 8)]);
        assert_eq!(runs(&s, 19), [(0, 8, 8), (8, 8, 8), (16, 3, 4)]);
        assert!(runs(&s, 0).is_empty());
        let one = BatchShapes::new(&[32], Partial::Pad).unwrap();
        assert_eq!(runs(&one, 1), [(0, 1, 32)]);
    }

    #[test]
    fn split_cuts_into_sizes_and_pads_only_below_the_smallest() {
        let s = BatchShapes::new(&[1, 2, 4, 8], Partial::Split).unwrap();
        assert_eq!(runs(&s, 7), [(0, 4, 4), (4, 2, 2), (6, 1, 1)]);
        assert_eq!(runs(&s, 8), [(0, 8, 8)]);
        assert_eq!(runs(&s, 13), [(0, 8, 8), (8, 4, 4), (12, 1, 1)]);
        let s = BatchShapes::new(&[4, 16], Partial::Split).unwrap();
        assert_eq!(runs(&s, 6), [(0, 4, 4), (4, 2, 4)]);
        assert_eq!(runs(&s, 3), [(0, 3, 4)]);
    }

    #[test]
    fn every_row_is_run_exactly_once_at_a_listed_size() {
        for partial in [Partial::Pad, Partial::Split] {
            for sizes in [&[1, 2, 4, 8][..], &[3, 5], &[16], &[1, 6, 7]] {
                let s = BatchShapes::new(sizes, partial).unwrap();
                for n in 0..40 {
                    let r = s.runs(n);
                    let mut next = 0;
                    for run in &r {
                        assert_eq!(run.start, next);
                        assert!(run.rows >= 1 && run.rows <= run.shape);
                        assert!(sizes.contains(&run.shape), "{sizes:?} {n} {run:?}");
                        next += run.rows;
                    }
                    assert_eq!(next, n);
                }
            }
        }
    }

    #[test]
    fn bad_sizes_are_one_line() {
        assert!(
            BatchShapes::new(&[], Partial::Pad)
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(
            BatchShapes::new(&[0, 4], Partial::Pad)
                .unwrap_err()
                .to_string()
                .contains("≥ 1")
        );
    }
}
