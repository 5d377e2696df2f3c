//! SIMD128 kernels (wasm `v128`): the scalar reference's arithmetic in its
//! order — integer block dots exact, float expressions per lane as written
//! there — so every result equals `Scalar`'s bit for bit. Weight types and
//! methods without a SIMD path here run the reference itself.

mod float;
mod kquant;
mod legacy;
mod v;
mod widen;

use core::cell::RefCell;
use core::ops::Range;

use tern_core::kernels::{scalar, Acts, Kernels, KvRows, QMatrix};
use tern_core::quant::GgmlType;

pub struct Simd128;

std::thread_local! {
    /// Widened activations of the current matmul (reused across calls).
    static WIDE: RefCell<Vec<i16>> = const { RefCell::new(Vec::new()) };
}

fn matmul_q(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> bool {
    let n = w.n_cols;
    let ok = match (&x, w.ty) {
        (Acts::Q8_0(_), GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0)
        | (Acts::Q8_1(_), GgmlType::Q4_1 | GgmlType::Q5_1) => true,
        (Acts::Q8K(_), t) => kquant::handles(t),
        _ => false,
    };
    if !ok || n % 32 != 0 {
        return false;
    }
    WIDE.with_borrow_mut(|wide| {
        wide.clear();
        wide.resize(n, 0);
        for t in 0..n_tok {
            let o = &mut out[t..];
            match x {
                Acts::Q8_0(a) => {
                    let a = &a[t * n / 32..(t + 1) * n / 32];
                    for (b, blk) in a.iter().enumerate() {
                        widen::eo16(&blk.qs, &mut wide[32 * b..32 * b + 32]);
                    }
                    match w.ty {
                        GgmlType::Q4_0 => legacy::rows::<legacy::Q4_0, _>(w, a, wide, rows.clone(), o, n_tok),
                        GgmlType::Q5_0 => legacy::rows::<legacy::Q5_0, _>(w, a, wide, rows.clone(), o, n_tok),
                        _ => legacy::rows::<legacy::Q8_0, _>(w, a, wide, rows.clone(), o, n_tok),
                    }
                }
                Acts::Q8_1(a) => {
                    let a = &a[t * n / 32..(t + 1) * n / 32];
                    for (b, blk) in a.iter().enumerate() {
                        widen::eo16(&blk.qs, &mut wide[32 * b..32 * b + 32]);
                    }
                    match w.ty {
                        GgmlType::Q5_1 => legacy::rows::<legacy::Q5_1, _>(w, a, wide, rows.clone(), o, n_tok),
                        _ => legacy::rows::<legacy::Q4_1, _>(w, a, wide, rows.clone(), o, n_tok),
                    }
                }
                Acts::Q8K(a) => {
                    let a = &a[t * n / 256..(t + 1) * n / 256];
                    for (b, blk) in a.iter().enumerate() {
                        widen::eo16(&blk.qs, &mut wide[256 * b..256 * b + 256]);
                    }
                    kquant::rows(w, a, wide, rows.clone(), o, n_tok)
                }
                Acts::F32(_) => unreachable!("checked above"),
            }
        }
    });
    true
}

impl Kernels for Simd128 {
    fn name(&self) -> &'static str {
        "simd128"
    }

    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        if !matmul_q(w, x, n_tok, rows.clone(), out) {
            scalar::matmul_rows(w, x, n_tok, rows, out)
        }
    }

    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        float::rms_norm(x, w, eps, o)
    }

    fn attention_head(
        &self,
        q: &[f32],
        k: KvRows,
        v: KvRows,
        kv_stride: usize,
        n_kv: usize,
        scale: f32,
        scores: &mut [f32],
        out: &mut [f32],
    ) {
        scalar::attention_head_with(q, k, v, kv_stride, n_kv, scale, scores, out, float::dot, float::axpy)
    }
}
