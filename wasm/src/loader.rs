//! A GGUF file arriving in chunks (a streamed fetch, a Blob read in
//! slices) written straight into one buffer in wasm memory, so the file is
//! never held twice; then parsed into a `TernModel`. An HF directory is
//! several such files, gathered by name in a `DirLoader`. Either becomes a
//! generation model (`finish`) or an encoder (`finish_encoder`).

use wasm_bindgen::prelude::*;

use crate::encoder::TernEncoder;
use tern_core::Adapter;

use crate::errors::{from_core, js_error};
use crate::model::TernModel;
use crate::WASM32_MEMORY_LIMIT;

/// Bytes a loaded model needs beyond its file, at least: tokenizer tables,
/// scratch and a small KV cache. Used only to refuse early what cannot fit.
const HEADROOM: u64 = 64 << 20;

/// A model file arriving in chunks, written into one buffer of its announced size.
#[wasm_bindgen]
pub struct ModelLoader {
    buf: Vec<u8>,
    total: usize,
}

#[wasm_bindgen]
impl ModelLoader {
    /// Room for a file of `total` bytes. Fails if it cannot fit in wasm32
    /// memory (naming the limit and the size) or cannot be allocated.
    #[wasm_bindgen(constructor)]
    pub fn new(total: f64) -> Result<ModelLoader, JsValue> {
        let mib = |b: f64| b / 1048576.0;
        if !(total.is_finite() && total >= 0.0) {
            return Err(js_error("invalid_argument", &format!("model size {total} is not a byte count")));
        }
        if total + HEADROOM as f64 > WASM32_MEMORY_LIMIT as f64 {
            return Err(js_error(
                "too_large",
                &format!(
                    "model file is {:.0} MiB; a wasm32 instance has at most {:.0} MiB of memory \
                     (the file plus at least {:.0} MiB for tokenizer, scratch and KV cache must fit)",
                    mib(total),
                    mib(WASM32_MEMORY_LIMIT as f64),
                    mib(HEADROOM as f64)
                ),
            ));
        }
        let total = total as usize;
        let mut buf = Vec::new();
        buf.try_reserve_exact(total).map_err(|_| {
            js_error(
                "too_large",
                &format!(
                    "cannot allocate {:.0} MiB for the model in wasm memory (limit {:.0} MiB)",
                    mib(total as f64),
                    mib(WASM32_MEMORY_LIMIT as f64)
                ),
            )
        })?;
        Ok(ModelLoader { buf, total })
    }

    /// Append the next chunk of the file.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), JsValue> {
        if self.buf.len() + chunk.len() > self.total {
            return Err(js_error(
                "bad_file",
                &format!("more bytes than announced: {} > {}", self.buf.len() + chunk.len(), self.total),
            ));
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// Parse the file (GGUF header, tensors, tokenizer) into a model;
    /// `widen`: its Q5_0 matrices as Q8_0 (`TernModel::widen`).
    pub fn finish(self, widen: bool) -> Result<TernModel, JsValue> {
        TernModel::from_bytes(self.into_bytes()?, widen)
    }

    /// Read the file as a llama.cpp GGUF LoRA adapter for `model` (`name`
    /// names it in errors), kept beside it; its id (from 0, in loading
    /// order). Generations whose options list no `adapters` run it at
    /// `scale`.
    pub fn into_adapter(self, model: &mut TernModel, name: &str, scale: f32) -> Result<usize, JsValue> {
        let bytes = self.into_bytes()?;
        model.add_adapter(|m| Adapter::from_gguf(&bytes, name, m), scale)
    }

    /// Parse the file as an embedding model (a `bert` GGUF, or a decoder
    /// pooled as `pooling` (mean, cls, last) or its `*.pooling_type` says).
    pub fn finish_encoder(self, pooling: Option<String>) -> Result<TernEncoder, JsValue> {
        TernEncoder::from_bytes(self.into_bytes()?, pooling)
    }
}

impl ModelLoader {
    fn into_bytes(self) -> Result<Vec<u8>, JsValue> {
        if self.buf.len() != self.total {
            return Err(js_error(
                "bad_file",
                &format!("the file ended after {} of {} announced bytes", self.buf.len(), self.total),
            ));
        }
        Ok(self.buf)
    }
}

/// The files of an HF model directory (config.json, safetensors shards,
/// tokenizer files…), each read through a `ModelLoader`, by name.
#[wasm_bindgen]
#[derive(Default)]
pub struct DirLoader {
    files: Vec<(String, Vec<u8>)>,
    bytes: u64,
}

#[wasm_bindgen]
impl DirLoader {
    /// An empty directory.
    #[wasm_bindgen(constructor)]
    pub fn new() -> DirLoader {
        DirLoader::default()
    }

    /// Add the file `name`, fully read into `file`.
    pub fn add(&mut self, name: String, file: ModelLoader) -> Result<(), JsValue> {
        if self.files.iter().any(|f| f.0 == name) {
            return Err(js_error("invalid_argument", &format!("{name} given twice")));
        }
        let bytes = file.into_bytes()?;
        self.bytes += bytes.len() as u64;
        if self.bytes + HEADROOM > WASM32_MEMORY_LIMIT {
            return Err(js_error(
                "too_large",
                &format!(
                    "the model's files come to {} MiB; a wasm32 instance has at most {} MiB of memory",
                    self.bytes >> 20,
                    WASM32_MEMORY_LIMIT >> 20
                ),
            ));
        }
        self.files.push((name, bytes));
        Ok(())
    }

    /// Read the directory as a PEFT LoRA adapter (`adapter_config.json`,
    /// `adapter_model.safetensors`) for `model`, as
    /// `ModelLoader::into_adapter`.
    pub fn into_adapter(self, model: &mut TernModel, name: &str, scale: f32) -> Result<usize, JsValue> {
        let file = |f: &str| {
            self.files.iter().find(|x| x.0 == f).map(|x| &x.1[..]).ok_or_else(|| {
                let what =
                    format!("a PEFT directory holds adapter_config.json and adapter_model.safetensors; {f} is missing");
                from_core(tern_core::Error::Adapter { adapter: name.into(), what })
            })
        };
        let (config, tensors) = (file("adapter_config.json")?, file("adapter_model.safetensors")?);
        model.add_adapter(|m| Adapter::from_peft(config, tensors, name, m), scale)
    }

    /// Load the directory into a model (`widen` as for a GGUF file).
    pub fn finish(self, widen: bool) -> Result<TernModel, JsValue> {
        TernModel::from_files(self.files, widen)
    }

    /// Load the directory as an embedding model (sentence-transformers'
    /// layout), pooled as `pooling` says if given.
    pub fn finish_encoder(self, pooling: Option<String>) -> Result<TernEncoder, JsValue> {
        TernEncoder::from_files(self.files, pooling)
    }
}
