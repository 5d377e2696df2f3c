//! The wasm backend equals the scalar reference bit for bit (core's
//! conformance harness), run in Node by wasm-bindgen-test-runner.

use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn simd128_is_the_backend_and_conforms() {
    let k = tern_wasm::kernels::backend();
    assert_eq!(k.name(), "simd128", "the wasm module must be built with +simd128");
    tern_core::backend::conformance::check(k).unwrap_or_else(|e| panic!("{e}"));
}
