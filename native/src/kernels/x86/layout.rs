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
    for r in (0..r8).step_by(8) {
        for t in (0..t8).step_by(8) {
            let rows = core::array::from_fn(|i| _mm256_castps_si256(loadf(src, (r + i) * n_src + t0 + t)));
            for (j, v) in transpose8(&rows).into_iter().enumerate() {
                storef(out, (t + j) * stride + r, _mm256_castsi256_ps(v));
            }
        }
    }
    // the ragged edges: the tokens past t8 of the first r8 rows, and the
    // rows past r8
    if t8 < nt {
        scalar::transpose(&src[..r8 * n_src], n_src, t0 + t8, nt - t8, &mut out[t8 * stride..], stride);
    }
    if r8 < nr {
        scalar::transpose(&src[r8 * n_src..], n_src, t0, nt, &mut out[r8..], stride);
    }
}
