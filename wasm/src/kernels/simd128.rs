//! SIMD128 kernels (wasm `v128`): the scalar reference's arithmetic, in
//! its order, four lanes at a time.

use tern_core::kernels::Kernels;

pub struct Simd128;

impl Kernels for Simd128 {
    fn name(&self) -> &'static str {
        "simd128"
    }
}
