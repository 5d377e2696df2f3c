//! 8-bit activation quantizers in AVX-512: the reference's
//! (`quant::quantize_q8_*`) arithmetic sixteen lanes at a time — the
//! block's largest |x| by comparison (NaNs skipped), `d = amax / 127`, each
//! `x · (1/d)` rounded by adding and subtracting 1.5·2^23 and clamped to
//! ±127 — so the blocks are equal bit for bit. The integer sums are exact
//! in any order.

use core::arch::x86_64::*;

use tern_core::backend::quant::{f16_round, scale_of_amax, BlockQ8K, BlockQ8_0, BlockQ8_1, QK8, QK_K};

use super::cpu::Avx512;

/// `(d, 1/d)` of a block (a multiple of 16 long), as `quant`'s `scale_of`:
/// `vmaxps` keeps its second operand when the first is NaN, so NaNs are
/// skipped as the reference's comparison skips them.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn scale_of(x: &[f32]) -> (f32, f32) {
    let mut m = _mm512_setzero_ps();
    for c in x.chunks_exact(16) {
        // SAFETY: 16 floats of the 16 in `c`.
        m = _mm512_max_ps(_mm512_abs_ps(unsafe { _mm512_loadu_ps(c.as_ptr()) }), m);
    }
    // no NaN left, all ≥ +0: the largest lane in any order
    scale_of_amax(_mm512_reduce_max_ps(m))
}

/// 16 quants of `x` (16 floats) into `qs` (16 bytes); their sum.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn q16(x: &[f32], id: __m512, qs: &mut [i8]) -> i32 {
    assert!(x.len() >= 16 && qs.len() >= 16);
    let magic = _mm512_set1_ps(12582912.0);
    // SAFETY: 16 floats of `x` (asserted).
    let v = unsafe { _mm512_loadu_ps(x.as_ptr()) };
    let r = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(v, id), magic), magic);
    // NaN stays NaN through both (the operand kept on NaN is the second)
    let r = _mm512_min_ps(_mm512_set1_ps(127.0), _mm512_max_ps(_mm512_set1_ps(-127.0), r));
    // NaN truncates to 0, as `as i8` does
    let q = _mm512_maskz_cvttps_epi32(_mm512_cmp_ps_mask::<_CMP_ORD_Q>(r, r), r);
    // SAFETY: 16 bytes into `qs` (asserted).
    unsafe { _mm_storeu_si128(qs.as_mut_ptr().cast(), _mm512_cvtepi32_epi8(q)) };
    _mm512_reduce_add_epi32(q)
}

/// The quants of a block of `x.len()` (a multiple of 16); their sum.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn quants(x: &[f32], id: f32, qs: &mut [i8]) -> i32 {
    let id = _mm512_set1_ps(id);
    x.chunks_exact(16).zip(qs.chunks_exact_mut(16)).map(|(x, qs)| q16(x, id, qs)).sum()
}

pub(super) fn rows_q8_0(_: Avx512, x: &[f32], out: &mut [BlockQ8_0]) {
    #[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
    fn imp(x: &[f32], out: &mut [BlockQ8_0]) {
        for (x, b) in x.chunks_exact(QK8).zip(out) {
            let (d, id) = scale_of(x);
            b.d = f16_round(d);
            quants(x, id, &mut b.qs);
        }
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, out) }
}

pub(super) fn rows_q8_1(_: Avx512, x: &[f32], out: &mut [BlockQ8_1]) {
    #[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
    fn imp(x: &[f32], out: &mut [BlockQ8_1]) {
        for (x, b) in x.chunks_exact(QK8).zip(out) {
            let (d, id) = scale_of(x);
            let sum = quants(x, id, &mut b.qs);
            b.d = f16_round(d);
            b.s = f16_round(d * sum as f32);
        }
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, out) }
}

pub(super) fn rows_q8_k(_: Avx512, x: &[f32], out: &mut [BlockQ8K]) {
    #[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
    fn imp(x: &[f32], out: &mut [BlockQ8K]) {
        for (x, b) in x.chunks_exact(QK_K).zip(out) {
            let (d, id) = scale_of(x);
            b.d = d;
            let id = _mm512_set1_ps(id);
            for (g, s) in b.bsums.iter_mut().enumerate() {
                *s = q16(&x[16 * g..], id, &mut b.qs[16 * g..]) as i16;
            }
        }
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, out) }
}
