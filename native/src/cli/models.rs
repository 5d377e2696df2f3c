//! Where models live: the cache folder, the default model, and fetching it
//! with the project's fetch script (embedded, so the binary needs no checkout).

use std::path::PathBuf;
use std::process::Command;

use tern::{Error, Result};

pub(super) const DEFAULT_MODEL: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
const SMOLLM2: &str = "smollm2-135m-instruct-q4_1.gguf";
const FETCH_SCRIPT: &str = include_str!("../../fetch-models.sh");

/// The path of a known model in the cache, fetched (and verified) if absent.
pub(super) fn ensure(name: &str) -> Result<PathBuf> {
    let which = match name {
        DEFAULT_MODEL => "qwen",
        SMOLLM2 => "smollm2",
        other => return Err(Error::Fetch { detail: format!("{other} is not a model the fetch script knows") }),
    };
    let path = tern::models_dir().join(name);
    if path.exists() {
        return Ok(path);
    }
    eprintln!("tern: fetching {name} into {}", tern::models_dir().display());
    let status = Command::new("bash")
        .arg("-c")
        .arg(FETCH_SCRIPT)
        .arg("fetch-models.sh")
        .arg(which)
        .env("TERN_MODELS", tern::models_dir())
        .status()
        .map_err(|e| Error::Fetch { detail: format!("running bash: {e}") })?;
    if !status.success() || !path.exists() {
        return Err(Error::Fetch { detail: format!("the fetch script failed ({status})") });
    }
    Ok(path)
}
