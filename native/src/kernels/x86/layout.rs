//! A matmul's (rows, tokens) results laid out by token: 8 × 8 tiles
//! transposed in registers, each token's 8 rows one store.

use core::arch::x86_64::*;

use tern_core::backend::scalar;

use super::cpu::Avx2;
use super::simd::{loadf, storef, transpose8};

/// As `scalar::transpose`.
pub(super) fn transpose(_: Avx2, src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
    // SAFETY: the token proves AVX2.
    unsafe { transpose_imp(src, n_src, t0, nt, out, stride) }
}

#[target_feature(enable = "avx2")]
fn transpose_imp(src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
    let nr = src.len() / n_src;
    let (r8, t8) = (nr / 8 * 8, nt / 8 * 8);
    // row i of a block of 8, as a gather's offsets (an i32: `src` is a
    // matmul's outputs, far fewer than 2³¹ / 8 a token)
    let offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(n_src as i32));
    for r in (0..r8).step_by(8) {
        for t in (0..t8).step_by(8) {
            let rows = core::array::from_fn(|i| _mm256_castps_si256(loadf(src, (r + i) * n_src + t0 + t)));
            for (j, v) in transpose8(&rows).into_iter().enumerate() {
                storef(out, (t + j) * stride + r, _mm256_castsi256_ps(v));
            }
        }
        // the tokens past t8 (all of them when a task has fewer than 8, as
        // a verify step's): each token's 8 rows one gather, one store
        let block = &src[r * n_src..(r + 8) * n_src];
        for t in t8..nt {
            let first = &block[t0 + t..];
            // SAFETY: the largest offset, 7 · n_src, lands on element
            // 7 · n_src + t0 + t < 8 · n_src of `block` (t0 + t < n_src),
            // so every lane reads inside `first`.
            let v = unsafe { _mm256_i32gather_ps::<4>(first.as_ptr(), offsets) };
            storef(out, t * stride + r, v);
        }
    }
    // the rows past r8
    if r8 < nr {
        scalar::transpose(&src[r8 * n_src..], n_src, t0, nt, &mut out[r8..], stride);
    }
}
