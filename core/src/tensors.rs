//! Tensors as a model format presents them, and the lookup trait the
//! model binds its weights through: GGUF files and safetensors shards
//! implement it, the model layer reads it, neither knows the other. This is
//! the one file that spells tensor names, GGUF's and HuggingFace's.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::quant::GgmlType;

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
pub enum Naming {
    Gguf,
    /// `model.layers.N.self_attn.q_proj.weight`, … as transformers saves them.
    Hf,
}

impl Naming {
    /// The format's name of a tensor given by its GGUF name.
    pub fn name(self, gguf: &str) -> String {
        if self == Naming::Gguf {
            return gguf.to_string();
        }
        match gguf {
            "token_embd.weight" => return "model.embed_tokens.weight".into(),
            "output_norm.weight" => return "model.norm.weight".into(),
            "output.weight" => return "lm_head.weight".into(),
            _ => {}
        }
        let Some((layer, part)) = gguf.strip_prefix("blk.").and_then(|s| s.split_once('.')) else {
            return gguf.to_string();
        };
        let hf = match part {
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
            "ffn_gate.weight" => "mlp.gate_proj.weight",
            "ffn_up.weight" => "mlp.up_proj.weight",
            "ffn_down.weight" => "mlp.down_proj.weight",
            other => other,
        };
        format!("model.layers.{layer}.{hf}")
    }

    /// Tensors a checkpoint may hold that the forward pass does not use.
    pub(crate) fn ignorable(self, name: &str) -> bool {
        self == Naming::Hf && name.ends_with(".rotary_emb.inv_freq")
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
