//! x86-64 backends. Capability tokens exist only when the CPU has the
//! features; the hot loops run inside `#[target_feature]` functions reached
//! through them.
//!
//! These first backends compile core's reference kernels (all `#[inline]`)
//! with the wider instruction sets: integer block dots vectorize, and float
//! operations keep their order (Rust never reassociates or fuses them), so
//! results equal the scalar reference bit for bit by construction — the
//! conformance tests check it.

mod avx2_attn;
mod avx2_f32;
mod avx2_k;
mod avx2_q;
mod exp;
mod kblock;
mod vnni8;
mod vnni8_k;

use core::ops::Range;

use tern_core::kernels::{scalar, Acts, Kernels, KvRows, QMatrix};
use tern_core::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1};

macro_rules! backend {
    ($name:ident, $label:literal, $features:literal, [$($detect:tt),*], vnni: $vnni:literal) => {
        #[derive(Clone, Copy)]
        pub struct $name(());

        impl $name {
            pub fn new() -> Option<Self> {
                (true $(&& std::arch::is_x86_feature_detected!($detect))*).then_some($name(()))
            }
        }

        impl Kernels for $name {
            fn name(&self) -> &'static str {
                $label
            }
            fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
                #[target_feature(enable = $features)]
                fn imp(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
                    if avx2_q::handles(w.ty, &x) {
                        avx2_q::matmul_rows(w, x, n_tok, rows, out, $vnni)
                    } else if let Acts::F32(x) = x {
                        avx2_f32::matmul_rows(w, x, n_tok, rows, out)
                    } else {
                        scalar::matmul_rows(w, x, n_tok, rows, out)
                    }
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(w, x, n_tok, rows, out) }
            }
            fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
                #[target_feature(enable = $features)]
                fn imp(x: &[f32], out: &mut [BlockQ8_0]) {
                    scalar::quantize_rows_q8_0(x, out)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(x, out) }
            }
            fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
                #[target_feature(enable = $features)]
                fn imp(x: &[f32], out: &mut [BlockQ8_1]) {
                    scalar::quantize_rows_q8_1(x, out)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(x, out) }
            }
            fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
                #[target_feature(enable = $features)]
                fn imp(x: &[f32], out: &mut [BlockQ8K]) {
                    scalar::quantize_rows_q8_k(x, out)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(x, out) }
            }
            fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
                #[target_feature(enable = $features)]
                fn imp(x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
                    scalar::rms_norm(x, w, eps, o)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(x, w, eps, o) }
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
                #[target_feature(enable = $features)]
                #[allow(clippy::too_many_arguments)]
                fn imp(q: &[f32], k: KvRows, v: KvRows, st: usize, n: usize, sc: f32, s: &mut [f32], o: &mut [f32]) {
                    avx2_attn::attention_head(q, k, v, st, n, sc, s, o)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(q, k, v, kv_stride, n_kv, scale, scores, out) }
            }
            fn attention_queries(
                &self,
                q: &[f32],
                q_stride: usize,
                k: KvRows,
                v: KvRows,
                kv_stride: usize,
                n_kv: &[usize],
                scale: f32,
                scores: &mut [f32],
                out: &mut [f32],
            ) {
                #[target_feature(enable = $features)]
                #[allow(clippy::too_many_arguments)]
                fn imp(
                    q: &[f32],
                    qs: usize,
                    k: KvRows,
                    v: KvRows,
                    st: usize,
                    n: &[usize],
                    sc: f32,
                    s: &mut [f32],
                    o: &mut [f32],
                ) {
                    avx2_attn::attention_queries(q, qs, k, v, st, n, sc, s, o)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(q, q_stride, k, v, kv_stride, n_kv, scale, scores, out) }
            }
            fn swiglu(&self, g: &mut [f32], u: &[f32]) {
                #[target_feature(enable = $features)]
                fn imp(g: &mut [f32], u: &[f32]) {
                    exp::swiglu(g, u)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(g, u) }
            }
        }
    };
}

backend!(Avx2, "avx2", "avx2,fma,f16c,bmi2", ["avx2", "fma", "f16c", "bmi2"], vnni: false);
backend!(
    Avx512,
    "avx512",
    "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c,bmi2",
    ["avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx2", "fma", "f16c", "bmi2"],
    vnni: true
);
