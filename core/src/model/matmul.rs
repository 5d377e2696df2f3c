//! `out = x · Wᵀ (+ b)` for a batch of tokens: quantize the activations to
//! the weight's pairing format (or keep f32 on the exact path), split output
//! rows across workers, and lay the result out by token.

use alloc::vec::Vec;
use core::ops::Range;

use super::engine::Engine;
use crate::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};
use crate::backend::{Acts, Kernels, QMatrix};

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

/// Rows per parallel task when several matrices share one region are a
/// multiple of this, which divides every matrix (so a task's rows start
/// on the kernels' 8-row groups).
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
    let split_tokens = n_tok >= TOKEN_SPLIT * e.par.n_workers();
    if split_tokens && ws.len() == 1 {
        // one matrix: each task quantizes its own tokens' activations
        let (w, bias) = &ws[0];
        return by_tokens(e, w, *bias, Tokens::Raw(x), n_tok, &mut outs[0][..n_tok * w.n_rows]);
    }
    let a = quantize(e, first.ty, x, n_tok, acts);
    let k: &dyn Kernels = e.kernels;
    if split_tokens {
        for ((w, bias), out) in ws.iter().zip(outs.iter_mut()) {
            by_tokens(e, w, *bias, Tokens::Quantized(a), n_tok, &mut out[..n_tok * w.n_rows]);
        }
        return;
    }
    let total: usize = ws.iter().map(|(w, _)| w.n_rows).sum();
    // (fused: whole 16-row groups, a few tasks per worker — one 16-row
    // task each cost a verify step of 7 tokens at 2 threads 25 → 33 ms)
    let rows = match ws.len() {
        1 => rows_per_task(total, e.par.n_workers()),
        _ => rows_per_task(total, e.par.n_workers()).next_multiple_of(FUSED_ROWS),
    };
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
            e.kernels.transpose(src, n_tok, i * block, out.len() / nr, out, nr);
            add_bias(out, *bias);
        };
        if n_tok == 1 {
            out.copy_from_slice(src);
            add_bias(out, *bias);
        } else if out.len() <= SERIAL_TRANSPOSE {
            per_chunk(0, out);
        } else {
            e.par.for_each_chunk(out, block * nr, &per_chunk);
        }
        base += nr;
    }
}

/// `out[j] = x[j] · ws[j]ᵀ` for one token's rows `x[j]`, each through its
/// own matrix (a token's chosen experts), in one parallel region over all
/// their rows. The matrices share type and shape, whole 16-row groups;
/// `x`: (ws.len(), n_cols); `out`: (ws.len(), n_rows). Each row's
/// arithmetic is `matmul`'s.
pub fn matmul_each(e: &Engine, ws: &[QMatrix], x: &[f32], acts: &mut ActBufs, out: &mut [f32]) {
    let (n, first) = (ws.len(), &ws[0]);
    let (nr, nc) = (first.n_rows, first.n_cols);
    debug_assert!(ws.iter().all(|w| w.ty == first.ty && w.n_rows == nr && w.n_cols == nc) && nr % FUSED_ROWS == 0);
    let a = quantize(e, first.ty, &x[..n * nc], n, acts);
    let k: &dyn Kernels = e.kernels;
    let rows = rows_per_task(n * nr, e.par.n_workers()).next_multiple_of(FUSED_ROWS);
    e.par.for_each_run(&mut out[..n * nr], rows, &|i, mut run| {
        let (mut m, mut r0) = ((i * rows) / nr, (i * rows) % nr);
        while !run.is_empty() {
            let now_rows = run.len().min(nr - r0);
            let (now, rest) = run.split_at_mut(now_rows);
            k.matmul_rows(&ws[m], token_rows(a, m..m + 1, n), 1, r0..r0 + now_rows, now);
            (run, r0, m) = (rest, 0, m + 1);
        }
    });
}

/// Whether `matmul_each` takes these matrices.
pub fn each_fits(ws: &[QMatrix]) -> bool {
    let f = &ws[0];
    f.n_rows % FUSED_ROWS == 0 && ws.iter().all(|w| w.ty == f.ty && w.n_rows == f.n_rows && w.n_cols == f.n_cols)
}

/// Tokens per worker from which a matmul splits its tokens, not its rows,
/// across tasks (each task then reads every weight row once).
const TOKEN_SPLIT: usize = 32;

/// Most tokens per task on the token-split path (the x86 VNNI prefill
/// tiles' 64: one tile a kernel call).
const TOKEN_BLOCK: usize = 64;

/// Rows per kernel call on the token-split path: their (rows, tokens)
/// results stay in the nearest cache until laid out by token.
const ROW_BLOCK: usize = 128;

/// `out = x · Wᵀ (+ b)` with the tokens split across tasks: each task's
/// outputs are one contiguous run of whole tokens, filled a block of rows
/// at a time from a small (rows, tokens) tile — prefill's results never
/// make a round trip through memory to be laid out by token.
fn by_tokens(e: &Engine, w: &QMatrix, bias: Option<&[f32]>, x: Tokens, n_tok: usize, out: &mut [f32]) {
    let nr = w.n_rows;
    let block = n_tok.div_ceil(2 * e.par.n_workers()).next_multiple_of(16).clamp(16, TOKEN_BLOCK);
    e.par.for_each_chunk(out, block * nr, &|i, out| {
        let (t0, nt) = (i * block, out.len() / nr);
        let mut own = ActBufs::new(0, 0);
        let a = match x {
            Tokens::Quantized(a) => token_rows(a, t0..t0 + nt, n_tok),
            Tokens::Raw(x) => quantize(e, w.ty, &x[t0 * w.n_cols..(t0 + nt) * w.n_cols], nt, &mut own),
        };
        let mut tile = alloc::vec![0.0f32; ROW_BLOCK.min(nr) * nt];
        for r0 in (0..nr).step_by(ROW_BLOCK) {
            let rb = ROW_BLOCK.min(nr - r0);
            let tile = &mut tile[..rb * nt];
            e.kernels.matmul_rows(w, a, nt, r0..r0 + rb, tile);
            e.kernels.transpose(tile, nt, 0, nt, &mut out[r0..], nr);
        }
        add_bias(out, bias);
    });
}

/// A token-split matmul's activations: quantized once for several
/// matrices, or raw, each task quantizing its own tokens.
#[derive(Clone, Copy)]
enum Tokens<'a> {
    Quantized(Acts<'a>),
    Raw(&'a [f32]),
}

/// Rows `tokens` of `n_tok` activation rows.
fn token_rows(a: Acts, tokens: Range<usize>, n_tok: usize) -> Acts {
    fn rows<T>(x: &[T], t: Range<usize>, n_tok: usize) -> &[T] {
        let per = x.len() / n_tok;
        &x[t.start * per..t.end * per]
    }
    match a {
        Acts::F32(x) => Acts::F32(rows(x, tokens, n_tok)),
        Acts::Q8_0(x) => Acts::Q8_0(rows(x, tokens, n_tok)),
        Acts::Q8_1(x) => Acts::Q8_1(rows(x, tokens, n_tok)),
        Acts::Q8K(x) => Acts::Q8K(rows(x, tokens, n_tok)),
    }
}

/// Tokens per task when laying matmul outputs out by token.
const TRANSPOSE_TOKENS: usize = 16;

/// Outputs laid out by token on the calling thread, up to this many: a
/// verify step's few tokens, 7 regions fewer a layer for Qwen (measured
/// near the noise: pp2 at 2 threads 18.9 → 18.5 ms, pp8 28.0 → 27.3).
const SERIAL_TRANSPOSE: usize = 1 << 16;

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
            let b = room(&mut acts.q8_0, n_tok * n / QK8, BlockQ8_0::ZERO);
            e.kernels.quantize_q8_0(x, b);
            Acts::Q8_0(b)
        }
        (false, Some(GgmlType::Q8_1)) => {
            let b = room(&mut acts.q8_1, n_tok * n / QK8, BlockQ8_1::ZERO);
            e.kernels.quantize_q8_1(x, b);
            Acts::Q8_1(b)
        }
        (false, Some(GgmlType::Q8_K)) => {
            let b = room(&mut acts.q8k, n_tok * n / QK_K, BlockQ8K::ZERO);
            e.kernels.quantize_q8_k(x, b);
            Acts::Q8K(b)
        }
        _ => Acts::F32(x),
    }
}

/// The first `n` blocks of `v`, grown to them if it is shorter (a
/// token-split task's own buffers start empty; the scratch's are sized).
fn room<T: Clone>(v: &mut Vec<T>, n: usize, zero: T) -> &mut [T] {
    if v.len() < n {
        v.resize(n, zero);
    }
    &mut v[..n]
}

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    /// Both ways of splitting a matmul (by rows for a few tokens, by tokens
    /// for many; one matrix, or two sharing their activations) give the
    /// reference kernel's numbers laid out by token, plus the bias, on
    /// ragged row blocks and token blocks.
    #[test]
    fn both_splits_lay_out_the_reference_by_token() {
        use crate::backend::quant::{GgmlType, QK8};
        use crate::backend::{scalar, Acts, QMatrix, Scalar};
        use crate::model::engine::Engine;
        use crate::parallel::Serial;
        let mut seed = 0x9e37_79b9u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let e = Engine { kernels: &Scalar, par: &Serial, exact: false };
        let n_cols = 64;
        // 200 rows: not a multiple of the fused tasks' 16, so one at a time
        for (n_rows, n_mats) in [(200, 1), (208, 2)] {
            // Q8_0 rows: f16 scale 0.5, random quants
            let data: Vec<u8> = (0..n_rows * n_cols / QK8)
                .flat_map(|_| [0x00u8, 0x38].into_iter().chain((0..QK8).map(|_| next() as u8)).collect::<Vec<_>>())
                .collect();
            let w = QMatrix { ty: GgmlType::Q8_0, data: &data, n_cols, n_rows, scales: &[], rows8: &[] };
            let bias: Vec<f32> = (0..n_rows).map(|r| r as f32 * 0.25).collect();
            let ws = [(w, Some(&bias[..])), (w, None)];
            for n_tok in [20, 75] {
                let x: Vec<f32> = (0..n_tok * n_cols).map(|_| (next() % 2001) as f32 / 1000.0 - 1.0).collect();
                let mut acts = super::ActBufs::new(n_tok, n_cols);
                let mut mm = alloc::vec![0.0; n_tok * n_rows * n_mats];
                let (mut o0, mut o1) = (alloc::vec![0.0; n_tok * n_rows], alloc::vec![0.0; n_tok * n_rows]);
                let mut outs = [&mut o0[..], &mut o1[..]];
                super::matmul(&e, &ws[..n_mats], &x, n_tok, &mut acts, &mut mm, &mut outs[..n_mats]);
                let mut a = alloc::vec![crate::backend::quant::BlockQ8_0::ZERO; n_tok * n_cols / QK8];
                scalar::quantize_rows_q8_0(&x, &mut a);
                let mut want = alloc::vec![0.0; n_rows * n_tok];
                scalar::matmul_rows(&w, Acts::Q8_0(&a), n_tok, 0..n_rows, &mut want);
                for (m, got) in outs[..n_mats].iter().enumerate() {
                    for t in 0..n_tok {
                        for r in 0..n_rows {
                            let want = if m == 0 { want[r * n_tok + t] + bias[r] } else { want[r * n_tok + t] };
                            assert_eq!(got[t * n_rows + r].to_bits(), want.to_bits(), "{n_mats}×{n_tok}: ({t}, {r})");
                        }
                    }
                }
            }
        }
    }

    /// The tiled transpose equals the element-wise one on ragged shapes.
    #[test]
    fn transpose_matches_elementwise() {
        for (nr, n_tok, t0, nt) in [(19usize, 37usize, 5usize, 13usize), (8, 16, 0, 16), (3, 9, 2, 7), (64, 40, 16, 16)]
        {
            let src: Vec<f32> = (0..nr * n_tok).map(|i| i as f32).collect();
            let mut got = alloc::vec![0.0; nt * nr];
            crate::backend::scalar::transpose(&src, n_tok, t0, nt, &mut got, nr);
            for t in 0..nt {
                for r in 0..nr {
                    assert_eq!(got[t * nr + r], src[r * n_tok + t0 + t], "{nr}×{n_tok} t0 {t0}: ({t}, {r})");
                }
            }
        }
    }
}
