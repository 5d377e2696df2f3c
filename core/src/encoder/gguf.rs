//! An encoder from a GGUF file in llama.cpp's `bert` conventions: the
//! hyper-parameters under `bert.*`, `bert.pooling_type`, the classifier's
//! `bert.classifier.output_labels`, the token-type count under
//! `tokenizer.ggml.token_type_count`; the tensors by their GGUF names.

use alloc::format;

use super::{Encoder, EncoderConfig, EncoderWeights, Pooling, PoolingMode};
use crate::error::{Error, Result};
use crate::gguf::keys::{opt_usize_key, usize_key};
use crate::gguf::Gguf;

impl EncoderConfig {
    /// The hyper-parameters a `bert` GGUF's metadata gives.
    pub fn from_gguf(g: &Gguf) -> Result<EncoderConfig> {
        let arch = g.require_str("general.architecture")?;
        if arch != "bert" {
            return Err(Error::UnsupportedArch { arch: arch.into(), supported: super::config::ENCODERS.into() });
        }
        let k = |s: &str| format!("bert.{s}");
        if g.get_bool(&k("attention.causal"))? == Some(true) {
            return Err(Error::Unsupported { what: "a bert GGUF with causal attention".into() });
        }
        let labels = match g.get_array(&k("classifier.output_labels"))? {
            Some(a) => Some(a.len()),
            // the head's rows (bounded by the config's check)
            None => crate::tensors::TensorDir::get(g, "cls.output.weight")
                .map(|t| t.dims.get(1).map_or(1, |&r| r.min(1 << 20) as usize)),
        };
        let c = EncoderConfig {
            architecture: if labels.is_some() { "BertForSequenceClassification" } else { "BertModel" }.into(),
            n_vocab: crate::tensors::n_vocab(g)?,
            n_embd: usize_key(g, &k("embedding_length"))?,
            n_layer: usize_key(g, &k("block_count"))?,
            n_head: usize_key(g, &k("attention.head_count"))?,
            n_ff: usize_key(g, &k("feed_forward_length"))?,
            n_pos: usize_key(g, &k("context_length"))?,
            n_types: opt_usize_key(g, "tokenizer.ggml.token_type_count")?.unwrap_or(2),
            norm_eps: g.get_f32(&k("attention.layer_norm_epsilon"))?.unwrap_or(1e-12),
            n_labels: labels,
        };
        c.check()?;
        Ok(c)
    }
}

impl Pooling {
    /// The file's `{arch}.pooling_type` (llama.cpp's numbers: 1 mean, 2
    /// CLS, 3 last; 0 none — a generation model — and 4 rank — a
    /// cross-encoder — pool nothing); None when absent or not pooled.
    /// GGUF does not record sentence-transformers' `Normalize`: vectors are
    /// normalised, as llama.cpp's are by default.
    pub fn from_gguf(g: &Gguf) -> Result<Option<Pooling>> {
        let key = format!("{}.pooling_type", g.get_str("general.architecture")?.unwrap_or_default());
        let mode = match g.get_u64(&key)? {
            None | Some(0) | Some(4) => return Ok(None),
            Some(1) => PoolingMode::Mean,
            Some(2) => PoolingMode::Cls,
            Some(3) => PoolingMode::Last,
            Some(n) => return Err(Error::Unsupported { what: format!("{key} {n}") }),
        };
        Ok(Some(Pooling { mode, normalize: true }))
    }
}

impl<B: AsRef<[u8]>> Encoder<B> {
    /// A `bert` GGUF held in `bytes`, pooled as `pooling` says, else as
    /// the file says.
    pub fn from_gguf(bytes: B, pooling: Option<Pooling>) -> Result<Encoder<B>> {
        let (config, weights, pooling) = {
            let g = Gguf::parse(bytes.as_ref())?;
            let config = EncoderConfig::from_gguf(&g)?;
            let weights = EncoderWeights::bind(&g, &config, true)?;
            (config, weights, pooling.or(Pooling::from_gguf(&g)?))
        };
        Ok(Encoder { bufs: alloc::vec![bytes], config, weights, pooling })
    }
}
