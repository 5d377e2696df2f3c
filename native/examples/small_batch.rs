//! A matmul of a few tokens against one token's, per weight type, on the
//! AVX-512 kernels: a verify step of speculative decoding is 2–17 tokens,
//! and what each extra token costs decides how long a draft pays
//! (bench/NOTES "Issue 48 (second steps)"). One thread, a 64 MiB matrix
//! of random blocks (so weights stream from memory, as in a model), the
//! ratio the best of three alternations; for the types with an 8-row
//! interleaved layout, the file's layout beside it.
//!   cargo run --release --example small_batch TYPE [COLS (default 896)]

use std::time::Instant;

use tern_core::backend::speed::{random_matrix, time_matmul};
use tern_core::backend::{quant, QMatrix, KERNEL_TYPES};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(wanted) = args.first() else {
        eprintln!("usage: small_batch TYPE [COLS]");
        std::process::exit(2);
    };
    let n_cols: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(896);
    let Some(k) = tern::kernels::by_name("avx512") else {
        eprintln!("small_batch: this CPU has no AVX-512 kernels");
        std::process::exit(1);
    };
    let t0 = Instant::now();
    let now = || t0.elapsed().as_secs_f64();
    let x: Vec<f32> = (0..64 * n_cols).map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0).collect();
    for ty in KERNEL_TYPES.into_iter().filter(|t| t.name().eq_ignore_ascii_case(wanted)) {
        let (data, n_rows) = random_matrix(ty, n_cols, 64 << 20);
        let mut rows8 = Vec::new();
        quant::rows8::pack(ty, &data, n_cols, n_rows, &mut rows8);
        let plain = QMatrix { ty, data: &data, n_cols, n_rows, scales: &[], rows8: &[] };
        let forms: Vec<(&str, QMatrix)> = match rows8.is_empty() {
            true => vec![("file layout", plain)],
            false => vec![("file layout", plain), ("8 rows interleaved", QMatrix { rows8: &rows8, ..plain })],
        };
        let one = time_matmul(k, &plain, &x, 1, now);
        println!("{} K={n_cols} 1 token {:.2} ms; n tokens / 1 (best of 3 alternations):", ty.name(), one * 1e3);
        let mut lines: Vec<String> = forms.iter().map(|(name, _)| format!("  {name:>18}:")).collect();
        for n in [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16] {
            let mut best = vec![f64::MAX; forms.len()];
            for _ in 0..3 {
                let one = time_matmul(k, &plain, &x, 1, now);
                for (b, (_, w)) in best.iter_mut().zip(&forms) {
                    *b = b.min(time_matmul(k, w, &x, n, now) / one);
                }
            }
            for (line, b) in lines.iter_mut().zip(best) {
                *line += &format!(" {n}:{b:.2}");
            }
        }
        for line in lines {
            println!("{line}");
        }
    }
}
