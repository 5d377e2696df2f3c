//! LoRA adapters from disk: a PEFT directory (`adapter_config.json` and
//! `adapter_model.safetensors`) or a llama.cpp GGUF LoRA file, mapped
//! (never copied whole), checked against the base and copied beside it
//! (tern-llm-core's [`Adapter`]); the base's bytes are not touched.

use std::path::Path;
use std::sync::Arc;

use tern_core::Adapter;

use crate::load::map;
use crate::{Error, Result};

/// The most bytes an `adapter_config.json` may have.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The adapter at `path` (a PEFT directory or a GGUF LoRA file), for
/// `base`: every mismatch with the base, and anything tern cannot apply,
/// an error naming it.
pub fn load_adapter<B: AsRef<[u8]>>(path: &Path, base: &tern_core::Model<B>) -> Result<Arc<Adapter>> {
    let name = path.display().to_string();
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |source| Error::Io { path: p, source }
    };
    let adapter = if path.is_dir() {
        let config = path.join("adapter_config.json");
        let tensors = path.join("adapter_model.safetensors");
        for f in [&config, &tensors] {
            if !f.is_file() {
                let what = format!(
                    "a PEFT directory holds adapter_config.json and adapter_model.safetensors; {} is missing",
                    f.display()
                );
                return Err(tern_core::Error::Adapter { adapter: name, what }.into());
            }
        }
        let len = std::fs::metadata(&config).map_err(io(&config))?.len();
        if len > MAX_CONFIG_BYTES {
            let what = format!("adapter_config.json is {len} bytes (at most {MAX_CONFIG_BYTES})");
            return Err(tern_core::Error::Adapter { adapter: name, what }.into());
        }
        let config = std::fs::read(&config).map_err(io(&config))?;
        let tensors = map(&tensors)?;
        Adapter::from_peft(&config, &tensors, &name, base)?
    } else {
        let bytes = map(path)?;
        Adapter::from_gguf(&bytes, &name, base)?
    };
    Ok(Arc::new(adapter))
}
