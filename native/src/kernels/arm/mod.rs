//! aarch64 backends: `neon` (the baseline every aarch64 CPU has),
//! `dotprod` (`sdot`, where the CPU has it) and `i8mm` (`smmla` 2×2 tiles
//! for the legacy formats, with dotprod for the rest). `neon` and `dotprod`
//! run the same kernels, generic over the 8-bit dot. All equal the scalar
//! reference bit for bit.

mod attn;
mod dots;
mod exact;
mod matmul;
mod mmla;
mod unpack;

use core::ops::Range;

use tern_core::backend::{tiles, Acts, Cached, Kernels, QMatrix, Queries};

macro_rules! backend {
    ($name:ident, $label:literal, $features:literal, $matmul:path, [$($detect:tt),*]) => {
        #[derive(Clone, Copy)]
        pub struct $name(());

        impl $name {
            pub fn new() -> Option<Self> {
                (true $(&& std::arch::is_aarch64_feature_detected!($detect))*).then_some($name(()))
            }
        }

        impl Kernels for $name {
            fn name(&self) -> &'static str {
                $label
            }
            fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
                #[target_feature(enable = $features)]
                fn imp(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
                    $matmul(w, x, n_tok, rows, out)
                }
                // SAFETY: the token exists only if the CPU has these features.
                unsafe { imp(w, x, n_tok, rows, out) }
            }
            fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
                tiles::attention(&attn::Neon, qs, kv, work, out)
            }
        }
    };
}

backend!(Neon, "neon", "neon", matmul::matmul_rows::<dots::Plain>, []);
backend!(NeonDot, "dotprod", "neon,dotprod", matmul::matmul_rows::<dots::Sdot>, ["dotprod"]);
backend!(NeonI8mm, "i8mm", "neon,dotprod,i8mm", mmla::matmul_rows, ["dotprod", "i8mm"]);
