//! tern-llm-wasm: tern-llm-core in WebAssembly. `ModelLoader` takes a GGUF file in
//! chunks (straight into wasm memory), `TernModel` tokenizes, applies chat
//! templates and steps generations one event per call, so the JS side can
//! stream, yield to its event loop and cancel between tokens; `TernEncoder`
//! embeds and reranks. The forward
//! pass runs on the SIMD128 kernels of `kernels` (bit-identical to the
//! scalar reference, hence to every native backend).
#![warn(missing_docs)]

mod encoder;
mod errors;
pub mod kernels;
mod loader;
mod model;
mod options;
#[cfg(feature = "threads")]
pub mod threads;

pub use encoder::TernEncoder;
pub use loader::{DirLoader, ModelLoader};
pub use model::TernModel;

/// The largest linear memory a wasm32 instance can have: 4 GiB.
pub const WASM32_MEMORY_LIMIT: u64 = 1 << 32;

/// Bytes of linear memory this instance has grown to.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn memory_bytes() -> f64 {
    #[cfg(target_arch = "wasm32")]
    return (core::arch::wasm32::memory_size(0) * 65536) as f64;
    #[cfg(not(target_arch = "wasm32"))]
    return 0.0;
}

/// The pool forward passes run on: the threaded build's, else serial.
pub(crate) fn pool() -> &'static dyn tern_core::backend::Parallel {
    #[cfg(feature = "threads")]
    return threads::pool();
    #[cfg(not(feature = "threads"))]
    return &tern_core::backend::Serial;
}

/// Whether this is the threaded build.
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn threaded() -> bool {
    cfg!(feature = "threads")
}

/// Threads forward passes run on (1 without a pool).
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn pool_threads() -> usize {
    pool().n_workers()
}
