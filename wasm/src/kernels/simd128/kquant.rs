//! K-quant super-blocks (Q4_K, Q6_K) against Q8_K activations, one row at
//! a time: each 16-element group's exact integer dot, times its scale, summed
//! in i32 lanes (exact), then the reference's float expression per
//! super-block — bit for bit `scalar::matmul_rows`.

use core::arch::wasm32::*;
use core::ops::Range;

use tern_core::kernels::QMatrix;
use tern_core::quant::{f16_at, q4_k, BlockQ8K, GgmlType, QK_K};

use super::v;

pub fn handles(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K)
}

/// `Σ q·a` of group `g` from its even and odd elements' i16 lanes.
#[inline(always)]
fn group(even: v128, odd: v128, aw: &[i16], g: usize) -> v128 {
    i32x4_add(i32x4_dot_i16x8(even, v::load16(aw, 16 * g)), i32x4_dot_i16x8(odd, v::load16(aw, 16 * g + 8)))
}

/// One Q4_K super-block: (Σ_g sc_g·dot_g, Σ_g mn_g·bsum_g).
#[inline(always)]
fn q4k_block(b: &[u8], a: &BlockQ8K, aw: &[i16]) -> (i32, i32) {
    let mut sc = [0i32; 8];
    let mut imin = 0i32;
    for (j, s) in sc.iter_mut().enumerate() {
        let (c, m) = q4_k::scale_min(j, &b[4..16]);
        *s = c as i32;
        imin += m as i32 * (a.bsums[2 * j] as i32 + a.bsums[2 * j + 1] as i32);
    }
    let m = i16x8_splat(0x0f);
    let mut acc = i32x4_splat(0);
    for i in 0..4 {
        // bytes 32i..32i+32: low nibbles are sub-block 2i (groups 4i, 4i+1),
        // high nibbles sub-block 2i+1 (groups 4i+2, 4i+3)
        let mut lo = i32x4_splat(0);
        let mut hi = i32x4_splat(0);
        for h in 0..2 {
            let x = v::load(b, 16 + 32 * i + 16 * h);
            let (e_lo, e_hi) = (v128_and(x, m), v128_and(u16x8_shr(x, 4), m));
            let (o_lo, o_hi) = (v128_and(u16x8_shr(x, 8), m), u16x8_shr(x, 12));
            lo = i32x4_add(lo, group(e_lo, o_lo, aw, 4 * i + h));
            hi = i32x4_add(hi, group(e_hi, o_hi, aw, 4 * i + 2 + h));
        }
        acc = i32x4_add(acc, i32x4_mul(lo, i32x4_splat(sc[2 * i])));
        acc = i32x4_add(acc, i32x4_mul(hi, i32x4_splat(sc[2 * i + 1])));
    }
    (v::hsum(acc), imin)
}

/// One Q6_K super-block: Σ_g sc_g·dot_g with the stored 6-bit quants (the
/// −32 offset folded in through the activations' group sums).
#[inline(always)]
fn q6k_block(b: &[u8], a: &BlockQ8K, aw: &[i16]) -> i32 {
    let sc = |g: usize| b[192 + g] as i8 as i32;
    let m4 = i16x8_splat(0x0f);
    let m2 = i16x8_splat(0x30);
    let mut acc = i32x4_splat(0);
    let mut offset = 0i32;
    for g in 0..16 {
        offset += sc(g) * a.bsums[g] as i32;
    }
    for half in 0..2 {
        for l0 in [0, 16] {
            let ql = v::load(b, 64 * half + l0);
            let ql2 = v::load(b, 64 * half + l0 + 32);
            let qh = v::load(b, 128 + 32 * half + l0);
            let g0 = 8 * half + l0 / 16;
            // elements l (low nibble of ql, qh bits 0-1), l+32 (ql2, bits 2-3),
            // l+64 (high nibble of ql, bits 4-5), l+96 (ql2, bits 6-7)
            let parts = [
                (
                    v128_and(ql, m4),
                    v128_and(i16x8_shl(qh, 4), m2),
                    v128_and(u16x8_shr(ql, 8), m4),
                    v128_and(u16x8_shr(qh, 4), m2),
                ),
                (
                    v128_and(ql2, m4),
                    v128_and(i16x8_shl(qh, 2), m2),
                    v128_and(u16x8_shr(ql2, 8), m4),
                    v128_and(u16x8_shr(qh, 6), m2),
                ),
                (
                    v128_and(u16x8_shr(ql, 4), m4),
                    v128_and(qh, m2),
                    v128_and(u16x8_shr(ql, 12), m4),
                    v128_and(u16x8_shr(qh, 8), m2),
                ),
                (
                    v128_and(u16x8_shr(ql2, 4), m4),
                    v128_and(u16x8_shr(qh, 2), m2),
                    u16x8_shr(ql2, 12),
                    v128_and(u16x8_shr(qh, 10), m2),
                ),
            ];
            for (k, (el, eh, ol, oh)) in parts.into_iter().enumerate() {
                let g = g0 + 2 * k;
                let p = group(v128_or(el, eh), v128_or(ol, oh), aw, g);
                acc = i32x4_add(acc, i32x4_mul(p, i32x4_splat(sc(g))));
            }
        }
    }
    v::hsum(acc) - 32 * offset
}

/// Rows `rows` of `w` against one token (`a` its blocks, `aw` its widened
/// quants); `out[i * stride]` for the i-th row.
pub fn rows(w: &QMatrix, a: &[BlockQ8K], aw: &[i16], rows: Range<usize>, out: &mut [f32], stride: usize) {
    let nb = w.n_cols / QK_K;
    for (i, r) in rows.enumerate() {
        let row = w.row(r);
        let mut acc = 0.0f32;
        for (b, ab) in a[..nb].iter().enumerate() {
            let aw = &aw[b * QK_K..(b + 1) * QK_K];
            let (blk, isum, imin, d, dmin) = match w.ty {
                GgmlType::Q4_K => {
                    let blk = &row[b * 144..(b + 1) * 144];
                    let (isum, imin) = q4k_block(blk, ab, aw);
                    (blk, isum, imin, f16_at(blk, 0), f16_at(blk, 2))
                }
                _ => {
                    let blk = &row[b * 210..(b + 1) * 210];
                    (blk, q6k_block(blk, ab, aw), 0, f16_at(blk, 208), 0.0)
                }
            };
            let _ = blk;
            acc += (d * ab.d) * isum as f32 - (dmin * ab.d) * imin as f32;
        }
        out[i * stride] = acc;
    }
}
