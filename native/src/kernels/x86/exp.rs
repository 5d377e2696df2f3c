//! `expf` eight lanes at a time, bit-identical to `libm::expf` (FreeBSD's
//! e_expf.c, which the reference uses): the same argument reduction, the
//! same polynomial and division, and scalbn's same two-step scaling, done
//! with exactly rounded vector operations (no FMA) and the special cases
//! blended in. Used for the softmax, SiLU and GELU.

use core::arch::x86_64::*;

use tern_core::backend::scalar;

use super::cpu::Avx2;
use super::simd::{loadf, storef};

// e_expf.c's constants, by their bits
const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b);
const P1: f32 = f32::from_bits(0x3e2a_aa8f);
const P2: f32 = f32::from_bits(0xbb35_5215);

/// `2^n` for n in −126..=127, lane-wise.
#[inline]
#[target_feature(enable = "avx2")]
fn pow2(n: __m256i) -> __m256 {
    _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(n, _mm256_set1_epi32(127))))
}

#[inline]
#[target_feature(enable = "avx2")]
fn expf8(x: __m256) -> __m256 {
    let bits = _mm256_castps_si256(x);
    let hx = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fff_ffff));
    let neg = _mm256_srai_epi32::<31>(bits); // all ones where x < 0
    let gt = |v: i32| _mm256_cmpgt_epi32(hx, _mm256_set1_epi32(v));
    let f = |v: __m256i| _mm256_castsi256_ps(v);

    // argument reduction: k = round(x / ln2) for |x| > 1.5 ln2, ±1 above
    // 0.5 ln2, else 0 (then hi = x, lo = 0 and x is unchanged below)
    let half = _mm256_blendv_ps(_mm256_set1_ps(0.5), _mm256_set1_ps(-0.5), f(neg));
    let k_big = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(INV_LN2), x), half));
    let k_one = _mm256_or_si256(neg, _mm256_set1_epi32(1)); // 1 − 2·sign
    let k = _mm256_blendv_epi8(k_one, k_big, gt(0x3f85_1592));
    let k = _mm256_and_si256(k, gt(0x3eb1_7218));
    let kf = _mm256_cvtepi32_ps(k);
    let hi = _mm256_sub_ps(x, _mm256_mul_ps(kf, _mm256_set1_ps(LN2_HI)));
    let lo = _mm256_mul_ps(kf, _mm256_set1_ps(LN2_LO));
    let r = _mm256_sub_ps(hi, lo);

    // y = 1 + (r·c / (2 − c) − lo + hi)
    let rr = _mm256_mul_ps(r, r);
    let poly = _mm256_add_ps(_mm256_set1_ps(P1), _mm256_mul_ps(rr, _mm256_set1_ps(P2)));
    let c = _mm256_sub_ps(r, _mm256_mul_ps(rr, poly));
    let q = _mm256_div_ps(_mm256_mul_ps(r, c), _mm256_sub_ps(_mm256_set1_ps(2.0), c));
    let y = _mm256_add_ps(_mm256_set1_ps(1.0), _mm256_add_ps(_mm256_sub_ps(q, lo), hi));

    // every lane with 2^−14 < |x| ≤ 87 (a softmax's usual arguments): k
    // lies in −126..=127, so scalbn takes one step and no case below
    // applies — the same bits without them
    if _mm256_movemask_epi8(_mm256_andnot_si256(gt(0x42ae_0000), gt(0x3900_0000))) == -1 {
        return _mm256_mul_ps(y, pow2(k));
    }

    // scalbn(y, k): a first step of 2^127 or 2^−102 when k is out of range
    let big = _mm256_cmpgt_epi32(k, _mm256_set1_epi32(127));
    let small = _mm256_cmpgt_epi32(_mm256_set1_epi32(-126), k);
    let n1 = _mm256_or_si256(
        _mm256_and_si256(big, _mm256_set1_epi32(127)),
        _mm256_and_si256(small, _mm256_set1_epi32(-102)),
    );
    let y = _mm256_mul_ps(_mm256_mul_ps(y, pow2(n1)), pow2(_mm256_sub_epi32(k, n1)));

    // |x| ≤ 2^−14: 1 + x
    let y = _mm256_blendv_ps(_mm256_add_ps(_mm256_set1_ps(1.0), x), y, f(gt(0x3900_0000)));
    // overflow (x ≥ 88.72…): x·2^127; underflow (x ≤ −103.97…): 0; NaN: x
    let over = _mm256_andnot_si256(neg, _mm256_cmpgt_epi32(hx, _mm256_set1_epi32(0x42b1_7217)));
    let y = _mm256_blendv_ps(y, _mm256_mul_ps(x, _mm256_set1_ps(f32::from_bits(0x7f00_0000))), f(over));
    let under = _mm256_and_si256(neg, _mm256_cmpgt_epi32(hx, _mm256_set1_epi32(0x42cf_f1b4)));
    let y = _mm256_andnot_ps(f(under), y);
    _mm256_blendv_ps(y, x, f(gt(0x7f80_0000)))
}

/// As `scalar::exp_shifted`: `s = exp(s − m)`.
pub(super) fn exp_shifted(_: Avx2, s: &mut [f32], m: f32) {
    // SAFETY: the token proves AVX2.
    unsafe { exp_shifted_imp(s, m) }
}

#[target_feature(enable = "avx2")]
fn exp_shifted_imp(s: &mut [f32], m: f32) {
    let n8 = s.len() / 8 * 8;
    let mv = _mm256_set1_ps(m);
    for c in s[..n8].chunks_exact_mut(8) {
        storef(c, 0, expf8(_mm256_sub_ps(loadf(c, 0), mv)));
    }
    scalar::exp_shifted(&mut s[n8..], m);
}

/// As `scalar::swiglu`: `g = g / (1 + exp(−g)) · u`.
pub(super) fn swiglu(_: Avx2, g: &mut [f32], u: &[f32]) {
    // SAFETY: the token proves AVX2.
    unsafe { swiglu_imp(g, u) }
}

#[target_feature(enable = "avx2")]
fn swiglu_imp(g: &mut [f32], u: &[f32]) {
    let n8 = g.len() / 8 * 8;
    for (g, u) in g[..n8].chunks_exact_mut(8).zip(u.chunks_exact(8)) {
        let x = loadf(g, 0);
        let e = expf8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0)));
        storef(g, 0, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0), e)), loadf(u, 0)));
    }
    scalar::swiglu(&mut g[n8..], &u[n8..]);
}

/// As `scalar::geglu`: `g = g / (1 + exp(−z)) · u`, z = 2√(2/π)·g·(1 + 0.044715·g²).
pub(super) fn geglu(_: Avx2, g: &mut [f32], u: &[f32]) {
    // SAFETY: the token proves AVX2.
    unsafe { geglu_imp(g, u) }
}

#[target_feature(enable = "avx2")]
fn geglu_imp(g: &mut [f32], u: &[f32]) {
    let n8 = g.len() / 8 * 8;
    let (k, c, one) = (_mm256_set1_ps(scalar::TWO_SQRT_2_OVER_PI), _mm256_set1_ps(scalar::GELU_C), _mm256_set1_ps(1.0));
    for (g, u) in g[..n8].chunks_exact_mut(8).zip(u.chunks_exact(8)) {
        let x = loadf(g, 0);
        // the reference's order: (k·x) · (1 + (c·x)·x)
        let z = _mm256_mul_ps(_mm256_mul_ps(k, x), _mm256_add_ps(one, _mm256_mul_ps(_mm256_mul_ps(c, x), x)));
        let e = expf8(_mm256_xor_ps(z, _mm256_set1_ps(-0.0)));
        storef(g, 0, _mm256_mul_ps(_mm256_div_ps(x, _mm256_add_ps(one, e)), loadf(u, 0)));
    }
    scalar::geglu(&mut g[n8..], &u[n8..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expf8` against libm's `expf` (core's `check_expf` cases).
    #[test]
    fn expf8_equals_libm() {
        if !is_x86_feature_detected!("avx2") {
            return;
        }
        // SAFETY: AVX2 checked above.
        tern_core::backend::conformance::check_expf(8, |g| unsafe { storef(g, 0, expf8(loadf(g, 0))) }).unwrap();
    }
}
