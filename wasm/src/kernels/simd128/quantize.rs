//! 8-bit activation quantizers: the reference's (`quant::quantize_q8_*`)
//! arithmetic four lanes at a time — the block's largest |x| by
//! comparison (NaNs skipped), `d = amax / 127`, each `x · (1/d)` rounded
//! by adding and subtracting 1.5·2^23 and clamped to ±127 — so the blocks
//! are equal bit for bit. The integer sums are exact in any order.

use core::arch::wasm32::*;

use tern_core::backend::quant::{f16_round, scale_of_amax, BlockQ8K, BlockQ8_0, BlockQ8_1, QK8, QK_K};

use super::v;

/// The largest |x| of `x` (a multiple of 4 long), 0 if none is larger.
#[inline(always)]
fn amax(x: &[f32]) -> f32 {
    let mut m = f32x4_splat(0.0);
    for i in (0..x.len()).step_by(4) {
        let a = f32x4_abs(v::load(x, i));
        m = v128_bitselect(a, m, f32x4_gt(a, m));
    }
    let l = [
        f32x4_extract_lane::<0>(m),
        f32x4_extract_lane::<1>(m),
        f32x4_extract_lane::<2>(m),
        f32x4_extract_lane::<3>(m),
    ];
    l.iter().fold(0.0f32, |a, &v| if v > a { v } else { a })
}

/// `(d, 1/d)` of a block, as `quant`'s `scale_of`.
#[inline(always)]
fn scale_of(x: &[f32]) -> (f32, f32) {
    scale_of_amax(amax(x))
}

/// 16 quants of `x[at..at + 16]` into `qs[at..]`; their sums as i32 lanes.
#[inline(always)]
fn q16(x: &[f32], at: usize, id: v128, qs: &mut [i8]) -> v128 {
    let magic = f32x4_splat(12582912.0);
    let (lo, hi) = (f32x4_splat(-127.0), f32x4_splat(127.0));
    let q = |k: usize| {
        let r = f32x4_sub(f32x4_add(f32x4_mul(v::load(x, at + 4 * k), id), magic), magic);
        // NaN stays NaN through min/max and truncates to 0, as `as i8`
        i32x4_trunc_sat_f32x4(f32x4_min(f32x4_max(r, lo), hi))
    };
    let (a, b, c, d) = (q(0), q(1), q(2), q(3));
    v::store(qs, at, i8x16_narrow_i16x8(i16x8_narrow_i32x4(a, b), i16x8_narrow_i32x4(c, d)));
    i32x4_add(i32x4_add(a, b), i32x4_add(c, d))
}

/// The quants of a block of `x.len()` (a multiple of 16); their sum.
#[inline(always)]
fn quants(x: &[f32], id: f32, qs: &mut [i8]) -> i32 {
    let id = f32x4_splat(id);
    let mut s = i32x4_splat(0);
    for at in (0..x.len()).step_by(16) {
        s = i32x4_add(s, q16(x, at, id, qs));
    }
    v::hsum(s)
}

pub fn rows_q8_0(x: &[f32], out: &mut [BlockQ8_0]) {
    for (x, b) in x.chunks_exact(QK8).zip(out) {
        let (d, id) = scale_of(x);
        b.d = f16_round(d);
        quants(x, id, &mut b.qs);
    }
}

pub fn rows_q8_1(x: &[f32], out: &mut [BlockQ8_1]) {
    for (x, b) in x.chunks_exact(QK8).zip(out) {
        let (d, id) = scale_of(x);
        let sum = quants(x, id, &mut b.qs);
        b.d = f16_round(d);
        b.s = f16_round(d * sum as f32);
    }
}

pub fn rows_q8_k(x: &[f32], out: &mut [BlockQ8K]) {
    for (x, b) in x.chunks_exact(QK_K).zip(out) {
        let (d, id) = scale_of(x);
        b.d = d;
        let id = f32x4_splat(id);
        for (g, s) in b.bsums.iter_mut().enumerate() {
            *s = v::hsum(q16(x, 16 * g, id, &mut b.qs)) as i16;
        }
    }
}
