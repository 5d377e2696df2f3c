//! Encoder models for embeddings: the BERT family (learned absolute
//! positions, token types, post-LayerNorm, GELU, bidirectional attention)
//! from HF safetensors, and the pooling that turns an input's hidden
//! states into one vector. Each input runs alone, so its vector is the same
//! bits whatever it is encoded with.

mod config;
mod embedder;
mod forward;
mod pooling;
mod weights;

use alloc::vec::Vec;

pub use config::{EncoderConfig, MAX_POSITIONS};
pub use embedder::{check_count, Embedder, MAX_INPUTS};
pub use pooling::{l2_normalize, Pooling, PoolingMode};
pub use weights::EncoderWeights;

use crate::backend::QMatrix;
use crate::error::{Error, Result};
use crate::model::{Engine, TensorRef};

/// A loaded encoder: immutable, shareable; its bytes held in `B`.
pub struct Encoder<B> {
    bufs: Vec<B>,
    /// Hyper-parameters.
    pub config: EncoderConfig,
    /// Where each weight is.
    pub weights: EncoderWeights,
    /// How hidden states become one vector.
    pub pooling: Pooling,
}

/// The model as the forward pass reads it.
struct EncoderView<'a> {
    config: &'a EncoderConfig,
    weights: &'a EncoderWeights,
    bufs: Vec<&'a [u8]>,
}

impl EncoderView<'_> {
    fn matrix(&self, t: &TensorRef) -> QMatrix<'_> {
        let data = &self.bufs[t.buf][t.start..t.start + t.len];
        QMatrix { ty: t.ty, data, n_cols: t.n_cols, n_rows: t.n_rows, scales: &[] }
    }
}

impl<B: AsRef<[u8]>> Encoder<B> {
    /// An HF checkpoint: `config_json`, the safetensors `shards` (file
    /// name, bytes; one file or an index's), and its pooling. Every
    /// problem with the tensors is reported at once, before any is read.
    #[cfg(feature = "std")]
    pub fn from_hf(
        config_json: &[u8],
        index: Option<&crate::hf::Index>,
        shards: Vec<(alloc::string::String, B)>,
        pooling: Pooling,
    ) -> Result<Encoder<B>> {
        let config = EncoderConfig::parse(config_json)?;
        let weights = {
            let views: Vec<(&str, &[u8])> = shards.iter().map(|(n, b)| (n.as_str(), b.as_ref())).collect();
            let (dir, mut problems) = crate::hf::Shards::read(&views, index, None)?;
            if let Err(e) = EncoderWeights::bind(&dir, &config, false) {
                crate::hf::flatten(e, &mut problems);
            }
            match problems.len() {
                0 => EncoderWeights::bind(&dir, &config, true)?,
                1 => return Err(problems.remove(0)),
                _ => return Err(Error::Tensors { problems }),
            }
        };
        Ok(Encoder { bufs: shards.into_iter().map(|s| s.1).collect(), config, weights, pooling })
    }

    /// Float matrices converted to `to` (Q8_0) at load, into a new buffer
    /// `wrap` makes: the 8-bit-activation integer path then runs them.
    pub fn quantize(
        mut self,
        to: crate::quant::GgmlType,
        wrap: impl FnOnce(Vec<u8>) -> B,
    ) -> Result<(Encoder<B>, crate::model::Requantized)> {
        let r = crate::model::requant::quantize_matrices(&mut self.bufs, &mut self.weights, to, wrap)?;
        Ok((self, r))
    }

    fn view(&self) -> EncoderView<'_> {
        EncoderView {
            config: &self.config,
            weights: &self.weights,
            bufs: self.bufs.iter().map(AsRef::as_ref).collect(),
        }
    }

    /// The input as the model takes it: an error naming the limit if it is
    /// empty, longer than the model's positions, or holds an id outside
    /// the vocabulary.
    pub fn check_input(&self, ids: &[u32]) -> Result<()> {
        let c = &self.config;
        if ids.is_empty() {
            return Err(Error::InvalidArgument { what: "an input of 0 tokens".into() });
        }
        if ids.len() > c.n_pos {
            return Err(Error::ContextFull { n_ctx: c.n_pos, needed: ids.len() });
        }
        match ids.iter().find(|&&id| id as usize >= c.n_vocab) {
            Some(&id) => Err(Error::TokenOutOfRange { id, n_vocab: c.n_vocab }),
            None => Ok(()),
        }
    }

    /// The last hidden states of `ids`, one row of `n_embd` per token.
    pub fn hidden(&self, e: &Engine, ids: &[u32]) -> Result<Vec<f32>> {
        self.check_input(ids)?;
        forward::hidden(&self.view(), e, ids)
    }

    /// The pooled (and, as the model says, normalised) vector of `ids`.
    pub fn embed(&self, e: &Engine, ids: &[u32]) -> Result<Vec<f32>> {
        let h = self.hidden(e, ids)?;
        let dim = self.config.n_embd;
        let mut out = alloc::vec![0.0; dim];
        self.pooling.pool(&h, ids.len(), dim, &mut out);
        Ok(out)
    }
}
