//! Tensors as a model format presents them, and the lookup trait the
//! model binds its weights through: GGUF files and safetensors shards
//! implement it, the model layer reads it, neither knows the other. This
//! file spells the tensor names, GGUF's and HuggingFace's, that every
//! family shares; a family's own transformers names are in its file
//! (`crate::model::family`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::backend::quant::GgmlType;
use crate::error::{Error, Result};

/// A tensor as a model format presents it.
#[derive(Debug, Clone)]
pub struct Located<'a> {
    pub buf: usize,
    /// Byte offset in the buffer, and the bytes.
    pub start: usize,
    pub data: &'a [u8],
    pub ty: GgmlType,
    /// ggml order: `dims[0]` is the contiguous (row) dimension.
    pub dims: Vec<u64>,
}

/// How a format names the tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "std"), allow(dead_code))] // HF directories need std
pub enum Naming {
    Gguf,
    /// `model.layers.N.self_attn.q_proj.weight`, … as transformers saves
    /// them, with the family's own names where it has them.
    Hf {
        layout: HfLayout,
        /// The family's names where they differ from Llama's (GGUF's
        /// after `blk.N.`, transformers' after `layers.N.`).
        renames: &'static [(&'static str, &'static str)],
    },
}

/// Where a transformers checkpoint keeps the language model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub enum HfLayout {
    /// `*ForCausalLM`: `model.…`, `lm_head.weight`.
    CausalLm,
    /// A multimodal checkpoint as transformers 5 saves it:
    /// `model.language_model.…`, `lm_head.weight`.
    LanguageModel,
    /// …as the hub's first Gemma 3 checkpoints are:
    /// `language_model.model.…`, `language_model.lm_head.weight`.
    LanguageModelFirst,
    /// A BERT encoder as `BertModel` saves it: `embeddings.…`,
    /// `encoder.layer.N.…`.
    Bert,
    /// …inside a task model (`BertForSequenceClassification`): `bert.…`,
    /// the head `classifier.…`.
    BertPrefixed,
}

impl HfLayout {
    /// The layout whose embedding `names` holds (CausalLm if none does).
    #[cfg(feature = "std")]
    pub fn detect(names: &[&str]) -> HfLayout {
        if let Some(l) = [HfLayout::Bert, HfLayout::BertPrefixed]
            .into_iter()
            .find(|l| names.contains(&format!("{}embeddings.word_embeddings.weight", l.prefixes().0).as_str()))
        {
            return l;
        }
        [HfLayout::LanguageModel, HfLayout::LanguageModelFirst]
            .into_iter()
            .find(|l| names.contains(&format!("{}embed_tokens.weight", l.prefixes().0).as_str()))
            .unwrap_or(HfLayout::CausalLm)
    }
    /// (the model's prefix, the head's name)
    fn prefixes(self) -> (&'static str, &'static str) {
        match self {
            HfLayout::CausalLm => ("model.", "lm_head.weight"),
            HfLayout::LanguageModel => ("model.language_model.", "lm_head.weight"),
            HfLayout::LanguageModelFirst => ("language_model.model.", "language_model.lm_head.weight"),
            HfLayout::Bert => ("", ""),
            HfLayout::BertPrefixed => ("bert.", ""),
        }
    }
}

/// A BERT checkpoint's name of a tensor given by its GGUF name (llama.cpp's
/// `bert` names), `p` the model's prefix.
fn bert_name(p: &str, gguf: &str) -> String {
    let top = match gguf {
        "token_embd.weight" => "embeddings.word_embeddings.weight",
        "position_embd.weight" => "embeddings.position_embeddings.weight",
        "token_types.weight" => "embeddings.token_type_embeddings.weight",
        "token_embd_norm.weight" => "embeddings.LayerNorm.weight",
        "token_embd_norm.bias" => "embeddings.LayerNorm.bias",
        // a sequence classifier's head, outside the encoder
        "cls.output.weight" => return "classifier.weight".into(),
        "cls.output.bias" => return "classifier.bias".into(),
        "cls.weight" => "pooler.dense.weight",
        "cls.bias" => "pooler.dense.bias",
        _ => "",
    };
    if !top.is_empty() {
        return format!("{p}{top}");
    }
    let Some((layer, part)) = gguf.strip_prefix("blk.").and_then(|s| s.split_once('.')) else {
        return gguf.to_string();
    };
    let (what, kind) = part.rsplit_once('.').unwrap_or((part, ""));
    let hf = match what {
        "attn_q" => "attention.self.query",
        "attn_k" => "attention.self.key",
        "attn_v" => "attention.self.value",
        "attn_output" => "attention.output.dense",
        "attn_output_norm" => "attention.output.LayerNorm",
        "ffn_up" => "intermediate.dense",
        "ffn_down" => "output.dense",
        "layer_output_norm" => "output.LayerNorm",
        other => other,
    };
    format!("{p}encoder.layer.{layer}.{hf}.{kind}")
}

impl Naming {
    /// The format's name of a tensor given by its GGUF name.
    pub fn name(self, gguf: &str) -> String {
        let Naming::Hf { layout, renames } = self else {
            return gguf.to_string();
        };
        let (model, head) = layout.prefixes();
        if matches!(layout, HfLayout::Bert | HfLayout::BertPrefixed) {
            return bert_name(model, gguf);
        }
        match gguf {
            "token_embd.weight" => return format!("{model}embed_tokens.weight"),
            "output_norm.weight" => return format!("{model}norm.weight"),
            "output.weight" => return head.into(),
            _ => {}
        }
        let Some((layer, part)) = gguf.strip_prefix("blk.").and_then(|s| s.split_once('.')) else {
            // the model's own tensors a family names (`*` a stream number)
            let numbered = gguf.split('.').find(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            let pattern = numbered.map_or_else(|| gguf.to_string(), |k| gguf.replacen(&format!(".{k}."), ".*.", 1));
            return match renames.iter().find(|(g, _)| *g == pattern) {
                Some((_, hf)) => format!("{model}{}", hf.replacen('*', numbered.unwrap_or(""), 1)),
                None => gguf.to_string(),
            };
        };
        // one expert's matrix, `ffn_gate.E.weight`: the family's name for
        // `ffn_gate.*` (or the usual `mlp.experts.*.gate_proj.weight`), E for *
        if let Some((what, e)) = part.strip_suffix(".weight").and_then(|p| p.split_once('.')) {
            if e.bytes().all(|b| b.is_ascii_digit()) && !e.is_empty() {
                let pattern = format!("{what}.*");
                let hf = match renames.iter().find(|(g, _)| *g == pattern) {
                    Some((_, h)) => h.to_string(),
                    None => format!("mlp.experts.*.{}_proj.weight", what.strip_prefix("ffn_").unwrap_or(what)),
                };
                return format!("{model}layers.{layer}.{}", hf.replace('*', e));
            }
        }
        let renamed = renames.iter().find(|(g, _)| *g == part).map(|(_, h)| *h);
        let hf = renamed.unwrap_or(match part {
            "attn_norm.weight" => "input_layernorm.weight",
            "attn_q.weight" => "self_attn.q_proj.weight",
            "attn_k.weight" => "self_attn.k_proj.weight",
            "attn_v.weight" => "self_attn.v_proj.weight",
            "attn_q.bias" => "self_attn.q_proj.bias",
            "attn_k.bias" => "self_attn.k_proj.bias",
            "attn_v.bias" => "self_attn.v_proj.bias",
            "attn_output.weight" => "self_attn.o_proj.weight",
            "attn_q_norm.weight" => "self_attn.q_norm.weight",
            "attn_k_norm.weight" => "self_attn.k_norm.weight",
            "ffn_norm.weight" => "post_attention_layernorm.weight",
            "post_attention_norm.weight" => "post_attention_layernorm.weight",
            "post_ffw_norm.weight" => "post_feedforward_layernorm.weight",
            "ffn_gate.weight" => "mlp.gate_proj.weight",
            "ffn_up.weight" => "mlp.up_proj.weight",
            "ffn_down.weight" => "mlp.down_proj.weight",
            "ffn_gate_inp.weight" => "mlp.gate.weight",
            "ffn_gate_shexp.weight" => "mlp.shared_expert.gate_proj.weight",
            "ffn_up_shexp.weight" => "mlp.shared_expert.up_proj.weight",
            "ffn_down_shexp.weight" => "mlp.shared_expert.down_proj.weight",
            "ffn_gate_inp_shexp.weight" => "mlp.shared_expert_gate.weight",
            other => other,
        });
        format!("{model}layers.{layer}.{hf}")
    }

    /// Tensors a checkpoint may hold that the forward pass does not use:
    /// RoPE buffers; a multimodal checkpoint's vision tower and projector.
    pub(crate) fn ignorable(self, name: &str) -> bool {
        let Naming::Hf { layout, .. } = self else { return false };
        // Gemma 3n's are the vision and audio towers and their embedders
        let vision = ["vision_tower.", "multi_modal_projector.", "audio_tower.", "embed_vision.", "embed_audio."];
        let unused_part = match layout {
            HfLayout::CausalLm => false,
            HfLayout::LanguageModel => {
                vision.iter().any(|v| name.strip_prefix("model.").is_some_and(|n| n.starts_with(v)))
            }
            HfLayout::LanguageModelFirst => vision.iter().any(|v| name.starts_with(v)),
            // the pooler of an embedding model (its head, when a sequence
            // classifier has one, is bound by name)
            HfLayout::Bert => name.starts_with("pooler.") || name == "embeddings.position_ids",
            HfLayout::BertPrefixed => name == "bert.embeddings.position_ids",
        };
        unused_part || name.ends_with(".rotary_emb.inv_freq")
    }
}

/// The tensors of one model file or directory, by the format's names.
pub trait TensorDir {
    fn naming(&self) -> Naming;
    fn get(&self, name: &str) -> Option<Located<'_>>;
    /// Every tensor name (for reporting the ones nothing uses).
    fn names(&self) -> Vec<&str>;
}

impl Located<'_> {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// The vocabulary size, from the embedding's shape.
pub fn n_vocab(dir: &dyn TensorDir) -> Result<usize> {
    let name = dir.naming().name("token_embd.weight");
    let t = dir.get(&name).ok_or(Error::MissingTensor { name })?;
    Ok(t.dims.iter().skip(1).product::<u64>() as usize)
}
