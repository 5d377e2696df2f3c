//! What the native tests share: where the test models are.

#[allow(dead_code)]
pub mod hub;

use std::path::PathBuf;

/// SmolLM2-135M-Instruct Q4_1, the small test model.
#[allow(dead_code)]
pub fn smollm2() -> PathBuf {
    tern::models_dir().join("smollm2-135m-instruct-q4_1.gguf")
}

/// Qwen2.5-Coder-0.5B-Instruct Q4_K_M, the default model (its chat
/// template renders tools).
#[allow(dead_code)]
pub fn qwen() -> PathBuf {
    tern::models_dir().join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
}
