//! `out = x · Wᵀ (+ b)` for a batch of tokens: quantize the activations to
//! the weight's pairing format (or keep f32 on the exact path), split output
//! rows across workers, and lay the result out by token.

use super::scratch::ActBufs;
use crate::kernels::{Acts, Kernels, QMatrix};
use crate::parallel::Parallel;
use crate::quant::{GgmlType, QK8, QK_K};

/// What a forward pass runs on.
#[derive(Clone, Copy)]
pub struct Engine<'e> {
    pub kernels: &'e dyn Kernels,
    pub par: &'e dyn Parallel,
    /// f32 activations with weights dequantized on the fly (the oracle path).
    pub exact: bool,
}

/// Rows per parallel task: a few tasks per worker, whole rows.
fn rows_per_task(n_rows: usize, workers: usize) -> usize {
    n_rows.div_ceil(workers * 4).max(1)
}

/// `x`: (n_tok, w.n_cols); `out`: (n_tok, w.n_rows); `mm`: scratch of at
/// least n_tok * w.n_rows.
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    e: &Engine,
    w: &QMatrix,
    bias: Option<&[f32]>,
    x: &[f32],
    n_tok: usize,
    acts: &mut ActBufs,
    mm: &mut [f32],
    out: &mut [f32],
) {
    let (nc, nr) = (w.n_cols, w.n_rows);
    let x = &x[..n_tok * nc];
    let a = quantize(e, w.ty, x, n_tok, acts);
    let k: &dyn Kernels = e.kernels;
    let rows = rows_per_task(nr, e.par.n_workers());
    let run = |dst: &mut [f32]| {
        e.par.for_each_chunk(dst, rows * n_tok, &|i, chunk| {
            let r0 = i * rows;
            k.matmul_rows(w, a, n_tok, r0..r0 + chunk.len() / n_tok, chunk);
        })
    };
    let out = &mut out[..n_tok * nr];
    if n_tok == 1 {
        run(out);
    } else {
        let mm = &mut mm[..n_tok * nr];
        run(mm);
        for (r, col) in mm.chunks_exact(n_tok).enumerate() {
            for (t, &v) in col.iter().enumerate() {
                out[t * nr + r] = v;
            }
        }
    }
    if let Some(b) = bias {
        for o in out.chunks_exact_mut(nr) {
            for (o, &b) in o.iter_mut().zip(b) {
                *o += b;
            }
        }
    }
}

fn quantize<'s>(e: &Engine, ty: GgmlType, x: &'s [f32], n_tok: usize, acts: &'s mut ActBufs) -> Acts<'s> {
    let n = x.len() / n_tok.max(1);
    match (e.exact, ty.vec_dot_type()) {
        (false, Some(GgmlType::Q8_0)) => {
            let b = &mut acts.q8_0[..n_tok * n / QK8];
            e.kernels.quantize_q8_0(x, b);
            Acts::Q8_0(b)
        }
        (false, Some(GgmlType::Q8_1)) => {
            let b = &mut acts.q8_1[..n_tok * n / QK8];
            e.kernels.quantize_q8_1(x, b);
            Acts::Q8_1(b)
        }
        (false, Some(GgmlType::Q8_K)) => {
            let b = &mut acts.q8k[..n_tok * n / QK_K];
            e.kernels.quantize_q8_k(x, b);
            Acts::Q8K(b)
        }
        _ => Acts::F32(x),
    }
}
