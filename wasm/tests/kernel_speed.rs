//! Speed of the SIMD128 matmul kernels alone (not a check; ignored by
//! default): 16 MiB of random blocks per type, decode GB/s and prefill
//! row·tok/µs (16 tokens), best of 5, beside the scalar reference; then
//! SmolLM2's shapes (rows of 576, scales widened as `widen` loads them).
//!   cargo test --release -p tern-llm-wasm --target wasm32-unknown-unknown \
//!     --test kernel_speed -- --include-ignored --nocapture

use tern_core::backend::quant::{wide_scales, GgmlType};
use tern_core::backend::speed::{random_matrix, time_matmul};
use tern_core::backend::KERNEL_TYPES;
use tern_core::backend::{Kernels, QMatrix, Scalar};
use wasm_bindgen::prelude::*;
use wasm_bindgen_test::{console_log, wasm_bindgen_test};

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn now_ms() -> f64;
}

#[wasm_bindgen_test]
#[ignore]
fn kernel_speed() {
    let n_cols = 2048;
    let now = || now_ms() / 1e3;
    let x: Vec<f32> = (0..16 * n_cols).map(|i| ((i * 7919) % 2001) as f32 / 1000.0 - 1.0).collect();
    let backends: [&dyn Kernels; 2] = [tern_wasm::kernels::backend(), &Scalar];
    console_log!("| type | backend | decode GB/s | prefill 16 tok: row·tok/µs |");
    for ty in KERNEL_TYPES {
        let (data, n_rows) = random_matrix(ty, n_cols, 16 << 20);
        let w = QMatrix { ty, data: &data, n_cols, n_rows, scales: &[], rows8: &[] };
        for k in backends {
            let dec = data.len() as f64 / time_matmul(k, &w, &x, 1, now) / 1e9;
            let pre = (n_rows * 16) as f64 / time_matmul(k, &w, &x, 16, now) / 1e6;
            console_log!("| {} | {} | {dec:.2} | {pre:.1} |", ty.name(), k.name());
        }
    }
    console_log!("| type, 576 columns | scales | decode GB/s |");
    let x576 = &x[..576];
    for ty in [GgmlType::Q4_1, GgmlType::Q8_0] {
        let (data, n_rows) = random_matrix(ty, 576, 16 << 20);
        let wide = wide_scales(ty, &data, 576, n_rows).unwrap_or_default();
        for (how, scales) in [("in blocks", &[][..]), ("widened", &wide[..])] {
            let w = QMatrix { ty, data: &data, n_cols: 576, n_rows, scales, rows8: &[] };
            let dec = data.len() as f64 / time_matmul(tern_wasm::kernels::backend(), &w, x576, 1, now) / 1e9;
            console_log!("| {} | {how} | {dec:.2} |", ty.name());
        }
    }
}
