//! `out = x · Wᵀ (+ b)` for a batch of tokens: quantize the activations to
//! the weight's pairing format (or keep f32 on the exact path), split output
//! rows across workers, and lay the result out by token.

use alloc::vec::Vec;

use super::engine::Engine;
use crate::backend::{Acts, Kernels, QMatrix};
use crate::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

/// Quantized activations, one vector per 8-bit block format.
pub struct ActBufs {
    pub q8_0: Vec<BlockQ8_0>,
    pub q8_1: Vec<BlockQ8_1>,
    pub q8k: Vec<BlockQ8K>,
}

impl ActBufs {
    /// Room for `n_tok` rows of up to `widest` activations in each format.
    pub fn new(n_tok: usize, widest: usize) -> ActBufs {
        ActBufs {
            q8_0: alloc::vec![BlockQ8_0::ZERO; n_tok * widest.div_ceil(QK8)],
            q8_1: alloc::vec![BlockQ8_1::ZERO; n_tok * widest.div_ceil(QK8)],
            q8k: alloc::vec![BlockQ8K::ZERO; n_tok * widest.div_ceil(QK_K)],
        }
    }
}

/// Rows per parallel task: a few tasks per worker, whole rows.
fn rows_per_task(n_rows: usize, workers: usize) -> usize {
    n_rows.div_ceil(workers * 4).max(1)
}

/// Rows per parallel task when several matrices share one region: a
/// multiple of the kernels' 4-row groups that divides every matrix.
const FUSED_ROWS: usize = 16;

/// `outs[i] = x · ws[i]ᵀ (+ biases[i])` for matrices that read the same
/// input: one parallel region over all their rows when they share an
/// activation format (and their row counts allow), else one each.
/// `x`: (n_tok, n_cols); `outs[i]`: (n_tok, ws[i].n_rows); `mm`: scratch of
/// at least n_tok · Σ n_rows.
pub fn matmul(
    e: &Engine,
    ws: &[(QMatrix, Option<&[f32]>)],
    x: &[f32],
    n_tok: usize,
    acts: &mut ActBufs,
    mm: &mut [f32],
    outs: &mut [&mut [f32]],
) {
    let first = &ws[0].0;
    let act = |w: &QMatrix| if e.exact { None } else { w.ty.vec_dot_type() };
    let fusable =
        ws.iter().all(|(w, _)| act(w) == act(first) && w.n_cols == first.n_cols && w.n_rows % FUSED_ROWS == 0);
    if ws.len() > 1 && !fusable {
        for (wb, out) in ws.iter().zip(outs.iter_mut()) {
            matmul(e, core::slice::from_ref(wb), x, n_tok, acts, mm, core::slice::from_mut(out));
        }
        return;
    }
    let nc = first.n_cols;
    let x = &x[..n_tok * nc];
    let a = quantize(e, first.ty, x, n_tok, acts);
    let k: &dyn Kernels = e.kernels;
    let total: usize = ws.iter().map(|(w, _)| w.n_rows).sum();
    let rows = if ws.len() > 1 { FUSED_ROWS } else { rows_per_task(total, e.par.n_workers()) };
    let mm = &mut mm[..n_tok * total];
    // a run of chunks is one kernel call per matrix it touches (each call
    // prepares the activations for its rows again)
    e.par.for_each_run(mm, rows * n_tok, &|i, mut run| {
        // the matrix holding global row i * rows
        let mut r0 = i * rows;
        let mut m = 0;
        while r0 >= ws[m].0.n_rows {
            r0 -= ws[m].0.n_rows;
            m += 1;
        }
        while !run.is_empty() {
            let nr = (run.len() / n_tok).min(ws[m].0.n_rows - r0);
            let (now, rest) = run.split_at_mut(nr * n_tok);
            k.matmul_rows(&ws[m].0, a, n_tok, r0..r0 + nr, now);
            (run, r0, m) = (rest, 0, m + 1);
        }
    });
    // (rows, tokens) → each output's (tokens, rows), plus bias; in blocks
    // of tokens so each row's read is contiguous
    let mut base = 0;
    for ((w, bias), out) in ws.iter().zip(outs.iter_mut()) {
        let nr = w.n_rows;
        let out = &mut out[..n_tok * nr];
        let src = &mm[base * n_tok..(base + nr) * n_tok];
        let block = TRANSPOSE_TOKENS.min(n_tok.div_ceil(e.par.n_workers()));
        let per_chunk = |i: usize, out: &mut [f32]| {
            transpose(src, n_tok, i * block, out, nr);
            add_bias(out, *bias);
        };
        if n_tok == 1 {
            out.copy_from_slice(src);
            add_bias(out, *bias);
        } else {
            e.par.for_each_chunk(out, block * nr, &per_chunk);
        }
        base += nr;
    }
}

/// `out[t][r] = src[r][t0 + t]` for the tokens of `out` (rows of `nr`);
/// `src` holds rows of `n_tok`. In 8 × 8 tiles, so reads and writes both
/// run along lines (the element-wise loop cost 5-11 % of a prefill).
fn transpose(src: &[f32], n_tok: usize, t0: usize, out: &mut [f32], nr: usize) {
    const B: usize = 8;
    let nt = out.len() / nr;
    let (r8, tt8) = (nr / B * B, nt / B * B);
    for r in (0..r8).step_by(B) {
        for t in (0..tt8).step_by(B) {
            let mut tile = [[0.0f32; B]; B];
            for (i, row) in tile.iter_mut().enumerate() {
                row.copy_from_slice(&src[(r + i) * n_tok + t0 + t..][..B]);
            }
            for j in 0..B {
                let o: &mut [f32; B] = (&mut out[(t + j) * nr + r..][..B]).try_into().expect("8 floats");
                for (i, o) in o.iter_mut().enumerate() {
                    *o = tile[i][j];
                }
            }
        }
    }
    // the ragged edges element by element
    for r in 0..nr {
        let from = if r < r8 { tt8 } else { 0 };
        for t in from..nt {
            out[t * nr + r] = src[r * n_tok + t0 + t];
        }
    }
}

/// Tokens per task when laying matmul outputs out by token.
const TRANSPOSE_TOKENS: usize = 16;

/// `out` (tokens × rows) += the bias row, if any.
fn add_bias(out: &mut [f32], bias: Option<&[f32]>) {
    if let Some(b) = bias {
        for o in out.chunks_exact_mut(b.len()) {
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

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    /// The tiled transpose equals the element-wise one on ragged shapes.
    #[test]
    fn transpose_matches_elementwise() {
        for (nr, n_tok, t0, nt) in [(19usize, 37usize, 5usize, 13usize), (8, 16, 0, 16), (3, 9, 2, 7), (64, 40, 16, 16)]
        {
            let src: Vec<f32> = (0..nr * n_tok).map(|i| i as f32).collect();
            let mut got = alloc::vec![0.0; nt * nr];
            super::transpose(&src, n_tok, t0, &mut got, nr);
            for t in 0..nt {
                for r in 0..nr {
                    assert_eq!(got[t * nr + r], src[r * n_tok + t0 + t], "{nr}×{n_tok} t0 {t0}: ({t}, {r})");
                }
            }
        }
    }
}
