//! What `tern embed` and `tern rerank` share: the model (a directory or a
//! GGUF, quantized at load if asked) and the texts (given, or each
//! non-empty line of a file).

use std::path::{Path, PathBuf};

use tern::Result;

/// The model `-m` names, on `threads` threads (0: all cores), pooled as
/// `pooling` says if given.
pub fn load(
    load: &super::LoadArgs,
    threads: usize,
    command: &str,
    pooling: Option<tern_core::Pooling>,
) -> Result<(PathBuf, tern::Embedder)> {
    if load.model.is_none() {
        return Err(super::files::invalid(format!(
            "tern {command} needs -m: an embedding model (a model directory or a GGUF)"
        )));
    }
    let path = load.model_path()?;
    let mut model = tern::Embedder::load_with(&path, pooling)?.with_threads(tern::limits::check_threads(threads)?);
    if let Some(ty) = load.quantize {
        model = model.quantize(ty)?;
    }
    Ok((path, model))
}

/// `--pooling`'s value: mean, cls or last, normalised.
pub fn parse_pooling(s: &str) -> std::result::Result<tern_core::Pooling, String> {
    let mode = tern_core::PoolingMode::from_name(s).map_err(|e| e.to_string())?;
    Ok(tern_core::Pooling { mode, normalize: true })
}

/// The largest file of texts read (64 MiB: each text is cut to the
/// encoder's positions anyway).
const MAX_TEXTS_FILE: u64 = 64 << 20;

/// The texts: each non-empty line of `file` if given, else `given`.
pub fn texts(file: Option<&Path>, given: &[String]) -> Result<Vec<String>> {
    match file {
        Some(f) => {
            let text = super::files::read_text(f, MAX_TEXTS_FILE, "texts file", "")?;
            Ok(text.lines().filter(|l| !l.trim().is_empty()).map(String::from).collect())
        }
        None => Ok(given.to_vec()),
    }
}
