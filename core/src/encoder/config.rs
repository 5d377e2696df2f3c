//! An encoder's hyper-parameters from its config.json: the BERT family as
//! transformers saves it (`BertModel`, `BertForSequenceClassification`),
//! every count bounded before anything is sized by it.

use alloc::format;
use alloc::string::{String, ToString};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::hf::fields::{bad, Fields};
use crate::model::limits::{MAX_EMBD, MAX_FF, MAX_HEADS, MAX_LAYERS, MAX_VOCAB};

/// What tern runs as an encoder, for the error naming another.
pub(crate) const ENCODERS: &str = "BERT encoders (bert, BertModel, BertForSequenceClassification)";

/// The longest input an encoder may take (positions it has embeddings for).
pub(crate) const MAX_POSITIONS: usize = 1 << 16;

/// What an encoder is.
#[derive(Debug, Clone, PartialEq)]
pub struct EncoderConfig {
    /// config.json's `architectures[0]`.
    pub architecture: String,
    /// Vocabulary size.
    pub n_vocab: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Attention heads (each `n_embd / n_head` wide).
    pub n_head: usize,
    /// Feed-forward width.
    pub n_ff: usize,
    /// Positions with a learned embedding: the longest input.
    pub n_pos: usize,
    /// Token types (segments) with an embedding.
    pub n_types: usize,
    /// LayerNorm epsilon.
    pub norm_eps: f32,
    /// Outputs of a sequence classifier's head (None: an embedding model).
    pub n_labels: Option<usize>,
}

impl EncoderConfig {
    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.n_embd / self.n_head
    }

    /// Parse and check a BERT config.json.
    pub fn parse(bytes: &[u8]) -> Result<EncoderConfig> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad("(file)", e.to_string()))?;
        let Value::Object(top) = v else { return Err(bad("(file)", "not a JSON object")) };
        let f = Fields(&top);
        let architecture = match f.get("architectures") {
            Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => a[0].as_str().unwrap_or("").to_string(),
            Some(v) => return Err(bad("architectures", format!("{v} is not a list of one name"))),
            None => f.opt_str("model_type")?.unwrap_or("").to_string(),
        };
        let classifier = match architecture.as_str() {
            "BertModel" | "bert" => false,
            "BertForSequenceClassification" => true,
            _ => return Err(Error::UnsupportedArch { arch: architecture, supported: ENCODERS.into() }),
        };
        if let Some(a) = f.opt_str("hidden_act")?.filter(|&a| a != "gelu") {
            return Err(Error::Unsupported { what: format!("config.json: hidden_act {a:?} (BERT's is gelu)") });
        }
        if let Some(p) = f.opt_str("position_embedding_type")?.filter(|&p| p != "absolute") {
            return Err(Error::Unsupported { what: format!("config.json: position_embedding_type {p:?}") });
        }
        let n_labels = match (classifier, f.get("id2label")) {
            (false, _) => None,
            (true, Some(Value::Object(m))) => Some(m.len()),
            (true, _) => Some(f.opt_usize("num_labels")?.unwrap_or(2)),
        };
        let c = EncoderConfig {
            architecture,
            n_vocab: f.usize("vocab_size")?,
            n_embd: f.usize("hidden_size")?,
            n_layer: f.usize("num_hidden_layers")?,
            n_head: f.usize("num_attention_heads")?,
            n_ff: f.usize("intermediate_size")?,
            n_pos: f.usize("max_position_embeddings")?,
            n_types: f.opt_usize("type_vocab_size")?.unwrap_or(2),
            norm_eps: f.opt_f64("layer_norm_eps")?.unwrap_or(1e-12) as f32,
            n_labels,
        };
        c.check()?;
        Ok(c)
    }

    /// Every size within tern's bounds and consistent with the others.
    pub fn check(&self) -> Result<()> {
        let limits = [
            ("vocab_size", self.n_vocab, MAX_VOCAB),
            ("hidden_size", self.n_embd, MAX_EMBD),
            ("num_hidden_layers", self.n_layer, MAX_LAYERS),
            ("num_attention_heads", self.n_head, MAX_HEADS),
            ("intermediate_size", self.n_ff, MAX_FF),
            ("max_position_embeddings", self.n_pos, MAX_POSITIONS),
            ("type_vocab_size", self.n_types, 1 << 10),
            ("num_labels", self.n_labels.unwrap_or(1), 1 << 16),
        ];
        for (field, n, max) in limits {
            if n == 0 || n > max {
                return Err(bad(field, format!("{n} (1..={max})")));
            }
        }
        if !self.n_embd.is_multiple_of(self.n_head) || self.head_dim() > crate::backend::scalar::MAX_HEAD_DIM {
            let detail = format!("{} heads do not split {} into heads tern runs", self.n_head, self.n_embd);
            return Err(bad("num_attention_heads", detail));
        }
        if !(self.norm_eps > 0.0 && self.norm_eps < 1.0) {
            return Err(bad("layer_norm_eps", format!("{}", self.norm_eps)));
        }
        Ok(())
    }
}
