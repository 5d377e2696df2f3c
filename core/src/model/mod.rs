//! The model (immutable, shareable) and the session (KV cache, position,
//! scratch) that runs it. `forward` serves prefill and decode alike.

pub mod config;
mod forward;
pub mod kv_cache;
pub mod matmul;
pub mod rope;
pub mod scratch;
#[cfg(test)]
mod tests;
pub mod weights;

use alloc::vec::Vec;

pub use config::{Arch, Config, RopeStyle};
pub use matmul::Engine;
pub use weights::{TensorRef, Weights};

use crate::error::{Error, Result};
use crate::gguf::Gguf;
use crate::kernels::QMatrix;
use kv_cache::KvCache;
use scratch::Scratch;

/// Injected faults, for tests proving the parity checks can fail. Only the
/// `faults` feature can set them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Rotate the other RoPE pairing (adjacent ⇄ NEOX).
    pub rope_pairing: bool,
    /// Attend to the positions after the query instead of before it.
    pub mask_inverted: bool,
    /// Attend to one position fewer (the query's own K/V left out).
    pub frontier_off_by_one: bool,
    /// Use K's projection for Q and Q's for K.
    pub swap_qk: bool,
}

pub struct Model<B> {
    bytes: B,
    pub config: Config,
    pub weights: Weights,
}

impl<B: AsRef<[u8]>> Model<B> {
    /// Parse a GGUF file held in `bytes`, bind and check its weights, and
    /// let `with` read anything else it needs (e.g. the tokenizer) from the
    /// same parse.
    pub fn load_gguf_with<T>(bytes: B, with: impl FnOnce(&Gguf) -> Result<T>) -> Result<(Model<B>, T)> {
        let (config, weights, extra) = {
            let g = Gguf::parse(bytes.as_ref())?;
            let ff = weights::rope_freq_factors(&g)?;
            let config = Config::from_gguf(&g, weights::n_vocab(&g)?, ff.as_deref())?;
            let weights = Weights::bind(&g, &config)?;
            (config, weights, with(&g)?)
        };
        Ok((Model { bytes, config, weights }, extra))
    }

    pub fn load_gguf(bytes: B) -> Result<Model<B>> {
        Ok(Self::load_gguf_with(bytes, |_| Ok(()))?.0)
    }

    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    pub fn matrix(&self, t: &TensorRef) -> QMatrix<'_> {
        QMatrix { ty: t.ty, data: &self.bytes.as_ref()[t.start..t.start + t.len], n_cols: t.n_cols, n_rows: t.n_rows }
    }

    /// A new session holding up to `n_ctx` positions, running batches of
    /// up to `n_batch` tokens per forward step.
    pub fn session(&self, n_ctx: usize, n_batch: usize) -> Session {
        let n_batch = n_batch.clamp(1, n_ctx.max(1));
        Session {
            kv: KvCache::new(&self.config, n_ctx),
            scratch: Scratch::new(&self.config, n_batch, n_ctx),
            n_past: 0,
            logits: Vec::new(),
            faults: Faults::default(),
        }
    }
}

/// Which positions of a forward call get logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    /// The last token only (prefill before sampling, decode).
    Last,
    /// Every token of the call (perplexity, parity tests).
    All,
    None,
}

pub struct Session {
    kv: KvCache,
    scratch: Scratch,
    /// Positions already in the cache.
    n_past: usize,
    logits: Vec<f32>,
    faults: Faults,
}

impl Session {
    pub fn n_past(&self) -> usize {
        self.n_past
    }
    pub fn n_ctx(&self) -> usize {
        self.kv.n_ctx
    }
    /// Forget everything after the first `n` positions.
    pub fn truncate(&mut self, n: usize) {
        self.n_past = self.n_past.min(n);
    }
    /// Bytes held by the KV cache and the scratch buffers.
    pub fn bytes(&self) -> usize {
        self.kv.bytes() + self.scratch.bytes()
    }

    /// Run `tokens` at positions `n_past..`, append them to the cache, and
    /// return the requested logits: (rows, n_vocab) row-major.
    pub fn forward<B: AsRef<[u8]>>(&mut self, m: &Model<B>, e: &Engine, tokens: &[u32], want: Logits) -> Result<&[f32]> {
        let c = &m.config;
        let needed = self.n_past + tokens.len();
        if needed > self.kv.n_ctx {
            return Err(Error::ContextFull { n_ctx: self.kv.n_ctx, needed });
        }
        if let Some(&id) = tokens.iter().find(|&&id| id as usize >= c.n_vocab) {
            return Err(Error::TokenOutOfRange { id, n_vocab: c.n_vocab });
        }
        let n_rows = match want {
            Logits::Last => tokens.len().min(1),
            Logits::All => tokens.len(),
            Logits::None => 0,
        };
        self.logits.resize(n_rows * c.n_vocab, 0.0);
        let mut row = 0;
        for (i, batch) in tokens.chunks(self.scratch.n_batch).enumerate() {
            let last_batch = (i + 1) * self.scratch.n_batch >= tokens.len();
            let (first, n) = match want {
                Logits::All => (0, batch.len()),
                Logits::Last if last_batch => (batch.len() - 1, 1),
                _ => (0, 0),
            };
            let out = &mut self.logits[row * c.n_vocab..(row + n) * c.n_vocab];
            forward::batch(m, e, &mut self.kv, &mut self.scratch, self.n_past, batch, first, out, self.faults)?;
            self.n_past += batch.len();
            row += n;
        }
        Ok(&self.logits)
    }

    #[cfg(feature = "faults")]
    pub fn set_faults(&mut self, f: Faults) {
        self.faults = f;
    }
}
