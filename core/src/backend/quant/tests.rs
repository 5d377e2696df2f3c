//! Block formats against an independent source: gguf-py's dequantizer
//! (fixture made by tests/fixtures/make_quant_blocks.py), and the integer
//! dot products against float dots of the dequantized operands.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::backend::{scalar, Acts, QMatrix};

fn fixture() -> serde_json::Value {
    let s = include_str!("../../../../tests/fixtures/quant_blocks.json");
    serde_json::from_str(s).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn ty_of(name: &str) -> GgmlType {
    (0..40).filter_map(GgmlType::from_id).find(|t| t.name() == name).unwrap()
}

fn formats() -> Vec<(GgmlType, Vec<u8>, Vec<f32>)> {
    let f = fixture();
    f["formats"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, v)| {
            let want =
                v["values_f32_bits"].as_array().unwrap().iter().map(|b| f32::from_bits(b.as_u64().unwrap() as u32));
            (ty_of(name), hex(v["bytes_hex"].as_str().unwrap()), want.collect())
        })
        .collect()
}

#[test]
fn dequantize_equals_gguf_py_bit_for_bit() {
    let all = formats();
    assert_eq!(all.len(), 14, "every weight format tern reads is in the fixture");
    let mut bad = String::new();
    for (ty, bytes, want) in all {
        let mut got = vec![0.0f32; want.len()];
        dequantize_row(ty, &bytes, &mut got).unwrap();
        let diff =
            got.iter().zip(&want).filter(|(a, b)| a.to_bits() != b.to_bits() && !(**a == 0.0 && **b == 0.0)).count();
        if diff > 0 {
            bad += &alloc::format!("{}: {diff} of {} values differ\n", ty.name(), want.len());
        }
    }
    assert!(bad.is_empty(), "{bad}");
}

/// Deterministic activations with a spread of magnitudes.
fn activations(n: usize, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761) | 1;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            ((x % 20001) as f32 / 10000.0 - 1.0) * if i % 7 == 0 { 4.0 } else { 1.0 }
        })
        .collect()
}

#[test]
fn integer_dots_equal_float_dots_of_the_dequantized_operands() {
    for (ty, bytes, w) in formats() {
        let n = w.len();
        let x = activations(n, 3);
        let m = QMatrix { ty, data: &bytes, n_cols: n, n_rows: 1, scales: &[], rows8: &[] };
        let mut got = [0.0f32];

        // exact path: f32 activations
        scalar::matmul_rows(&m, Acts::F32(&x), 1, 0..1, &mut got);
        let want: f64 = w.iter().zip(&x).map(|(&a, &b)| a as f64 * b as f64).sum();
        let scale: f64 = w.iter().zip(&x).map(|(&a, &b)| (a as f64 * b as f64).abs()).sum();
        assert!((got[0] as f64 - want).abs() <= 1e-6 * scale, "{} f32: {} vs {want}", ty.name(), got[0]);

        // quantized path: against the dequantized activation blocks
        let Some(at) = ty.vec_dot_type().filter(|&t| t != GgmlType::F32) else {
            continue;
        };
        let (want, scale) = match at {
            GgmlType::Q8_0 => {
                let mut a = vec![BlockQ8_0::ZERO; n / QK8];
                scalar::quantize_rows_q8_0(&x, &mut a);
                scalar::matmul_rows(&m, Acts::Q8_0(&a), 1, 0..1, &mut got);
                float_dot(&w, a.iter().flat_map(|b| b.qs.map(|q| b.d * q as f32)))
            }
            GgmlType::Q8_1 => {
                let mut a = vec![BlockQ8_1::ZERO; n / QK8];
                scalar::quantize_rows_q8_1(&x, &mut a);
                scalar::matmul_rows(&m, Acts::Q8_1(&a), 1, 0..1, &mut got);
                float_dot(&w, a.iter().flat_map(|b| b.qs.map(|q| b.d * q as f32)))
            }
            _ => {
                let mut a = vec![BlockQ8K::ZERO; n / QK_K];
                scalar::quantize_rows_q8_k(&x, &mut a);
                for b in &a {
                    for g in 0..16 {
                        assert_eq!(b.bsums[g], b.qs[g * 16..g * 16 + 16].iter().map(|&q| q as i16).sum::<i16>());
                    }
                }
                scalar::matmul_rows(&m, Acts::Q8K(&a), 1, 0..1, &mut got);
                float_dot(&w, a.iter().flat_map(|b| b.qs.map(|q| b.d * q as f32)))
            }
        };
        // Q8_1's sum term is rounded to f16 as in ggml: allow for it.
        let tol = if at == GgmlType::Q8_1 { 2e-3 } else { 1e-5 };
        assert!((got[0] as f64 - want).abs() <= tol * scale, "{} × {}: {} vs {want}", ty.name(), at.name(), got[0]);
    }
}

fn float_dot(w: &[f32], a: impl Iterator<Item = f32>) -> (f64, f64) {
    let p: Vec<f64> = w.iter().zip(a).map(|(&w, a)| w as f64 * a as f64).collect();
    (p.iter().sum(), p.iter().map(|v| v.abs()).sum())
}

#[test]
fn q8_quantization_is_within_half_a_step() {
    let x = activations(QK_K, 9);
    let mut b = BlockQ8K::ZERO;
    quantize_q8_k(&x, &mut b);
    for (q, &v) in b.qs.iter().zip(&x) {
        assert!((b.d * *q as f32 - v).abs() <= b.d * 0.5 + 1e-6);
    }
    let mut z = BlockQ8_0::ZERO;
    quantize_q8_0(&[0.0; QK8], &mut z);
    assert_eq!((z.d, z.qs), (0.0, [0; QK8]));
}
