//! The kernel backend of the wasm build: SIMD128 where the module was
//! compiled with it (the package always is), the scalar reference otherwise.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;

use tern_core::backend::Kernels;

/// The backend this module runs.
pub fn backend() -> &'static dyn Kernels {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return &simd128::Simd128;
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    return &tern_core::backend::Scalar;
}
