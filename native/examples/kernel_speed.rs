//! Speed of each weight type's matmul kernel on each available backend,
//! alone: a 64 MiB matrix of random blocks, one thread, decode (1 token,
//! GB/s of weights) and prefill (64 tokens, tokens/s × rows). Best of 5.
//!   cargo run --release --example kernel_speed [TYPE...] [COLS (default 2048)]

use std::time::Instant;

use tern_core::kernels::{Acts, QMatrix};
use tern_core::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

fn main() {
    let all = [
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::F16,
        GgmlType::BF16,
        GgmlType::F32,
    ];
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n_cols = args.iter().find_map(|a| a.parse::<usize>().ok()).unwrap_or(2048);
    let wanted: Vec<String> = args.iter().filter(|a| a.parse::<usize>().is_err()).map(|s| s.to_uppercase()).collect();
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    println!("| type | backend | decode GB/s | prefill 64 tok: row·tok/µs |");
    println!("| --- | --- | ---: | ---: |");
    for ty in all.into_iter().filter(|t| wanted.is_empty() || wanted.iter().any(|w| w == t.name())) {
        let (bs, ts) = ty.block();
        let row_bytes = n_cols / bs * ts;
        let n_rows = (64 << 20) / row_bytes;
        let mut data: Vec<u8> = (0..n_rows * row_bytes).map(|_| rand() as u8).collect();
        if bs == 1 {
            // float weights: small finite values (0x211F is the f16 nearest 0.01)
            let v: &[u8] = match ty {
                GgmlType::F32 => &0.01f32.to_le_bytes(),
                GgmlType::BF16 => &0x3C24u16.to_le_bytes(),
                _ => &0x211Fu16.to_le_bytes(),
            };
            for (b, v) in data.iter_mut().zip(v.iter().cycle()) {
                *b = *v;
            }
        }
        // sane f16 scales: every block's f16 fields small and finite
        for blk in data.chunks_exact_mut(ts) {
            for o in f16_fields(ty) {
                // 0x211F: the f16 nearest 0.01
                blk[o..o + 2].copy_from_slice(&0x211Fu16.to_le_bytes());
            }
        }
        let w = QMatrix { ty, data: &data, n_cols, n_rows };
        let x: Vec<f32> = (0..64 * n_cols).map(|_| (rand() % 2001) as f32 / 1000.0 - 1.0).collect();
        for name in tern::kernels::available() {
            let k = tern::kernels::by_name(name).unwrap();
            let mut out = vec![0.0f32; n_rows * 64];
            let mut time = |n_tok: usize| {
                let (mut q0, mut q1, mut qk) = (
                    vec![BlockQ8_0::ZERO; n_tok * n_cols / QK8],
                    vec![BlockQ8_1::ZERO; n_tok * n_cols / QK8],
                    vec![BlockQ8K::ZERO; n_tok * n_cols / QK_K],
                );
                let xs = &x[..n_tok * n_cols];
                let acts = match ty.vec_dot_type() {
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
                (0..5)
                    .map(|_| {
                        let t = Instant::now();
                        k.matmul_rows(&w, acts, n_tok, 0..n_rows, &mut out[..n_rows * n_tok]);
                        t.elapsed().as_secs_f64()
                    })
                    .fold(f64::INFINITY, f64::min)
            };
            let dec = data.len() as f64 / time(1) / 1e9;
            let pre = (n_rows * 64) as f64 / time(64) / 1e6;
            println!("| {} | {name} | {dec:.1} | {pre:.1} |", ty.name());
        }
    }
}

/// Byte offsets of a block's f16 scale fields.
fn f16_fields(ty: GgmlType) -> Vec<usize> {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => vec![0],
        GgmlType::Q4_1 | GgmlType::Q5_1 | GgmlType::Q4_K | GgmlType::Q5_K => vec![0, 2],
        GgmlType::Q2_K => vec![80, 82],
        GgmlType::Q3_K => vec![108],
        GgmlType::Q6_K => vec![208],
        _ => vec![],
    }
}
