//! SIMD128 kernels (wasm `v128`): the scalar reference's arithmetic in its
//! order — integer block dots exact, float expressions per lane as written
//! there — so every result equals `Scalar`'s bit for bit. Weight types and
//! methods without a SIMD path here run the reference itself.

mod float;
mod kquant;
mod legacy;
mod v;
mod widen;

use core::cell::RefCell;
use core::ops::Range;

use tern_core::kernels::{scalar, Acts, Kernels, KvRows, QMatrix};
use tern_core::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

pub struct Simd128;

/// Activations of the current matmul's token, widened (reused across calls).
#[derive(Default)]
struct Wide {
    q: Vec<i16>,
    d: Vec<f32>,
    s: Vec<f32>,
}

std::thread_local! {
    static WIDE: RefCell<Wide> = RefCell::new(Wide::default());
}

/// What an 8-bit activation block gives the kernels.
trait Block {
    fn qs(&self) -> &[i8];
    fn d(&self) -> f32;
    fn s(&self) -> f32 {
        0.0
    }
}
impl Block for BlockQ8_0 {
    fn qs(&self) -> &[i8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
}
impl Block for BlockQ8_1 {
    fn qs(&self) -> &[i8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
    fn s(&self) -> f32 {
        self.s
    }
}
impl Block for BlockQ8K {
    fn qs(&self) -> &[i8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
}

/// Widen one token's blocks into `w` (quants eo16; d, s padded to 4 blocks).
fn widen_token<B: Block>(blocks: &[B], w: &mut Wide) {
    let bs = blocks.first().map_or(0, |b| b.qs().len());
    let nb4 = blocks.len().next_multiple_of(4);
    w.q.resize(blocks.len() * bs, 0);
    w.d.clear();
    w.s.clear();
    for (i, b) in blocks.iter().enumerate() {
        widen::eo16(b.qs(), &mut w.q[i * bs..(i + 1) * bs]);
        w.d.push(b.d());
        w.s.push(b.s());
    }
    w.d.resize(nb4, 0.0);
    w.s.resize(nb4, 0.0);
}

/// Rows of a 32-element block format against token `t` of `blocks`.
fn legacy_rows<L: legacy::Legacy, B: Block>(
    w: &QMatrix,
    blocks: &[B],
    t: usize,
    wide: &mut Wide,
    rows: Range<usize>,
    out: &mut [f32],
    n_tok: usize,
) {
    let nb = w.n_cols / QK8;
    widen_token(&blocks[t * nb..(t + 1) * nb], wide);
    let a = legacy::Acts { q: &wide.q, d: &wide.d, s: &wide.s };
    for (i, r) in rows.enumerate() {
        out[i * n_tok + t] = legacy::row::<L>(w.row(r), &a, nb);
    }
}

fn matmul_q(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> bool {
    use legacy::{Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
    let n = w.n_cols;
    WIDE.with_borrow_mut(|wide| {
        for t in 0..n_tok {
            let rows = rows.clone();
            match (x, w.ty) {
                (Acts::Q8_0(a), GgmlType::Q4_0) => legacy_rows::<Q4_0, _>(w, a, t, wide, rows, out, n_tok),
                (Acts::Q8_0(a), GgmlType::Q5_0) => legacy_rows::<Q5_0, _>(w, a, t, wide, rows, out, n_tok),
                (Acts::Q8_0(a), GgmlType::Q8_0) => legacy_rows::<Q8_0, _>(w, a, t, wide, rows, out, n_tok),
                (Acts::Q8_1(a), GgmlType::Q4_1) => legacy_rows::<Q4_1, _>(w, a, t, wide, rows, out, n_tok),
                (Acts::Q8_1(a), GgmlType::Q5_1) => legacy_rows::<Q5_1, _>(w, a, t, wide, rows, out, n_tok),
                (Acts::Q8K(a), ty) if kquant::handles(ty) => {
                    let a = &a[t * n / QK_K..(t + 1) * n / QK_K];
                    widen_token(a, wide);
                    kquant::rows(w, a, &wide.q, rows, &mut out[t..], n_tok)
                }
                _ => return false,
            }
        }
        true
    })
}

impl Kernels for Simd128 {
    fn name(&self) -> &'static str {
        "simd128"
    }

    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        if !matmul_q(w, x, n_tok, rows.clone(), out) {
            scalar::matmul_rows(w, x, n_tok, rows, out)
        }
    }

    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        float::rms_norm(x, w, eps, o)
    }

    fn attention_head(
        &self,
        q: &[f32],
        k: KvRows,
        v: KvRows,
        kv_stride: usize,
        n_kv: usize,
        scale: f32,
        scores: &mut [f32],
        out: &mut [f32],
    ) {
        scalar::attention_head_with(q, k, v, kv_stride, n_kv, scale, scores, out, float::dot, float::axpy, float::read)
    }
}
