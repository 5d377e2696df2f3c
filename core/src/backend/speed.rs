//! What the kernel speed tools share (native `examples/kernel_speed.rs`,
//! wasm `tests/kernel_speed.rs`): a matrix of random blocks with sane
//! scales, and the best-of-5 time of one matmul over it.

use alloc::vec;
use alloc::vec::Vec;

use super::{Acts, Kernels, QMatrix};
use crate::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

fn rand(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

/// About `bytes` of random `ty` rows of `n_cols` (whole rows), with small
/// finite f16 scales (0x211F: the f16 nearest 0.01) and float weights of
/// 0.01; returns the data and the row count.
pub fn random_matrix(ty: GgmlType, n_cols: usize, bytes: usize) -> (Vec<u8>, usize) {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let (bs, ts) = ty.block();
    let row_bytes = n_cols / bs * ts;
    let n_rows = (bytes / row_bytes).max(1);
    let mut data: Vec<u8> = (0..n_rows * row_bytes).map(|_| rand(&mut seed) as u8).collect();
    if bs == 1 {
        let v: &[u8] = match ty {
            GgmlType::F32 => &[0x0a, 0xd7, 0x23, 0x3c],
            GgmlType::BF16 => &[0x24, 0x3c],
            _ => &[0x1f, 0x21],
        };
        for (b, v) in data.iter_mut().zip(v.iter().cycle()) {
            *b = *v;
        }
    }
    let fields = crate::backend::quant::f16_fields(ty);
    for blk in data.chunks_exact_mut(ts) {
        for &o in fields {
            blk[o..o + 2].copy_from_slice(&0x211Fu16.to_le_bytes());
        }
    }
    (data, n_rows)
}

/// Seconds of the fastest of 5 `matmul_rows` of all of `w` against the
/// first `n_tok` rows of `x` (quantized as `w`'s type pairs), by `now` (s).
pub fn time_matmul(k: &dyn Kernels, w: &QMatrix, x: &[f32], n_tok: usize, now: impl Fn() -> f64) -> f64 {
    let n_cols = w.n_cols;
    let xs = &x[..n_tok * n_cols];
    let (mut q0, mut q1, mut qk) = (
        vec![BlockQ8_0::ZERO; n_tok * n_cols / QK8],
        vec![BlockQ8_1::ZERO; n_tok * n_cols / QK8],
        vec![BlockQ8K::ZERO; n_tok * n_cols / QK_K],
    );
    let acts = match w.ty.vec_dot_type() {
        Some(GgmlType::Q8_0) => {
            k.quantize_q8_0(xs, &mut q0);
            Acts::Q8_0(&q0)
        }
        Some(GgmlType::Q8_1) => {
            k.quantize_q8_1(xs, &mut q1);
            Acts::Q8_1(&q1)
        }
        Some(GgmlType::Q8_K) => {
            k.quantize_q8_k(xs, &mut qk);
            Acts::Q8K(&qk)
        }
        _ => Acts::F32(xs),
    };
    let mut out = vec![0.0f32; w.n_rows * n_tok];
    (0..5)
        .map(|_| {
            let t = now();
            k.matmul_rows(w, acts, n_tok, 0..w.n_rows, &mut out);
            now() - t
        })
        .fold(f64::INFINITY, f64::min)
}
