//! AVX-512 attention of a prompt's run of queries, four at a time: each
//! block of transposed keys and each widened value row is read once for
//! four queries instead of once per query (a head_dim-256 prompt streams
//! 1 MiB of K and V per query from L2/L3 otherwise). Each query's numbers
//! are `attention.rs`'s: the same partial sums in the same order (the 16
//! partial sums of a dot are independent, so they are formed four at a
//! time for four queries: 16 registers of the 32 AVX-512 gives), the same
//! softmax, and each output element accumulating p·v over positions in
//! order, 16 elements to a register.

use core::arch::x86_64::*;

use tern_core::backend::{Cached, Queries};

use super::attention::{self, keys_and_values, loadf, softmax, TRANSPOSE_MIN};
use super::cpu::Avx512;

/// Queries worked on together.
const G: usize = 4;

/// `Kernels::attention_queries` on AVX-512.
pub(super) fn attention_queries(t: Avx512, qs: Queries, kv: Cached, scores: &mut [f32], out: &mut [f32]) {
    let hd = out.len() / qs.n_kv.len().max(1);
    if qs.n_kv.len() < TRANSPOSE_MIN || !hd.is_multiple_of(16) {
        return attention::attention_queries(t.avx2(), qs, kv, scores, out);
    }
    // SAFETY: the token proves AVX-512 F and VL, AVX2, FMA and F16C.
    unsafe { queries(qs, kv, hd, out) }
}

#[target_feature(enable = "avx512f,avx512vl,avx2,fma,f16c")]
fn queries(qs: Queries, kv: Cached, hd: usize, out: &mut [f32]) {
    let n_kv = qs.n_kv;
    let max_kv = n_kv.iter().copied().max().unwrap_or(0);
    let (kt, vf) = keys_and_values(kv, max_kv, hd);
    let stride = max_kv.div_ceil(8) * 8;
    let mut sc = vec![0.0f32; G * stride];
    let mut inv = [0.0f32; G];
    for j0 in (0..n_kv.len()).step_by(G) {
        let m = (n_kv.len() - j0).min(G);
        // a short last group repeats its last query (its numbers unused)
        let q = |g: usize| {
            let j = j0 + g.min(m - 1);
            &qs.q[j * qs.stride..j * qs.stride + hd]
        };
        let (qg, lens) = ([q(0), q(1), q(2), q(3)], &n_kv[j0..j0 + m]);
        let scale = _mm256_set1_ps(qs.score.scale);
        for b in 0..lens.iter().max().unwrap().div_ceil(8) {
            let s4 = scores8x4(qg, &kt[b * 8 * hd..(b + 1) * 8 * hd]);
            for (g, s) in s4.iter().enumerate().take(m) {
                // SAFETY: row g of `sc` has `stride` ≥ 8(b + 1) elements.
                unsafe { _mm256_storeu_ps(sc[g * stride + b * 8..].as_mut_ptr(), _mm256_mul_ps(*s, scale)) };
            }
        }
        for (g, &n) in lens.iter().enumerate() {
            inv[g] = softmax(&mut sc[g * stride..g * stride + n], qs.score);
        }
        weighted_sum4(&sc, stride, &inv[..m], lens, &vf, hd, &mut out[j0 * hd..(j0 + m) * hd]);
    }
}

/// `attention::scores8` of four queries over one block of 8 transposed
/// keys: partial sums l0..l0+4 of all four at a time, each over its
/// elements in order, then each query's 16 reduced by the fixed tree.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
// indexed loops with constant bounds keep the partial sums in registers
#[allow(clippy::needless_range_loop)]
fn scores8x4(q: [&[f32]; G], kt: &[f32]) -> [__m256; G] {
    let hd = q[0].len();
    let mut part = [[_mm256_setzero_ps(); 16]; G];
    for l0 in (0..16).step_by(4) {
        let mut acc = [[_mm256_setzero_ps(); 4]; G];
        for d0 in (0..hd).step_by(16) {
            for i in 0..4 {
                let d = d0 + l0 + i;
                let k = loadf(kt, d * 8);
                for g in 0..G {
                    acc[g][i] = _mm256_add_ps(acc[g][i], _mm256_mul_ps(_mm256_set1_ps(q[g][d]), k));
                }
            }
        }
        for g in 0..G {
            part[g][l0..l0 + 4].copy_from_slice(&acc[g]);
        }
    }
    let mut s = [_mm256_setzero_ps(); G];
    for (g, p) in part.iter_mut().enumerate() {
        for w in [8, 4, 2, 1] {
            for j in 0..w {
                p[j] = _mm256_add_ps(p[j], p[j + w]);
            }
        }
        s[g] = p[0];
    }
    s
}

/// `attention::weighted_sum` of up to four queries over f32 value rows
/// (stride `hd`): query g's `out[g·hd..]` = Σ_t (p_g[t] · inv_g) · v_t over
/// its `lens[g]` positions in order, 64 elements at a time.
#[target_feature(enable = "avx512f")]
fn weighted_sum4(p: &[f32], stride: usize, inv: &[f32], lens: &[usize], v: &[f32], hd: usize, out: &mut [f32]) {
    for i0 in (0..hd).step_by(64) {
        match (hd - i0).min(64) / 16 {
            4 => chunk::<4>(p, stride, inv, lens, v, hd, i0, out),
            3 => chunk::<3>(p, stride, inv, lens, v, hd, i0, out),
            2 => chunk::<2>(p, stride, inv, lens, v, hd, i0, out),
            _ => chunk::<1>(p, stride, inv, lens, v, hd, i0, out),
        }
    }
}

/// Elements i0..i0 + 16·NV of every query's output, in registers across
/// all positions.
#[inline]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
fn chunk<const NV: usize>(
    p: &[f32],
    stride: usize,
    inv: &[f32],
    lens: &[usize],
    v: &[f32],
    hd: usize,
    i0: usize,
    out: &mut [f32],
) {
    let mut acc = [[_mm512_setzero_ps(); NV]; G];
    let n_max = lens.iter().copied().max().unwrap_or(0);
    for t in 0..n_max {
        let row = &v[t * hd + i0..t * hd + i0 + 16 * NV];
        let mut x = [_mm512_setzero_ps(); NV];
        for (k, x) in x.iter_mut().enumerate() {
            // SAFETY: `row` has 16·NV elements.
            *x = unsafe { _mm512_loadu_ps(row[16 * k..].as_ptr()) };
        }
        for (g, a) in acc.iter_mut().enumerate().take(lens.len()) {
            if t < lens[g] {
                let pg = _mm512_set1_ps(p[g * stride + t] * inv[g]);
                for k in 0..NV {
                    a[k] = _mm512_add_ps(a[k], _mm512_mul_ps(pg, x[k]));
                }
            }
        }
    }
    for (g, a) in acc.iter().enumerate().take(lens.len()) {
        for (k, a) in a.iter().enumerate() {
            // SAFETY: query g's output has hd ≥ i0 + 16(k + 1) elements.
            unsafe { _mm512_storeu_ps(out[g * hd + i0 + 16 * k..].as_mut_ptr(), *a) };
        }
    }
}
