//! SIMD128 kernels (wasm `v128`): the scalar reference's arithmetic in its
//! order — integer block dots exact, float expressions per lane as written
//! there — so every result equals `Scalar`'s bit for bit. Weight types and
//! methods without a SIMD path here run the reference itself.

mod attention;
mod exact;
mod exp;
mod float;
mod kquant;
mod legacy;
mod quantize;
mod v;
mod widen;

use core::cell::RefCell;
use core::ops::Range;

use tern_core::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};
use tern_core::backend::{scalar, tiles, Acts, Cached, Kernels, QMatrix, Queries};

pub struct Simd128;

std::thread_local! {
    static ACTS16: RefCell<Acts16> = RefCell::new(Acts16::default());
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

/// A call's activation quants as i16 (eo16 order), and per token its
/// blocks' `d` and `s`, padded to a multiple of 4 blocks.
#[derive(Default)]
struct Acts16 {
    q: Vec<i16>,
    d: Vec<f32>,
    s: Vec<f32>,
}

impl Acts16 {
    /// Fill with `n_tok` tokens of `nb` blocks each.
    fn fill<B: Block>(&mut self, blocks: &[B], n_tok: usize, nb: usize) {
        let bs = blocks.first().map_or(0, |b| b.qs().len());
        let nb4 = nb.next_multiple_of(4);
        self.q.resize(n_tok * nb * bs, 0);
        self.d.clear();
        self.d.resize(n_tok * nb4, 0.0);
        self.s.clear();
        self.s.resize(n_tok * nb4, 0.0);
        for t in 0..n_tok {
            for (i, b) in blocks[t * nb..(t + 1) * nb].iter().enumerate() {
                let at = t * nb + i;
                widen::eo16(b.qs(), &mut self.q[at * bs..(at + 1) * bs]);
                self.d[t * nb4 + i] = b.d();
                self.s[t * nb4 + i] = b.s();
            }
        }
    }

    /// Token `t`'s part.
    fn token(&self, t: usize, nb: usize, bs: usize) -> legacy::Acts<'_> {
        let nb4 = nb.next_multiple_of(4);
        legacy::Acts {
            q: &self.q[t * nb * bs..(t + 1) * nb * bs],
            d: &self.d[t * nb4..(t + 1) * nb4],
            s: &self.s[t * nb4..(t + 1) * nb4],
        }
    }
}

/// Tokens a prefill tile takes at once (each weight block unpacked once).
const TILE: usize = 4;

/// Rows of a 32-element block format against every token of `blocks`.
fn legacy_rows<L: legacy::Legacy, B: Block>(
    w: &QMatrix,
    blocks: &[B],
    n_tok: usize,
    acts16: &mut Acts16,
    rows: Range<usize>,
    out: &mut [f32],
) {
    let nb = w.n_cols / QK8;
    acts16.fill(blocks, n_tok, nb);
    let full = n_tok / TILE * TILE;
    let (r0, n_rows) = (rows.start, rows.len());
    let per = legacy::scales_per_row::<L>(nb);
    let sc = |r: usize| (!w.scales.is_empty()).then(|| &w.scales[r * per..(r + 1) * per]);
    for i in 0..n_rows {
        let row = w.row(r0 + i);
        let o = &mut out[i * n_tok..(i + 1) * n_tok];
        for t0 in (0..full).step_by(TILE) {
            let acts: [legacy::Acts; TILE] = core::array::from_fn(|k| acts16.token(t0 + k, nb, QK8));
            let r = legacy::row::<L, TILE>(row, sc(r0 + i), core::array::from_fn(|k| &acts[k]), nb);
            o[t0..t0 + TILE].copy_from_slice(&r);
        }
    }
    // the tokens left (all of a decode's), row by row (pairs of rows
    // sharing the activation loads were slower: 9.7 → 8.5 GB/s on Q4_1)
    for t in full..n_tok {
        let a = acts16.token(t, nb, QK8);
        for i in 0..n_rows {
            out[i * n_tok + t] = legacy::row::<L, 1>(w.row(r0 + i), sc(r0 + i), [&a], nb)[0];
        }
    }
}

fn matmul_q(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> bool {
    use legacy::{Iq4Nl, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
    ACTS16.with_borrow_mut(|acts16| {
        match (x, w.ty) {
            (Acts::Q8_0(a), GgmlType::Q4_0) => legacy_rows::<Q4_0, _>(w, a, n_tok, acts16, rows, out),
            (Acts::Q8_0(a), GgmlType::Q5_0) => legacy_rows::<Q5_0, _>(w, a, n_tok, acts16, rows, out),
            (Acts::Q8_0(a), GgmlType::Q8_0) => legacy_rows::<Q8_0, _>(w, a, n_tok, acts16, rows, out),
            (Acts::Q8_0(a), GgmlType::IQ4_NL) => legacy_rows::<Iq4Nl, _>(w, a, n_tok, acts16, rows, out),
            (Acts::Q8_1(a), GgmlType::Q4_1) => legacy_rows::<Q4_1, _>(w, a, n_tok, acts16, rows, out),
            (Acts::Q8_1(a), GgmlType::Q5_1) => legacy_rows::<Q5_1, _>(w, a, n_tok, acts16, rows, out),
            (Acts::Q8K(a), ty) if kquant::handles(ty) => {
                let nb = w.n_cols / QK_K;
                acts16.fill(a, n_tok, nb);
                kquant::rows(w, a, &acts16.q, n_tok, rows, out)
            }
            _ => return false,
        }
        true
    })
}

impl Kernels for Simd128 {
    fn name(&self) -> &'static str {
        "simd128"
    }

    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        match x {
            Acts::F32(x) => exact::matmul_rows(w, x, n_tok, rows, out),
            _ => {
                if !matmul_q(w, x, n_tok, rows.clone(), out) {
                    scalar::matmul_rows(w, x, n_tok, rows, out)
                }
            }
        }
    }

    fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
        tiles::attention(&attention::Simd128, qs, kv, work, out)
    }

    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        float::rms_norm(x, w, eps, o)
    }

    fn swiglu(&self, g: &mut [f32], u: &[f32]) {
        exp::swiglu(g, u)
    }
    fn geglu(&self, g: &mut [f32], u: &[f32]) {
        exp::geglu(g, u)
    }

    fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
        quantize::rows_q8_0(x, out)
    }
    fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
        quantize::rows_q8_1(x, out)
    }
    fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
        quantize::rows_q8_k(x, out)
    }
}
