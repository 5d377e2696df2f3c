//! Encoder models for embeddings: the BERT family (learned absolute
//! positions, token types, post-LayerNorm, GELU, bidirectional attention)
//! from HF safetensors or GGUF, decoders pooled as embedders, and the
//! pooling that turns an input's hidden
//! states into one vector, or a cross-encoder's classifier that scores a
//! pair. Inputs are batched through the matrix products but never mix, so
//! an input's vector is the same bits whatever it is encoded with.

mod config;
mod decoder;
mod embedder;
mod forward;
mod gguf;
mod pooling;
mod weights;

use alloc::format;
use alloc::vec::Vec;

pub use config::EncoderConfig;
pub use decoder::{Decoder, Progress};
pub use embedder::{check_count, Body, Embedder, Pair};
pub use forward::Seq;
pub use pooling::{l2_normalize, Pooling, PoolingMode};
pub(crate) use weights::EncoderWeights;

use crate::backend::QMatrix;
use crate::error::{Error, Result};
use crate::model::{Engine, TensorRef};

/// Tokens one forward pass takes at most: a batch longer than this runs
/// in parts (which changes no result: inputs never mix).
pub(crate) const BATCH_TOKENS: usize = 256;

/// A loaded encoder: immutable, shareable; its bytes held in `B`.
pub struct Encoder<B> {
    bufs: Vec<B>,
    /// Hyper-parameters.
    pub config: EncoderConfig,
    /// Where each weight is.
    pub(crate) weights: EncoderWeights,
    /// How hidden states become one vector (None: a cross-encoder, which
    /// scores pairs instead).
    pub pooling: Option<Pooling>,
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
        QMatrix { ty: t.ty, data, n_cols: t.n_cols, n_rows: t.n_rows, scales: &[], rows8: &[] }
    }
}

impl<B> Encoder<B> {
    /// Whether it is a cross-encoder: a classification head scores pairs
    /// (rerank), instead of pooling one input's states into a vector.
    pub fn scores_pairs(&self) -> bool {
        self.weights.classifier.is_some()
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
        pooling: Option<Pooling>,
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
        to: crate::backend::quant::GgmlType,
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
    /// empty, longer than the model's positions, holds an id outside the
    /// vocabulary or a token type the model has no embedding for.
    pub fn check_input(&self, s: &Seq) -> Result<()> {
        let c = &self.config;
        let ids = s.ids;
        if ids.is_empty() {
            return Err(Error::InvalidArgument { what: "an input of 0 tokens".into() });
        }
        if ids.len() > c.n_pos {
            return Err(Error::ContextFull { n_ctx: c.n_pos, needed: ids.len() });
        }
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= c.n_vocab) {
            return Err(Error::TokenOutOfRange { id, n_vocab: c.n_vocab });
        }
        match s.types {
            Some(t) if t.len() != ids.len() => {
                Err(Error::InvalidArgument { what: format!("{} token types for {} tokens", t.len(), ids.len()) })
            }
            Some(t) => match t.iter().find(|&&ty| ty as usize >= c.n_types) {
                Some(ty) => {
                    Err(Error::InvalidArgument { what: format!("token type {ty} (the model has {})", c.n_types) })
                }
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// Every input checked, then run in forward passes of at most
    /// [`BATCH_TOKENS`] tokens; `each(i, states)` gets input i's last
    /// hidden states (a row of `n_embd` per token).
    fn each_hidden(&self, e: &Engine, seqs: &[Seq], each: &mut dyn FnMut(usize, &[f32])) -> Result<()> {
        seqs.iter().try_for_each(|s| self.check_input(s))?;
        let (view, ne) = (self.view(), self.config.n_embd);
        let mut i = 0;
        while i < seqs.len() {
            let mut end = i + 1;
            let mut tokens = seqs[i].ids.len();
            while end < seqs.len() && tokens + seqs[end].ids.len() <= BATCH_TOKENS {
                tokens += seqs[end].ids.len();
                end += 1;
            }
            // one install per pass: its parallel regions open from a worker
            let mut h = Ok(Vec::new());
            e.par.install(&mut || h = forward::hidden(&view, e, &seqs[i..end]));
            let h = h?;
            let mut at = 0;
            for (j, s) in seqs[i..end].iter().enumerate() {
                each(i + j, &h[at * ne..(at + s.ids.len()) * ne]);
                at += s.ids.len();
            }
            i = end;
        }
        Ok(())
    }

    /// The pooled (and, as the model says, normalised) vector of each
    /// input; the inputs share matrix products, and each vector is the
    /// same bits as that input's alone.
    pub fn embed(&self, e: &Engine, inputs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let pooling = self.pooling.ok_or_else(|| Error::Unsupported {
            what: format!(
                "embeddings from a {} with no pooling (it scores pairs: rerank with it, or choose a pooling)",
                self.config.architecture
            ),
        })?;
        let seqs: Vec<Seq> = inputs.iter().map(|&ids| Seq { ids, types: None }).collect();
        let dim = self.config.n_embd;
        let mut out = alloc::vec![alloc::vec![0.0; dim]; inputs.len()];
        self.each_hidden(e, &seqs, &mut |i, h| pooling.pool(h, inputs[i].len(), dim, &mut out[i]))?;
        Ok(out)
    }

    /// A sequence classifier's outputs (logits, one row of `n_labels` per
    /// input) for each input, from its first token's (`[CLS]`) state.
    pub fn classify(&self, e: &Engine, seqs: &[Seq]) -> Result<Vec<Vec<f32>>> {
        let head = self.weights.classifier.as_ref().ok_or_else(|| Error::Unsupported {
            what: format!(
                "scoring pairs with a {} (it has no classifier head: a cross-encoder does)",
                self.config.architecture
            ),
        })?;
        let ne = self.config.n_embd;
        let mut cls = alloc::vec![0.0; seqs.len() * ne];
        self.each_hidden(e, seqs, &mut |i, h| cls[i * ne..(i + 1) * ne].copy_from_slice(&h[..ne]))?;
        let labels = head.1.b.len();
        let out = forward::classify(&self.view(), e, &cls, head);
        Ok(out.chunks_exact(labels).map(<[f32]>::to_vec).collect())
    }
}
