//! The kernel trait every backend implements, and the views it works on.
//! `scalar` is the reference: every method of every backend must equal it
//! bit for bit (docs/ARCHITECTURE.md, the numerics contract). This module is
//! for backend authors: implement `Kernels`, then run the conformance
//! suite against the reference. `quant` holds the block layouts (each
//! format's bytes, declared once) and the reference quantizers.
//!
//! ```
//! use tern_core::backend::{conformance, Scalar};
//! conformance::check(&Scalar).unwrap();
//! ```

mod cached;
pub mod conformance;
pub mod quant;
pub mod scalar;
#[cfg(feature = "testing")]
pub mod speed;
pub mod tiles;

use core::ops::Range;

pub use crate::parallel::{Parallel, Serial};
pub use cached::{q8_0_at, BlockRows, Cached, KvBlock, KvRows, KvType, Runs, KV_BLOCK};

use quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType};

/// Every weight type with a kernel (the conformance suite checks each).
pub const KERNEL_TYPES: [GgmlType; 15] = [
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
];

/// A weight matrix: `n_rows` rows of `n_cols` elements of type `ty`.
#[derive(Clone, Copy, Debug)]
pub struct QMatrix<'a> {
    /// The weights' type.
    pub ty: GgmlType,
    /// The rows' bytes, row after row.
    pub data: &'a [u8],
    /// Elements per row.
    pub n_cols: usize,
    /// Rows.
    pub n_rows: usize,
    /// The blocks' f16 scales (and mins) widened to f32 in the layout of
    /// `quant::wide_scales`, or empty. The same numbers as the blocks'
    /// own fields, so a kernel may read either.
    pub scales: &'a [f32],
    /// The whole groups of 8 rows in `quant::rows8`'s interleaved layout
    /// (made at load for a backend that reads it: `Kernels::reads_rows8`),
    /// or empty. The same numbers as `data`, so a kernel may read either.
    pub rows8: &'a [u8],
}

impl<'a> QMatrix<'a> {
    /// Bytes per row.
    #[inline]
    pub fn row_bytes(&self) -> usize {
        self.data.len() / self.n_rows.max(1)
    }
    /// Row `r`'s bytes.
    #[inline]
    pub fn row(&self, r: usize) -> &'a [u8] {
        let rb = self.row_bytes();
        &self.data[r * rb..(r + 1) * rb]
    }
}

/// `n_tok` activation rows of `n_cols` elements, in the form a weight type's
/// dot product consumes: plain f32 (the exact path, and float weights) or
/// 8-bit blocks.
#[derive(Clone, Copy, Debug)]
pub enum Acts<'a> {
    /// f32 rows (the exact path, and float weights).
    F32(&'a [f32]),
    /// Q8_0 blocks (for Q4_0, Q5_0 and Q8_0 weights).
    Q8_0(&'a [BlockQ8_0]),
    /// Q8_1 blocks (for Q4_1 and Q5_1 weights).
    Q8_1(&'a [BlockQ8_1]),
    /// Q8_K super-blocks (for the K-quants).
    Q8K(&'a [BlockQ8K]),
}

/// How a query·key dot becomes an attention score: `dot · scale`, then,
/// with a softcap c (Gemma 2), `c · tanh(s / c)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Scale of the dot (1/√head_dim, or the model's own).
    pub scale: f32,
    /// The softcap, if any.
    pub softcap: Option<f32>,
}

impl Score {
    /// The plain scaled dot, no softcap.
    pub fn scaled(scale: f32) -> Score {
        Score { scale, softcap: None }
    }
    /// The score of a dot.
    #[inline]
    pub fn of(self, dot: f32) -> f32 {
        self.capped(dot * self.scale)
    }
    /// A scaled dot softcapped (itself without a cap).
    #[inline]
    pub fn capped(self, s: f32) -> f32 {
        match self.softcap {
            Some(c) => scalar::softcap(s, c),
            None => s,
        }
    }
}

/// A run of queries of one head over the same cached rows (one sequence,
/// keys from its first position): query j is `q[j * stride..][..hd]` and
/// sees the first `n_kv[j]` positions; dots become scores by `score`.
#[derive(Clone, Copy, Debug)]
pub struct Queries<'a> {
    /// The queries.
    pub q: &'a [f32],
    /// Elements from one query to the next.
    pub stride: usize,
    /// Positions each query sees.
    pub n_kv: &'a [usize],
    /// Dot to score.
    pub score: Score,
}

impl Queries<'_> {
    /// `f(query, its n_kv, its output)` for each query, its output being
    /// `out[j * hd..][..hd]` (hd = `out.len() / n_kv.len()`).
    pub fn each(&self, out: &mut [f32], mut f: impl FnMut(&[f32], usize, &mut [f32])) {
        let hd = out.len() / self.n_kv.len().max(1);
        for (j, (&n, o)) in self.n_kv.iter().zip(out.chunks_exact_mut(hd)).enumerate() {
            f(&self.q[j * self.stride..j * self.stride + hd], n, o);
        }
    }
}

/// The kernels a forward pass runs: a backend implements them (each method defaults to the scalar
/// reference) and must equal the reference bit for bit; `conformance::check` tests that.
pub trait Kernels: Sync {
    /// The backend's name (`scalar`, `avx2`, `simd128`, ...).
    fn name(&self) -> &'static str;

    /// `out[(r - rows.start) * n_tok + t] = W[r] · x[t]` for r in `rows`.
    /// (Row-major by output row so a range of rows is one contiguous slice.)
    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        scalar::matmul_rows(w, x, n_tok, rows, out)
    }

    /// Whether `matmul_rows` reads `QMatrix::rows8` for weights of type
    /// `ty` (so a model loaded for this backend should make it).
    fn reads_rows8(&self, ty: GgmlType) -> bool {
        let _ = ty;
        false
    }

    /// `out[t * stride + r] = src[r * n_src + t0 + t]` for `nt` tokens and
    /// every row of `src` (rows of `n_src`): a matmul's results laid out by
    /// token.
    fn transpose(&self, src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
        scalar::transpose(src, n_src, t0, nt, out, stride)
    }

    /// Quantize each `n_cols` row of `x` into 8-bit blocks of `ty`
    /// (Q8_0, Q8_1 or Q8_K), written to the matching scratch vector.
    fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
        scalar::quantize_rows_q8_0(x, out)
    }
    /// As `quantize_q8_0`, into Q8_1 blocks.
    fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
        scalar::quantize_rows_q8_1(x, out)
    }
    /// As `quantize_q8_0`, into Q8_K super-blocks.
    fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
        scalar::quantize_rows_q8_k(x, out)
    }

    /// `o = x / rms(x) * w` for one row.
    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        scalar::rms_norm(x, w, eps, o)
    }

    /// `o = (x − mean(x)) / √(var(x) + eps) · w + b` for one row.
    fn layer_norm(&self, x: &[f32], w: &[f32], b: &[f32], eps: f32, o: &mut [f32]) {
        scalar::layer_norm(x, w, b, eps, o)
    }

    /// `x[i] = gelu(x[i])`, erf form.
    fn gelu(&self, x: &mut [f32]) {
        scalar::gelu(x)
    }

    /// Attention of one query head over the first `n_kv` cached
    /// positions: `out = softmax(score(q·K^T)) V` in `tiles::attention`'s
    /// order; `work` holds `tiles::work_len(q.len(), 1)`.
    fn attention_head(&self, q: &[f32], kv: Cached, n_kv: usize, score: Score, work: &mut [f32], out: &mut [f32]) {
        self.attention_queries(Queries { q, stride: q.len(), n_kv: &[n_kv], score }, kv, work, out)
    }

    /// Attention of a run of queries over the same cached rows, query j
    /// writing `out[j * hd..][..hd]`: for each query the numbers of
    /// `attention_head`; the rows are read once for the run, a tile at a
    /// time (`tiles::attention`). `work` holds `tiles::work_len(hd, n)`
    /// for n queries.
    fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
        tiles::attention(&tiles::Plain, qs, kv, work, out)
    }

    /// A LoRA adapter's B step over outputs `cols` (`scalar::lora_up`):
    /// `out[t] += scale · Σ_k mid[t][k] · bt[k][cols]` for each token,
    /// `bt` being Bᵀ (rank rows of float elements, one per output), each
    /// output's products added in the rank's order.
    fn lora_up(&self, bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
        scalar::lora_up(bt, cols, mid, scale, out)
    }

    /// `g[i] = silu(g[i]) * u[i]`.
    fn swiglu(&self, g: &mut [f32], u: &[f32]) {
        scalar::swiglu(g, u)
    }

    /// `g[i] = gelu_tanh(g[i]) * u[i]`.
    fn geglu(&self, g: &mut [f32], u: &[f32]) {
        scalar::geglu(g, u)
    }
}

/// The scalar reference as a backend.
pub struct Scalar;

impl Kernels for Scalar {
    fn name(&self) -> &'static str {
        "scalar"
    }
}
