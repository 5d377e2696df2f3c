//! Quantized matmul rows for the aarch64 backends, generic over the 8-bit
//! dot (`Plain` NEON or `Sdot`): each weight block is unpacked once per
//! tile of tokens, each (row, token) gets the block's exact integer dot and
//! then the reference's float expression, blocks accumulated in order — so
//! results equal the scalar reference bit for bit. Legacy formats unpack
//! with NEON; K-quants with core's unpacker, their 16-groups dotted with
//! NEON. f32 activations (the exact path) go to `exact`.

use core::ops::Range;

use tern_core::backend::quant::{self, BlockQ8K, BlockQ8_0, BlockQ8_1, QK8, QK_K};
use tern_core::backend::{scalar, Acts, QMatrix};

use super::dots::{idot16, idot32, Idot};
use super::unpack::unpack;

/// Tokens per tile: each weight block is unpacked once per tile.
const TILE: usize = 4;

/// An 8-bit activation block for the 32-element formats.
pub trait Act32 {
    fn qs(&self) -> &[i8];
    fn d(&self) -> f32;
    /// The block's term: `t`, plus `m · s` for Q8_1.
    fn term(&self, t: f32, m: f32) -> f32;
}

impl Act32 for BlockQ8_0 {
    fn qs(&self) -> &[i8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
    #[inline(always)]
    fn term(&self, t: f32, _: f32) -> f32 {
        t
    }
}

impl Act32 for BlockQ8_1 {
    fn qs(&self) -> &[i8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
    #[inline(always)]
    fn term(&self, t: f32, m: f32) -> f32 {
        t + m * self.s
    }
}

#[inline(always)]
pub fn matmul_rows<D: Idot>(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    use tern_core::backend::quant::GgmlType::*;
    let legacy = matches!(w.ty, Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 | IQ4_NL);
    match x {
        Acts::Q8_0(a) if legacy => rows_32::<D, _>(w, a, n_tok, rows, out),
        Acts::Q8_1(a) if legacy => rows_32::<D, _>(w, a, n_tok, rows, out),
        Acts::Q8K(a) => rows_k::<D>(w, a, n_tok, rows, out),
        Acts::F32(x) => super::exact::matmul_rows(w, x, n_tok, rows, out),
        _ => scalar::matmul_rows(w, x, n_tok, rows, out),
    }
}

/// Runs `tile(row, t0, nt, acc)` over every row and tile of tokens, and
/// writes `out[row * n_tok + token]`.
#[inline(always)]
fn tiles(
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
    mut tile: impl FnMut(usize, usize, usize, &mut [f32; TILE]),
) {
    for (i, r) in rows.enumerate() {
        let o = &mut out[i * n_tok..(i + 1) * n_tok];
        for t0 in (0..n_tok).step_by(TILE) {
            let nt = TILE.min(n_tok - t0);
            let mut acc = [0.0f32; TILE];
            tile(r, t0, nt, &mut acc);
            o[t0..t0 + nt].copy_from_slice(&acc[..nt]);
        }
    }
}

#[inline(always)]
fn rows_32<D: Idot, A: Act32>(w: &QMatrix, a: &[A], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let (nb, ts) = (w.n_cols / QK8, w.ty.type_size());
    tiles(n_tok, rows, out, |r, t0, nt, acc| {
        let row = w.row(r);
        for b in 0..nb {
            // The row was validated at load: its type always unpacks.
            let Some(u) = unpack(w.ty, &row[b * ts..(b + 1) * ts]) else { unreachable!() };
            for (j, s) in acc.iter_mut().enumerate().take(nt) {
                let ab = &a[(t0 + j) * nb + b];
                let isum = idot32::<D>(u.q, ab.qs());
                *s += ab.term((u.d * ab.d()) * isum as f32, u.m);
            }
        }
    });
}

#[inline(always)]
fn rows_k<D: Idot>(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let (nb, ts) = (w.n_cols / QK_K, w.ty.type_size());
    tiles(n_tok, rows, out, |r, t0, nt, acc| {
        let row = w.row(r);
        for b in 0..nb {
            let Some(u) = quant::unpack_k(w.ty, &row[b * ts..(b + 1) * ts]) else { unreachable!() };
            for (j, s) in acc.iter_mut().enumerate().take(nt) {
                let ab = &a[(t0 + j) * nb + b];
                let (mut isum, mut imin) = (0i32, 0i32);
                for g in 0..16 {
                    isum += u.sc[g] as i32 * idot16::<D>(&u.q[16 * g..], &ab.qs[16 * g..]);
                    imin += u.mn[g] as i32 * ab.bsums[g] as i32;
                }
                *s += (u.d * ab.d) * isum as f32 - (u.dmin * ab.d) * imin as f32;
            }
        }
    });
}
