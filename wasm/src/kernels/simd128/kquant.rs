//! K-quant super-blocks (Q4_K, Q6_K) against Q8_K activations, one row at
//! a time for `T` tokens (each super-block unpacked once for all of them):
//! each 16-element group's exact integer dot, times its scale, summed in i32
//! lanes (exact), then the reference's float expression per super-block —
//! bit for bit `scalar::matmul_rows`.

use core::arch::wasm32::*;
use core::ops::Range;

use tern_core::kernels::QMatrix;
use tern_core::quant::{f16_at, q4_k, BlockQ8K, GgmlType, QK_K};

use super::v;

pub fn handles(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K)
}

/// One token's super-block: its 8-bit block and widened (eo16) quants.
type Act<'a> = (&'a BlockQ8K, &'a [i16]);

/// `Σ q·a` of group `g` from its even and odd elements' i16 lanes.
#[inline(always)]
fn group(even: v128, odd: v128, aw: &[i16], g: usize) -> v128 {
    i32x4_add(i32x4_dot_i16x8(even, v::load16(aw, 16 * g)), i32x4_dot_i16x8(odd, v::load16(aw, 16 * g + 8)))
}

/// One Q4_K super-block for each token: (Σ_g sc_g·dot_g, Σ_g mn_g·bsum_g).
#[inline(always)]
fn q4k_block<const T: usize>(b: &[u8], a: [Act; T]) -> [(i32, i32); T] {
    let mut sc = [0i32; 8];
    let mut imin = [0i32; T];
    for (j, s) in sc.iter_mut().enumerate() {
        let (c, m) = q4_k::scale_min(j, &b[4..16]);
        *s = c as i32;
        for (im, (ab, _)) in imin.iter_mut().zip(&a) {
            *im += m as i32 * (ab.bsums[2 * j] as i32 + ab.bsums[2 * j + 1] as i32);
        }
    }
    let m = i16x8_splat(0x0f);
    let mut acc = [i32x4_splat(0); T];
    for i in 0..4 {
        // bytes 32i..32i+32: low nibbles are sub-block 2i (groups 4i, 4i+1),
        // high nibbles sub-block 2i+1 (groups 4i+2, 4i+3)
        let mut lo = [i32x4_splat(0); T];
        let mut hi = [i32x4_splat(0); T];
        for h in 0..2 {
            let x = v::load(b, 16 + 32 * i + 16 * h);
            let (e_lo, e_hi) = (v128_and(x, m), v128_and(u16x8_shr(x, 4), m));
            let (o_lo, o_hi) = (v128_and(u16x8_shr(x, 8), m), u16x8_shr(x, 12));
            for t in 0..T {
                lo[t] = i32x4_add(lo[t], group(e_lo, o_lo, a[t].1, 4 * i + h));
                hi[t] = i32x4_add(hi[t], group(e_hi, o_hi, a[t].1, 4 * i + 2 + h));
            }
        }
        let (s_lo, s_hi) = (i32x4_splat(sc[2 * i]), i32x4_splat(sc[2 * i + 1]));
        for t in 0..T {
            acc[t] = i32x4_add(acc[t], i32x4_add(i32x4_mul(lo[t], s_lo), i32x4_mul(hi[t], s_hi)));
        }
    }
    core::array::from_fn(|t| (v::hsum(acc[t]), imin[t]))
}

/// One Q6_K super-block for each token: Σ_g sc_g·dot_g with the stored
/// 6-bit quants (the −32 offset folded in through the group sums).
#[inline(always)]
fn q6k_block<const T: usize>(b: &[u8], a: [Act; T]) -> [i32; T] {
    let sc = |g: usize| b[192 + g] as i8 as i32;
    let m4 = i16x8_splat(0x0f);
    let m2 = i16x8_splat(0x30);
    let mut acc = [i32x4_splat(0); T];
    let offset: [i32; T] = core::array::from_fn(|t| (0..16).map(|g| sc(g) * a[t].0.bsums[g] as i32).sum());
    for c in 0..4 {
        let (half, l0) = (c / 2, 16 * (c % 2));
        let ql = v::load(b, 64 * half + l0);
        let ql2 = v::load(b, 64 * half + l0 + 32);
        let qh = v::load(b, 128 + 32 * half + l0);
        let g0 = 8 * half + l0 / 16;
        // elements l (low nibble of ql, qh bits 0-1), l+32 (ql2, bits 2-3),
        // l+64 (high nibble of ql, bits 4-5), l+96 (ql2, bits 6-7)
        let parts = [
            (v128_and(ql, m4), v128_and(i16x8_shl(qh, 4), m2), v128_and(u16x8_shr(ql, 8), m4), v128_and(u16x8_shr(qh, 4), m2)),
            (v128_and(ql2, m4), v128_and(i16x8_shl(qh, 2), m2), v128_and(u16x8_shr(ql2, 8), m4), v128_and(u16x8_shr(qh, 6), m2)),
            (v128_and(u16x8_shr(ql, 4), m4), v128_and(qh, m2), v128_and(u16x8_shr(ql, 12), m4), v128_and(u16x8_shr(qh, 8), m2)),
            (v128_and(u16x8_shr(ql2, 4), m4), v128_and(u16x8_shr(qh, 2), m2), u16x8_shr(ql2, 12), v128_and(u16x8_shr(qh, 10), m2)),
        ];
        for (k, (el, eh, ol, oh)) in parts.into_iter().enumerate() {
            let g = g0 + 2 * k;
            let (e, o) = (v128_or(el, eh), v128_or(ol, oh));
            let s = i32x4_splat(sc(g));
            for t in 0..T {
                acc[t] = i32x4_add(acc[t], i32x4_mul(group(e, o, a[t].1, g), s));
            }
        }
    }
    core::array::from_fn(|t| v::hsum(acc[t]) - 32 * offset[t])
}

/// `row · activations` of `T` tokens (`a[t]`: its blocks and widened quants).
#[inline(always)]
fn row<const T: usize>(ty: GgmlType, row: &[u8], a: [(&[BlockQ8K], &[i16]); T], nb: usize) -> [f32; T] {
    let mut acc = [0.0f32; T];
    for b in 0..nb {
        let act: [Act; T] = core::array::from_fn(|t| (&a[t].0[b], &a[t].1[b * QK_K..(b + 1) * QK_K]));
        match ty {
            GgmlType::Q4_K => {
                let blk = &row[b * 144..(b + 1) * 144];
                let (d, dmin) = (f16_at(blk, 0), f16_at(blk, 2));
                for (t, (isum, imin)) in q4k_block(blk, act).into_iter().enumerate() {
                    let ad = act[t].0.d;
                    acc[t] += (d * ad) * isum as f32 - (dmin * ad) * imin as f32;
                }
            }
            _ => {
                let blk = &row[b * 210..(b + 1) * 210];
                let d = f16_at(blk, 208);
                for (t, isum) in q6k_block(blk, act).into_iter().enumerate() {
                    let ad = act[t].0.d;
                    acc[t] += (d * ad) * isum as f32 - (0.0 * ad) * 0.0;
                }
            }
        }
    }
    acc
}

/// Tokens a prefill tile takes at once.
const TILE: usize = 2;

/// Rows `rows` of `w` against all `n_tok` tokens (`a` their blocks, `aw`
/// their widened quants, token after token); `out` row-major by row.
pub fn rows(w: &QMatrix, a: &[BlockQ8K], aw: &[i16], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK_K;
    let tok = |t: usize| (&a[t * nb..(t + 1) * nb], &aw[t * nb * QK_K..(t + 1) * nb * QK_K]);
    let full = n_tok / TILE * TILE;
    for (i, r) in rows.enumerate() {
        let o = &mut out[i * n_tok..(i + 1) * n_tok];
        for t0 in (0..full).step_by(TILE) {
            o[t0..t0 + TILE].copy_from_slice(&row::<TILE>(w.ty, w.row(r), core::array::from_fn(|k| tok(t0 + k)), nb));
        }
        for t in full..n_tok {
            o[t] = row::<1>(w.ty, w.row(r), [tok(t)], nb)[0];
        }
    }
}
