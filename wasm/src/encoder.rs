//! An embedding model or cross-encoder in wasm memory (a GGUF, or a
//! sentence-transformers directory; a decoder pooled as its files or the
//! caller say): texts in, one vector each out; a query and documents in,
//! one score each out. The same kernels' numbers as the
//! native build, so the same vectors bit for bit.

use tern_core::Engine;
use tern_core::{Embedder, Pooling, PoolingMode};
use wasm_bindgen::prelude::*;

use crate::errors::from_core;
use crate::kernels;

/// A loaded encoder (embeddings, or a cross-encoder's scores).
#[wasm_bindgen]
pub struct TernEncoder {
    inner: Embedder<Vec<u8>>,
}

impl TernEncoder {
    pub(crate) fn from_bytes(bytes: Vec<u8>, pooling: Option<String>) -> Result<TernEncoder, JsValue> {
        Ok(TernEncoder { inner: Embedder::from_gguf(bytes, pooling_of(pooling)?).map_err(from_core)? })
    }

    pub(crate) fn from_files(
        mut files: Vec<(String, Vec<u8>)>,
        pooling: Option<String>,
    ) -> Result<TernEncoder, JsValue> {
        let pooling = pooling_of(pooling)?;
        let mut take = |name: &str| -> tern_core::Result<Option<Vec<u8>>> {
            Ok(files.iter().position(|f| f.0 == name).map(|i| files.swap_remove(i).1))
        };
        Ok(TernEncoder { inner: Embedder::from_dir(&mut take, pooling).map_err(from_core)? })
    }

    fn engine() -> Engine<'static> {
        Engine { kernels: kernels::backend(), par: crate::pool(), exact: false }
    }
}

#[wasm_bindgen]
impl TernEncoder {
    /// Width of the vectors.
    pub fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// Tokens an input keeps (longer ones are truncated).
    pub fn max_len(&self) -> usize {
        self.inner.max_len
    }

    /// Whether it scores pairs (a cross-encoder) rather than embeds.
    pub fn reranks(&self) -> bool {
        self.inner.encoder().is_ok_and(|enc| enc.scores_pairs())
    }

    /// The texts' vectors, one after another (`texts.length × dim`).
    pub fn embed(&self, texts: Vec<String>) -> Result<Vec<f32>, JsValue> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let v = self.inner.embed(&Self::engine(), &refs).map_err(from_core)?;
        Ok(v.concat())
    }

    /// Each document's score for `query`, in the documents' order.
    pub fn rerank(&self, query: &str, documents: Vec<String>) -> Result<Vec<f32>, JsValue> {
        let refs: Vec<&str> = documents.iter().map(String::as_str).collect();
        self.inner.rerank(&Self::engine(), query, &refs).map_err(from_core)
    }
}

/// `mean`, `cls` or `last`, normalised (None: as the model's files say).
fn pooling_of(name: Option<String>) -> Result<Option<Pooling>, JsValue> {
    let Some(name) = name else { return Ok(None) };
    let mode = PoolingMode::from_name(&name).map_err(from_core)?;
    Ok(Some(Pooling { mode, normalize: true }))
}
