//! The scalar reference's kernels compiled with AVX2, for what has no
//! kernel of its own here (quantizing activations, RMSNorm, the types and
//! rows the SIMD kernels leave): the integer loops vectorize and the float
//! operations keep their order (Rust never reassociates or fuses them), so
//! the results are the reference's bits by construction.

use core::ops::Range;

use tern_core::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1};
use tern_core::backend::{scalar, Acts, QMatrix};

use super::cpu::Avx2;

pub(super) fn matmul_rows(_: Avx2, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    #[target_feature(enable = "avx2,fma,f16c")]
    fn imp(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        scalar::matmul_rows(w, x, n_tok, rows, out)
    }
    // SAFETY: the token proves these features.
    unsafe { imp(w, x, n_tok, rows, out) }
}

pub(super) fn quantize_q8_0(_: Avx2, x: &[f32], out: &mut [BlockQ8_0]) {
    #[target_feature(enable = "avx2,fma,f16c")]
    fn imp(x: &[f32], out: &mut [BlockQ8_0]) {
        scalar::quantize_rows_q8_0(x, out)
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, out) }
}

pub(super) fn quantize_q8_1(_: Avx2, x: &[f32], out: &mut [BlockQ8_1]) {
    #[target_feature(enable = "avx2,fma,f16c")]
    fn imp(x: &[f32], out: &mut [BlockQ8_1]) {
        scalar::quantize_rows_q8_1(x, out)
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, out) }
}

pub(super) fn quantize_q8_k(_: Avx2, x: &[f32], out: &mut [BlockQ8K]) {
    #[target_feature(enable = "avx2,fma,f16c")]
    fn imp(x: &[f32], out: &mut [BlockQ8K]) {
        scalar::quantize_rows_q8_k(x, out)
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, out) }
}

pub(super) fn rms_norm(_: Avx2, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
    #[target_feature(enable = "avx2,fma,f16c")]
    fn imp(x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        scalar::rms_norm(x, w, eps, o)
    }
    // SAFETY: the token proves these features.
    unsafe { imp(x, w, eps, o) }
}
