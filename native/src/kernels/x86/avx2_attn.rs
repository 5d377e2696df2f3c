//! AVX2 attention of one head over cached f32 or f16 rows, in the scalar
//! reference's order: each score is the contract's 16-lane dot (two 8-wide
//! accumulators, multiply then add) reduced by its fixed tree; the softmax
//! is the reference's own code; each output element accumulates p·v over
//! positions 0, 1, 2, ... — eight elements per instruction. f16 rows widen
//! with F16C, which is exact.

use core::arch::x86_64::*;

use tern_core::kernels::{scalar, KvRows};

/// Eight elements of a row from element `i`, widened to f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn load8(x: KvRows, i: usize) -> __m256 {
    match x {
        KvRows::F32(x) => {
            let x = &x[i..i + 8];
            // SAFETY: `x` has 8 elements.
            unsafe { _mm256_loadu_ps(x.as_ptr()) }
        }
        KvRows::F16(x) => {
            let x = &x[i..i + 8];
            // SAFETY: `x` has 8 f16 = 16 bytes.
            unsafe { _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr() as *const __m128i)) }
        }
    }
}

#[inline]
#[target_feature(enable = "avx2")]
fn loadf(x: &[f32], i: usize) -> __m256 {
    let x = &x[i..i + 8];
    // SAFETY: `x` has 8 elements.
    unsafe { _mm256_loadu_ps(x.as_ptr()) }
}

/// `reduce16` of lanes (lo = 0..8, hi = 8..16): (j + 8), then 4, 2, 1.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn reduce16(lo: __m256, hi: __m256) -> f32 {
    let a = _mm256_add_ps(lo, hi);
    let b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
    let c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps::<1>(c, c)))
}

/// The contract's dot of `q` with the row of `k` starting at `at`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn dot(q: &[f32], k: KvRows, at: usize) -> f32 {
    let hd = q.len();
    let n16 = hd / 16 * 16;
    let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    for i in (0..n16).step_by(16) {
        lo = _mm256_add_ps(lo, _mm256_mul_ps(loadf(q, i), load8(k, at + i)));
        hi = _mm256_add_ps(hi, _mm256_mul_ps(loadf(q, i + 8), load8(k, at + i + 8)));
    }
    if n16 == hd {
        return reduce16(lo, hi);
    }
    // ragged head: finish the lanes the reference's way
    let mut l = [0.0f32; 16];
    // SAFETY: `l` holds 16 f32.
    unsafe {
        _mm256_storeu_ps(l.as_mut_ptr(), lo);
        _mm256_storeu_ps(l.as_mut_ptr().add(8), hi);
    }
    let mut row = [0.0f32; 16];
    k.read(at + n16..at + hd, &mut row[..hd - n16]);
    for (i, (&a, &b)) in q[n16..].iter().zip(&row).enumerate() {
        l[i] += a * b;
    }
    scalar::reduce16(l)
}

#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,f16c")]
pub fn attention_head(
    q: &[f32],
    k: KvRows,
    v: KvRows,
    kv_stride: usize,
    n_kv: usize,
    scale: f32,
    scores: &mut [f32],
    out: &mut [f32],
) {
    let hd = q.len();
    let scores = &mut scores[..n_kv];
    let mut max = f32::NEG_INFINITY;
    for (t, s) in scores.iter_mut().enumerate() {
        *s = dot(q, k, t * kv_stride) * scale;
        max = max.max(*s);
    }
    let inv = super::exp::softmax_exp(scores, max);
    let n8 = hd / 8 * 8;
    let mut row = [0.0f32; 8];
    for i0 in (0..hd).step_by(32) {
        // up to 32 output elements in registers across all positions
        let w = (hd - i0).min(32);
        let mut acc = [_mm256_setzero_ps(); 4];
        let nv = w / 8;
        for (t, &e) in scores.iter().enumerate() {
            let p = _mm256_set1_ps(e * inv);
            for (j, a) in acc[..nv].iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, _mm256_mul_ps(p, load8(v, t * kv_stride + i0 + 8 * j)));
            }
        }
        for (j, a) in acc[..nv].iter().enumerate() {
            // SAFETY: `out` has hd ≥ i0 + 8(j + 1) elements.
            unsafe { _mm256_storeu_ps(out[i0 + 8 * j..].as_mut_ptr(), *a) };
        }
        if i0 + w == hd && n8 < hd {
            // ragged head tail, scalar in the same order
            let tail = &mut out[n8..hd];
            tail.fill(0.0);
            for (t, &e) in scores.iter().enumerate() {
                let p = e * inv;
                v.read(t * kv_stride + n8..t * kv_stride + hd, &mut row[..hd - n8]);
                for (o, &vv) in tail.iter_mut().zip(&row) {
                    *o += p * vv;
                }
            }
        }
    }
}
