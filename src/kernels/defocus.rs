//! The defocus blur's filter (docs/imagenet-c.md#h2-disk-kernel): imagecorruptions' anti-aliased
//! disk kernel and its correlation with an image, computed band by band from integer prefix sums
//! of the disk's runs.

use rayon::prelude::*;

use super::filter::{Border, border_index};
use super::gaussian::{opencv_gaussian_kernel, symmetric_pass};

/// The ingredients of the defocus disk (docs/imagenet-c.md#h2-disk-kernel) before its final f32
/// rounding.
struct Disk {
    /// The support is `−half..=half` on both axes.
    half: usize,
    /// The disk radius r.
    radius: usize,
    /// The value of every disk tap: `1/count`, rounded to f32 as the reference's float32 array.
    value: f64,
    /// OpenCV's anti-alias Gaussian (3 or 5 taps), rounded to f32.
    g: Vec<f64>,
    /// The blurred kernel, row-major `(2·half + 1)²`, in f64 before rounding to f32.
    kernel: Vec<f64>,
}

/// Half-width of row (or column) `offset` of the disk of `radius`: the largest w with
/// w² + offset² ≤ radius², or `None` where the row is empty (|offset| > radius).
fn disk_run(radius: usize, offset: isize) -> Option<usize> {
    let (r2, o2) = ((radius * radius) as isize, offset * offset);
    (o2 <= r2).then(|| {
        (0..=radius)
            .rev()
            .find(|&w| (w * w) as isize + o2 <= r2)
            .unwrap_or(0)
    })
}

/// Builds [`Disk`]: 1 where x² + y² ≤ r² on the support, divided by the count and rounded to f32,
/// then OpenCV `GaussianBlur` (columns, then rows; taps added in order in f64; reflect-101 border).
fn disk_parts(radius: usize, alias_blur: f64) -> Disk {
    let (half, ksize) = if radius <= 8 { (8, 3) } else { (radius, 5) };
    let n = 2 * half + 1;
    let r2 = (radius * radius) as isize;
    let inside = |i: usize| {
        let (y, x) = (
            (i / n) as isize - half as isize,
            (i % n) as isize - half as isize,
        );
        x * x + y * y <= r2
    };
    let count = (0..n * n).filter(|&i| inside(i)).count() as f64;
    let value = f64::from((1.0 / count) as f32);
    let disk: Vec<f64> = (0..n * n)
        .map(|i| if inside(i) { value } else { 0.0 })
        .collect();
    let g: Vec<f64> = opencv_gaussian_kernel(ksize, alias_blur)
        .iter()
        .map(|&v| f64::from(v as f32))
        .collect();
    let gr = (ksize / 2) as isize;
    let at = |i: isize| border_index(i, n, Border::Reflect101);
    let mut cols = vec![0.0; n * n];
    for y in 0..n {
        for x in 0..n {
            let mut acc = 0.0;
            for (j, &w) in g.iter().enumerate() {
                acc += w * disk[at(y as isize + j as isize - gr) * n + x];
            }
            cols[y * n + x] = acc;
        }
    }
    let mut kernel = vec![0.0; n * n];
    for y in 0..n {
        for x in 0..n {
            let mut acc = 0.0;
            for (j, &w) in g.iter().enumerate() {
                acc += w * cols[y * n + at(x as isize + j as isize - gr)];
            }
            kernel[y * n + x] = acc;
        }
    }
    Disk {
        half,
        radius,
        value,
        g,
        kernel,
    }
}

/// The anti-aliased disk of defocus_blur (docs/imagenet-c.md#h2-disk-kernel), as a square row-major
/// kernel and its side.
///
/// Support −8..8 (17×17) for radius ≤ 8, else −r..r; 1 where x² + y² ≤ r², divided by the count; then
/// blurred with OpenCV `GaussianBlur` (3×3 for r ≤ 8, 5×5 above; σ = `alias_blur`; border
/// reflect-101) and **not** renormalised: at radius 8 and 10 the disk touches its support's edge and the
/// reflected border adds mass, so those kernels sum to 1.012975 and 1.010786
/// (docs/imagenet-c.md#defocus_blur). The reference holds the kernel in float32; so does this
/// (values rounded to f32, returned as f64).
pub(crate) fn disk_kernel(radius: usize, alias_blur: f64) -> (Vec<f64>, usize) {
    let d = disk_parts(radius, alias_blur);
    (
        d.kernel.iter().map(|&v| f64::from(v as f32)).collect(),
        2 * d.half + 1,
    )
}

/// How the anti-alias blur of the disk departs, near the support's edges, from a plain convolution:
/// `Δ(b, b′)` = (the reflect-101, cropped 1-D blur) − (the unbounded 1-D blur), for output offset b
/// (|b| ≤ half + gr) and input offset b′ (|b′| ≤ half). Returned as `(b, b′, Δ)` for Δ ≠ 0; the
/// same on both axes.
fn edge_terms(half: usize, g: &[f64]) -> Vec<(isize, isize, f64)> {
    let gr = (g.len() / 2) as isize;
    let (h, n) = (half as isize, 2 * half + 1);
    let mut terms = Vec::new();
    for b in -h - gr..=h + gr {
        for bp in -h..=h {
            let plain = if (b - bp).abs() <= gr {
                g[(b - bp + gr) as usize]
            } else {
                0.0
            };
            let bounded: f64 = if b.abs() <= h {
                (-gr..=gr)
                    .filter(|&k| border_index(b + k + h, n, Border::Reflect101) as isize - h == bp)
                    .map(|k| g[(k + gr) as usize])
                    .sum()
            } else {
                0.0
            };
            if bounded != plain {
                terms.push((b, bp, bounded - plain));
            }
        }
    }
    terms
}

/// Whether some pixel of the disk of `radius` lies near two edges of its support at once (its row
/// and its column both appear as input offsets b′ of `departures`), which [`defocus_filter`]'s
/// decomposition does not handle. Never the case: for r ≤ 8 (support ±8, blur radius 1) such a pixel
/// would have |x|, |y| ≥ 7, i.e. x² + y² ≥ 98 > 64; for r > 8 (support ±r, blur radius 2),
/// 2·(r − 2)² > r² for every r ≥ 7.
fn touches_two_edges(radius: usize, departures: &[(isize, isize, f64)]) -> bool {
    let near_edge = |o: isize| departures.iter().any(|t| t.1 == o);
    let r = radius as isize;
    (-r..=r).any(|a| {
        near_edge(a)
            && disk_run(radius, a).is_some_and(|w| (-(w as isize)..=w as isize).any(near_edge))
    })
}

/// OpenCV `filter2D(x/255, -1, disk_kernel(radius, alias_blur))` (correlation, reflect-101 border)
/// of an interleaved u8 image, each result passed through `store` — defocus_blur
/// (docs/imagenet-c.md#defocus_blur, docs/imagenet-c.md#h2-disk-kernel) in O(radius) instead of
/// O(radius²) operations per pixel.
///
/// The kernel is `R_y·D·R_xᵀ`: the uniform disk D (value c) blurred on each axis by the small
/// Gaussian g with the kernel-support border (R = the unbounded blur T plus the edge departures Δ of
/// [`edge_terms`]). Correlating an image with it therefore equals, exactly in real arithmetic,
/// `c·[G(S) + G_y(C_R) + G_x(C_T)]` on the reflect-101-padded image, where S is the image's disk sum
/// (per disk column, a run sum from two column prefix sums: exact integers), C_R = Σ Δ(b, b′)·(the
/// vertical run of disk column b′, shifted by b) and C_T the same along rows (the Δ·D·Δ term is
/// empty: no disk pixel is near two support edges, see [`touches_two_edges`]). The Δ that are equal
/// up to rounding (all are ±g₁ or ±g₂) are applied once per group to exact integer sums. Where the
/// reference rounds its kernel to f32, the result is scaled by Σ(f32 kernel)/Σ(f64 kernel): flat
/// regions then get exactly the reference's `x·Σkernel` (e.g. 254.99999… → 254 at severities 1–3);
/// elsewhere the f32 rounding of individual taps moves a value by at most their summed rounding
/// (< 2e−7, i.e. 5e−5 grey levels; about 1e−9 on natural images, where the roundings cancel).
/// Bands of rows run in parallel; every output is computed the same way whatever the thread count.
pub(crate) fn defocus_filter<U, F>(
    data: &[u8],
    dims: (usize, usize, usize),
    radius: usize,
    alias_blur: f64,
    store: F,
) -> Vec<U>
where
    U: Copy + Default + Send,
    F: Fn(f64) -> U + Sync,
{
    let (width, height, channels) = dims;
    assert_eq!(data.len(), width * height * channels, "buffer size");
    let row_len = width * channels;
    if row_len == 0 || height == 0 {
        return Vec::new();
    }
    let d = disk_parts(radius, alias_blur);
    let run = |o: isize| disk_run(d.radius, o);
    let departures = edge_terms(d.half, &d.g);
    // Edge departures that touch a non-empty disk column: (output offset, run half-height, Δ).
    let edges: Vec<(isize, usize, f64)> = departures
        .iter()
        .filter_map(|&(b, bp, delta)| run(bp).map(|h| (b, h, delta)))
        .collect();
    debug_assert!(
        !touches_two_edges(d.radius, &departures),
        "no disk pixel is near two support edges"
    );
    let kernel32: f64 = d.kernel.iter().map(|&v| f64::from(v as f32)).sum();
    let kernel64: f64 = d.kernel.iter().sum();
    let r = d.radius as isize;
    let plan = DiskPlan {
        width,
        height,
        channels,
        half: d.half,
        gr: d.g.len() / 2,
        radius: d.radius,
        runs: (-r..=r).map(|o| run(o).unwrap_or(0)).collect(),
        g: d.g.clone(),
        edge_groups: {
            let mut groups: EdgeGroups = Vec::new();
            for &(b, run, delta) in &edges {
                let m = delta.abs();
                match groups.iter_mut().find(|g| (g.0 - m).abs() <= 1e-12 * g.0) {
                    Some(g) => g.1.push((b, run, delta < 0.0)),
                    None => groups.push((m, vec![(b, run, delta < 0.0)])),
                }
            }
            groups
        },
        factor: d.value * (kernel32 / kernel64) / 255.0,
        hruns: {
            let mut runs: Vec<usize> = edges.iter().map(|e| e.1).filter(|&w| w > 0).collect();
            runs.sort_unstable();
            runs.dedup();
            runs
        },
        border_columns: {
            let pad = d.half + d.g.len() / 2;
            (0..pad)
                .chain(pad + width..2 * pad + width)
                .map(|px| {
                    let x = border_index(px as isize - pad as isize, width, Border::Reflect101);
                    (px, x)
                })
                .collect()
        },
    };
    // At least DISK_BAND_ROWS rows and an eighth of the frame (fewer halos); results do not depend
    // on the band size.
    let band = DISK_BAND_ROWS.max(height.div_ceil(8));
    let mut out = vec![U::default(); row_len * height];
    out.par_chunks_mut(row_len * band)
        .enumerate()
        .for_each(|(t, rows)| {
            DISK_SCRATCH.with(|scratch| {
                // No borrow is live here already: `band` makes no rayon calls, so this thread
                // cannot start another band inside it.
                let mut scratch = scratch.borrow_mut();
                plan.band(data, t * band, rows, &mut scratch, &store)
            })
        });
    out
}

thread_local! {
    /// [`defocus_filter`]'s buffers, kept per thread across calls: fresh ones per call were
    /// megabytes of new pages each time (at 1280×720 severity 5 ~42 ms per call against ~15 ms with
    /// reused memory, 1 thread). They stay allocated (the largest frame's size) on every thread that
    /// ran a band; `band` resizes them and never reads what it did not write in the same band.
    static DISK_SCRATCH: std::cell::RefCell<DiskScratch> =
        std::cell::RefCell::new(DiskScratch::default());
}

/// Least output rows per rayon task of [`defocus_filter`] (the halo of a band is 2·(r + gr) rows).
const DISK_BAND_ROWS: usize = 32;

/// Edge departures of [`defocus_filter`] grouped by |Δ|: `(|Δ|, [(offset, run half-width, Δ < 0)])`.
type EdgeGroups = Vec<(f64, Vec<(isize, usize, bool)>)>;

/// Everything [`defocus_filter`] needs per band, fixed per call.
struct DiskPlan {
    width: usize,
    height: usize,
    channels: usize,
    half: usize,
    gr: usize,
    radius: usize,
    /// Half-width of disk row (= column) `o`, at index `o + radius`.
    runs: Vec<usize>,
    g: Vec<f64>,
    /// The edge departures grouped by |Δ| (equal up to rounding): `(|Δ|, [(b, h, Δ < 0)])`: ±|Δ|
    /// times the run of half-height h at offset b (see [`edge_terms`]), on both axes.
    edge_groups: EdgeGroups,
    /// `c · Σ(f32 kernel)/Σ(f64 kernel) / 255`.
    factor: f64,
    /// (padded column, image column) of the padding columns (reflect-101).
    border_columns: Vec<(usize, usize)>,
    /// The distinct non-zero run half-widths among `edges` (cached per band for C_T).
    hruns: Vec<usize>,
}

/// Per-thread buffers of [`defocus_filter`], reused across bands and calls ([`DISK_SCRATCH`]).
#[derive(Default)]
struct DiskScratch {
    /// Padded input rows of the band (i32).
    rows: Vec<i32>,
    /// Column prefix sums of `rows` (one more row).
    prefix: Vec<i32>,
    /// One f64 row of the disk sums S, then of C_T.
    line: Vec<f64>,
    /// G_x(S) + C_R for the band's rows and gr rows either side.
    u: Vec<f64>,
    /// One f64 output row.
    acc: Vec<f64>,
    /// G_x(C_T) of one output row.
    ct: Vec<f64>,
    /// Horizontal run sums of the band rows, per run half-width of `DiskPlan::hruns`.
    hsums: Vec<i32>,
}

impl DiskPlan {
    crate::kernels::multiversion! {
        /// Computes output rows `y0..y0 + rows.len()/row_len` into `rows`: [`DiskPlan::band_body`]
        /// compiled for AVX-512F or AVX2 where the CPU has it, else portable (integer sums are
        /// exact and the float operations are the same in every version: identical results).
        fn band[U: Copy, F: Fn(f64) -> U](
            &self,
            data: &[u8],
            y0: usize,
            rows: &mut [U],
            s: &mut DiskScratch,
            store: &F,
        );
        /// [`DiskPlan::band_body`] compiled for AVX-512F.
        band_avx512 ["avx512f"] => Self::band_body;
        /// [`DiskPlan::band_body`] compiled for AVX2.
        band_avx2 ["avx2"] => Self::band_body;
        _ => Self::band_body;
        levels band_at;
    }

    /// The body of [`DiskPlan::band`], in the band's steps: pad the band's input rows, their
    /// column prefix sums, the horizontal run sums C_T reads, U = G_x(S) + C_R per row, then the
    /// output rows (G_y of U, plus G_x(C_T) when the disk has edge terms). Every step is
    /// `#[inline(always)]` so that it is compiled into each of [`DiskPlan::band`]'s versions.
    #[inline(always)]
    fn band_body<U: Copy, F: Fn(f64) -> U>(
        &self,
        data: &[u8],
        y0: usize,
        rows: &mut [U],
        s: &mut DiskScratch,
        store: &F,
    ) {
        let ch = self.channels;
        let pad = self.half + self.gr;
        let row_len = self.width * ch;
        let out_rows = rows.len() / row_len;
        let d = BandDims {
            pw: (self.width + 2 * pad) * ch,
            row_len,
            sw: (self.width + 2 * self.gr) * ch,
            out_rows,
            nrows: out_rows + 2 * (self.gr + self.radius),
        };
        self.padded_rows(data, y0, d, s);
        prefix_sums(d, s);
        self.run_sums(d, s);
        self.vertical_pass(d, s);
        self.output_rows(rows, d, s, store);
    }

    /// Fills `s.rows` with the band's input rows as i32: band row k is image row
    /// y0 + k − r − gr (reflect-101), padded by `half + gr` reflect-101 columns either side.
    #[inline(always)]
    fn padded_rows(&self, data: &[u8], y0: usize, d: BandDims, s: &mut DiskScratch) {
        let ch = self.channels;
        let (h, r, gr) = (self.height, self.radius, self.gr);
        let pad = self.half + gr;
        let (pw, row_len) = (d.pw, d.row_len);
        s.rows.resize(d.nrows * pw, 0);
        for (k, dst) in s.rows.chunks_exact_mut(pw).enumerate() {
            let y = border_index(
                y0 as isize + k as isize - (r + gr) as isize,
                h,
                Border::Reflect101,
            );
            let src = &data[y * row_len..(y + 1) * row_len];
            for (v, &sv) in dst[pad * ch..pad * ch + row_len].iter_mut().zip(src) {
                *v = i32::from(sv);
            }
            for &(px, x) in &self.border_columns {
                for c in 0..ch {
                    dst[px * ch + c] = i32::from(src[x * ch + c]);
                }
            }
        }
    }

    /// Horizontal run sums of half-width w (each of `hruns`) of every band row into `s.hsums`, for
    /// C_T (cached per band: many edge terms share a run).
    #[inline(always)]
    fn run_sums(&self, d: BandDims, s: &mut DiskScratch) {
        let ch = self.channels;
        let (pw, nrows, sw) = (d.pw, d.nrows, d.sw);
        s.hsums.resize(self.hruns.len() * nrows * sw, 0);
        for (i, &run) in self.hruns.iter().enumerate() {
            let first = (self.half - run) * ch;
            for k in 0..nrows {
                let row = &s.rows[k * pw..(k + 1) * pw];
                let terms: Vec<IntTerm> = (0..=2 * run)
                    .map(|j| IntTerm::plain(&row[first + j * ch..first + j * ch + sw]))
                    .collect();
                let dst = &mut s.hsums[(i * nrows + k) * sw..(i * nrows + k + 1) * sw];
                sum_terms::<64>(dst, &terms);
            }
        }
    }

    /// `s.u` = G_x(S) + C_R for image rows y0 − gr .. y0 + out_rows + gr: the disk sums S and the
    /// vertical edge terms C_R, both read off the prefix sums (exact integers).
    #[inline(always)]
    fn vertical_pass(&self, d: BandDims, s: &mut DiskScratch) {
        let ch = self.channels;
        let (half, gr, r) = (self.half, self.gr, self.radius);
        let pad = half + gr;
        let (pw, row_len, sw) = (d.pw, d.row_len, d.sw);
        let prefix_row = |k: usize| &s.prefix[k * pw..(k + 1) * pw];
        let su = d.out_rows + 2 * gr;
        s.u.resize(su * row_len, 0.0);
        s.line.resize(sw, 0.0);
        for (ys, urow) in s.u.chunks_exact_mut(row_len).enumerate() {
            let kc = ys + r;
            // S: per disk row, the run sum from two prefix rows (exact integers).
            let disk: Vec<IntTerm> = self
                .runs
                .iter()
                .enumerate()
                .map(|(i, &run)| {
                    let b = (half + i - r) * ch;
                    IntTerm::diff(
                        false,
                        &prefix_row(kc + run + 1)[b..b + sw],
                        &prefix_row(kc - run)[b..b + sw],
                    )
                })
                .collect();
            let line = &mut s.line[..];
            line.fill(0.0);
            add_groups::<32>(line, &[(1.0, disk)]);
            blur_small(urow, line, &self.g, ch);
            // C_R: Δ times vertical runs (prefix differences) at column offset b.
            let groups: Vec<(f64, Vec<IntTerm>)> = self
                .edge_groups
                .iter()
                .map(|(weight, terms)| {
                    let terms = terms
                        .iter()
                        .map(|&(b, run, neg)| {
                            let start = (pad as isize + b) as usize * ch;
                            IntTerm::diff(
                                neg,
                                &prefix_row(kc + run + 1)[start..start + row_len],
                                &prefix_row(kc - run)[start..start + row_len],
                            )
                        })
                        .collect();
                    (*weight, terms)
                })
                .collect();
            add_groups::<32>(urow, &groups);
        }
    }

    /// The band's output rows: G_y of `s.u`, plus G_x(C_T) when the disk has edge terms, scaled by
    /// `factor` and stored through `store`.
    #[inline(always)]
    fn output_rows<U: Copy, F: Fn(f64) -> U>(
        &self,
        rows: &mut [U],
        d: BandDims,
        s: &mut DiskScratch,
        store: &F,
    ) {
        let ch = self.channels;
        let (half, gr, r) = (self.half, self.gr, self.radius);
        let (pw, row_len, sw, nrows) = (d.pw, d.row_len, d.sw, d.nrows);
        s.acc.resize(row_len, 0.0);
        s.ct.resize(row_len, 0.0);
        for (yo, orow) in rows.chunks_exact_mut(row_len).enumerate() {
            let acc = &mut s.acc[..];
            let urow = |k: usize| &s.u[(yo + k) * row_len..(yo + k + 1) * row_len];
            let pairs: Vec<(f64, &[f64], &[f64])> = (1..=gr)
                .map(|j| (self.g[gr + j], urow(gr - j), urow(gr + j)))
                .collect();
            symmetric_pass(acc, self.g[gr], urow(gr), &pairs);
            if !self.edge_groups.is_empty() {
                // C_T over columns −gr .. w + gr: Δ times horizontal runs (cached per band row)
                // at row offset a; then G_x.
                let groups: Vec<(f64, Vec<IntTerm>)> = self
                    .edge_groups
                    .iter()
                    .map(|(weight, terms)| {
                        let terms = terms
                            .iter()
                            .map(|&(a, run, neg)| {
                                let k = (yo as isize + a + (r + gr) as isize) as usize;
                                let src = match self.hruns.iter().position(|&w| w == run) {
                                    Some(i) => {
                                        &s.hsums[(i * nrows + k) * sw..(i * nrows + k + 1) * sw]
                                    }
                                    None => &s.rows[k * pw + half * ch..k * pw + half * ch + sw],
                                };
                                IntTerm {
                                    neg,
                                    top: src,
                                    bot: None,
                                }
                            })
                            .collect();
                        (*weight, terms)
                    })
                    .collect();
                let line = &mut s.line[..];
                line.fill(0.0);
                add_groups::<32>(line, &groups);
                let ct = &mut s.ct[..];
                blur_small(ct, line, &self.g, ch);
                for (a, &v) in acc.iter_mut().zip(ct.iter()) {
                    *a += v;
                }
            }
            for (o, &v) in orow.iter_mut().zip(acc.iter()) {
                *o = store(self.factor * v);
            }
        }
    }
}

/// The sizes of one band of [`DiskPlan::band`], in values (`channels` per pixel).
#[derive(Clone, Copy)]
struct BandDims {
    /// A padded band row: `(width + 2·(half + gr)) · channels`.
    pw: usize,
    /// An image row: `width · channels`.
    row_len: usize,
    /// A row of run sums over columns −gr .. width + gr: `(width + 2·gr) · channels`.
    sw: usize,
    /// The band's output rows.
    out_rows: usize,
    /// The band's input rows: the output rows and `gr + radius` either side.
    nrows: usize,
}

/// `s.prefix` = the column prefix sums of the band rows `s.rows` (one more row, the first zero):
/// any vertical run sum is then the difference of two of its rows.
#[inline(always)]
fn prefix_sums(d: BandDims, s: &mut DiskScratch) {
    let (pw, nrows) = (d.pw, d.nrows);
    s.prefix.resize((nrows + 1) * pw, 0);
    s.prefix[..pw].fill(0);
    for k in 0..nrows {
        let (done, next) = s.prefix.split_at_mut((k + 1) * pw);
        let prev = &done[k * pw..];
        let row = &s.rows[k * pw..(k + 1) * pw];
        for ((n, &p), &v) in next[..pw].iter_mut().zip(prev).zip(row) {
            *n = p.wrapping_add(v);
        }
    }
}

/// One integer term of [`add_groups`] / [`sum_terms`]: `±top` or `±(top − bot)`, element-wise.
struct IntTerm<'a> {
    neg: bool,
    top: &'a [i32],
    bot: Option<&'a [i32]>,
}

impl<'a> IntTerm<'a> {
    /// `+top`.
    fn plain(top: &'a [i32]) -> Self {
        Self {
            neg: false,
            top,
            bot: None,
        }
    }

    /// `±(top − bot)`.
    fn diff(neg: bool, top: &'a [i32], bot: &'a [i32]) -> Self {
        Self {
            neg,
            top,
            bot: Some(bot),
        }
    }

    /// Adds this term to `acc`, the elements `start..start + B` (exact wrapping i32).
    #[inline(always)]
    fn add_to<const B: usize>(&self, acc: &mut [i32; B], start: usize) {
        let t: &[i32; B] = self.top[start..start + B].try_into().expect("block");
        match (self.neg, self.bot) {
            (false, None) => {
                for l in 0..B {
                    acc[l] = acc[l].wrapping_add(t[l]);
                }
            }
            (true, None) => {
                for l in 0..B {
                    acc[l] = acc[l].wrapping_sub(t[l]);
                }
            }
            (false, Some(bot)) => {
                let b: &[i32; B] = bot[start..start + B].try_into().expect("block");
                for l in 0..B {
                    acc[l] = acc[l].wrapping_add(t[l].wrapping_sub(b[l]));
                }
            }
            (true, Some(bot)) => {
                let b: &[i32; B] = bot[start..start + B].try_into().expect("block");
                for l in 0..B {
                    acc[l] = acc[l].wrapping_sub(t[l].wrapping_sub(b[l]));
                }
            }
        }
    }

    /// This term's element `i`.
    fn at(&self, i: usize) -> i32 {
        let v = self
            .bot
            .map_or(self.top[i], |b| self.top[i].wrapping_sub(b[i]));
        if self.neg { v.wrapping_neg() } else { v }
    }
}

/// `out[i] += Σ_groups w · Σ_terms term[i]`: the terms of a group summed exactly in i32, then
/// weighted; groups in order. `B` outputs per block, kept in registers.
#[inline(always)]
fn add_groups<const B: usize>(out: &mut [f64], groups: &[(f64, Vec<IntTerm>)]) {
    let n = out.len();
    let full = n / B * B;
    add_groups_from::<B>(&mut out[..full], groups, 0);
    add_groups_from::<8>(out, groups, full);
}

/// [`add_groups`] of the elements from `first` on.
#[inline(always)]
fn add_groups_from<const B: usize>(out: &mut [f64], groups: &[(f64, Vec<IntTerm>)], first: usize) {
    let n = out.len();
    let full = first + (n - first) / B * B;
    for start in (first..full).step_by(B) {
        let o: &mut [f64; B] = (&mut out[start..start + B]).try_into().expect("block");
        let mut res = *o;
        for (w, terms) in groups {
            let mut acc = [0i32; B];
            for t in terms {
                t.add_to(&mut acc, start);
            }
            for l in 0..B {
                res[l] += w * f64::from(acc[l]);
            }
        }
        *o = res;
    }
    for (i, o) in out.iter_mut().enumerate().skip(full) {
        for (w, terms) in groups {
            let a = terms.iter().fold(0i32, |a, t| a.wrapping_add(t.at(i)));
            *o += w * f64::from(a);
        }
    }
}

/// `out[i] = Σ_terms term[i]` (exact wrapping i32), `B` outputs per block.
#[inline(always)]
fn sum_terms<const B: usize>(out: &mut [i32], terms: &[IntTerm]) {
    let n = out.len();
    let full = n / B * B;
    sum_terms_from::<B>(&mut out[..full], terms, 0);
    sum_terms_from::<8>(out, terms, full);
}

/// [`sum_terms`] of the elements from `first` on.
#[inline(always)]
fn sum_terms_from<const B: usize>(out: &mut [i32], terms: &[IntTerm], first: usize) {
    let n = out.len();
    let full = first + (n - first) / B * B;
    for start in (first..full).step_by(B) {
        let mut acc = [0i32; B];
        for t in terms {
            t.add_to(&mut acc, start);
        }
        out[start..start + B].copy_from_slice(&acc);
    }
    for (i, o) in out.iter_mut().enumerate().skip(full) {
        *o = terms.iter().fold(0i32, |a, t| a.wrapping_add(t.at(i)));
    }
}

/// `out[x] = Σ_k g_k · line[x + gr + k]` per channel (a small centred correlation along a row of
/// `out.len()/ch + 2·gr` pixels), symmetric taps paired.
fn blur_small(out: &mut [f64], line: &[f64], g: &[f64], ch: usize) {
    let gr = g.len() / 2;
    let n = out.len();
    let at = |d: usize| &line[d * ch..d * ch + n];
    let pairs: Vec<(f64, &[f64], &[f64])> = (1..=gr)
        .map(|j| (g[gr + j], at(gr - j), at(gr + j)))
        .collect();
    symmetric_pass(out, g[gr], at(gr), &pairs);
}

#[cfg(test)]
mod tests;
