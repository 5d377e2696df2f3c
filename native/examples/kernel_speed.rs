//! Speed of each weight type's matmul kernel on each available backend,
//! alone: a 64 MiB matrix of random blocks, one thread, decode (1 token,
//! GB/s of weights) and prefill (64 tokens, tokens/s × rows). Best of 5.
//!   cargo run --release --example kernel_speed [TYPE...] [COLS (default 2048)]

use std::time::Instant;

use tern_core::backend::speed::{random_matrix, time_matmul};
use tern_core::backend::QMatrix;
use tern_core::backend::KERNEL_TYPES;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n_cols = args.iter().find_map(|a| a.parse::<usize>().ok()).unwrap_or(2048);
    let wanted: Vec<String> = args.iter().filter(|a| a.parse::<usize>().is_err()).map(|s| s.to_uppercase()).collect();
    let t0 = Instant::now();
    let now = || t0.elapsed().as_secs_f64();
    let x: Vec<f32> = (0..64 * n_cols).map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0).collect();
    println!("| type | backend | decode GB/s | prefill 64 tok: row·tok/µs |");
    println!("| --- | --- | ---: | ---: |");
    for ty in KERNEL_TYPES.into_iter().filter(|t| wanted.is_empty() || wanted.iter().any(|w| w == t.name())) {
        let (data, n_rows) = random_matrix(ty, n_cols, 64 << 20);
        let w = QMatrix { ty, data: &data, n_cols, n_rows, scales: &[], rows8: &[] };
        for name in tern::kernels::available() {
            let k = tern::kernels::by_name(name).unwrap();
            let dec = data.len() as f64 / time_matmul(k, &w, &x, 1, now) / 1e9;
            let pre = (n_rows * 64) as f64 / time_matmul(k, &w, &x, 64, now) / 1e6;
            println!("| {} | {name} | {dec:.1} | {pre:.1} |", ty.name());
        }
    }
}
