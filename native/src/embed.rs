//! Embeddings and reranking: a sentence-transformers model directory
//! (BERT: MiniLM, bge, ...; or a cross-encoder) loaded with the fastest
//! kernels this CPU has and a thread pool over all cores; texts in, one
//! vector each out (or a query and documents in, a score each out).
//!
//! ```
//! # fn main() -> tern::Result<()> {
//! # let dir = tern::models_dir().join("all-minilm-l6-v2");
//! let model = tern::Embedder::load(&dir)?;
//! let v = model.embed(&["A man is eating food.", "A man is eating bread."])?;
//! let cosine: f32 = v[0].iter().zip(&v[1]).map(|(a, b)| a * b).sum(); // unit vectors
//! assert!(cosine > 0.5);
//! # Ok(())
//! # }
//! ```

use std::path::Path;

use tern_core::backend::Kernels;
use tern_core::Engine;
use tern_core::Pooling;

use crate::load::{Buffer, DirFiles};
use crate::{Result, Threads};

/// A loaded embedding or reranking model; share it across threads (`Arc`).
pub struct Embedder {
    inner: tern_core::Embedder<Buffer>,
    threads: Threads,
    kernels: &'static dyn Kernels,
}

impl Embedder {
    /// Load a model directory (sentence-transformers' layout) or a `bert`
    /// GGUF file; its pooling as its files say (an error if they say none:
    /// see [`Embedder::load_with`]).
    pub fn load(dir: impl AsRef<Path>) -> Result<Embedder> {
        Self::load_with(dir, None)
    }

    /// Load a model directory or GGUF file, pooling as `pooling` says if
    /// given.
    pub fn load_with(dir: impl AsRef<Path>, pooling: Option<Pooling>) -> Result<Embedder> {
        let kernels = crate::kernels::select()?;
        let path = dir.as_ref();
        let inner = if path.is_dir() {
            let files = DirFiles::open(path)?;
            tern_core::Embedder::from_dir(&mut |name| files.take(name), pooling)?
        } else {
            tern_core::Embedder::from_gguf(Buffer::Mapped(crate::load::map(path)?), pooling)?
        };
        Ok(Embedder { inner, threads: Threads::new(0), kernels })
    }

    /// Float matrices converted to `to` (Q8_0) at load, as `--quantize
    /// q8_0` does: the integer path, at a small cost in accuracy.
    pub fn quantize(self, to: tern_core::backend::quant::GgmlType) -> Result<Embedder> {
        Ok(Embedder { inner: self.inner.quantize(to, Buffer::Owned)?, ..self })
    }

    /// Run on `n` threads (0: all cores) instead.
    pub fn with_threads(mut self, n: usize) -> Embedder {
        self.threads = Threads::new(n);
        self
    }

    /// Width of the vectors.
    pub fn dim(&self) -> usize {
        self.inner.dim()
    }

    /// The encoder, tokenizer and input limit underneath.
    pub fn core(&self) -> &tern_core::Embedder<Buffer> {
        &self.inner
    }

    /// What its forward passes run on (the default, 8-bit-activation path;
    /// `exact`: the f32 path).
    pub fn engine(&self, exact: bool) -> Engine<'_> {
        Engine { kernels: self.kernels, par: &self.threads, exact }
    }

    /// One vector per text (batched, but each vector is the same bits as
    /// its text's alone).
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(self.inner.embed(&self.engine(false), texts)?)
    }

    /// The vector of `ids` (the model's input: special tokens included).
    pub fn embed_ids(&self, ids: &[u32]) -> Result<Vec<f32>> {
        Ok(self.inner.embed_ids(&self.engine(false), &[ids])?.remove(0))
    }

    /// A cross-encoder's relevance score of each document for `query`, in
    /// the documents' order (higher: more relevant; the model's logit).
    pub fn rerank(&self, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        Ok(self.inner.rerank(&self.engine(false), query, documents)?)
    }
}
