//! What the native tests share: where the test models are.

use std::path::PathBuf;

/// `$TERN_MODELS`, else `~/.cache/tern/models` (where `scripts/fetch-models.sh`
/// puts them).
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TERN_MODELS") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache/tern/models")
}

/// SmolLM2-135M-Instruct Q4_1, the small test model.
#[allow(dead_code)]
pub fn smollm2() -> PathBuf {
    models_dir().join("smollm2-135m-instruct-q4_1.gguf")
}
