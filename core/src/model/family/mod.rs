//! Model families: everything tern knows of one architecture — its GGUF
//! and config.json names, llama.cpp's and transformers' defaults, its
//! attention (windows, score scale, softcaps), its block (activation,
//! norms, embedding scale, fused matrices) and its tensor names — in one
//! file each. The GGUF and HF parsers read the dimensions every family
//! shares and ask the family for the rest. Adding a family is its file, a
//! variant of [`Arch`] and a row of [`FAMILIES`].

mod gemma;
mod gemma2;
mod gemma3;
mod llama;
mod mistral;
mod phi3;
mod qwen2;
mod qwen3;

use alloc::vec::Vec;

pub use super::arch::Arch;
use super::config::{Act, RopeStyle, Window};
use crate::error::{Error, Result};
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::fields::Fields;
#[cfg(feature = "std")]
use crate::model::config::RopeSpec;

/// Every family, in lookup order (the first with a name wins: Llama's
/// GGUF name before Mistral's, which llama.cpp writes as `llama` too).
pub(crate) const FAMILIES: [&Family; 7] =
    [&llama::FAMILY, &mistral::FAMILY, &qwen2::FAMILY, &qwen3::FAMILY, &gemma2::FAMILY, &gemma3::FAMILY, &phi3::FAMILY];

/// One family: its names, its block and how its attention is read.
#[cfg_attr(not(feature = "std"), allow(dead_code))] // the HF side needs std
pub(crate) struct Family {
    /// The architecture it loads as.
    pub arch: Arch,
    /// GGUF's `general.architecture`.
    pub gguf_name: &'static str,
    /// config.json's `architectures` entries and `model_type`s.
    pub hf_names: &'static [&'static str],
    /// Its transformers config class's defaults (JSON), under which the
    /// file's own keys go: hub configs leave out what the class fills in.
    pub hf_defaults: Option<&'static str>,
    /// What its transformer block has beyond Llama's.
    pub block: Block,
    /// How GGUF's Q/K rows pair for RoPE (llama.cpp's converter permutes
    /// Llama's; transformers' weights are always `Neox`).
    pub gguf_rope: RopeStyle,
    /// transformers' tensor names where they differ from Llama's, by
    /// the part of the GGUF name after `blk.N.`.
    pub hf_tensors: &'static [(&'static str, &'static str)],
    /// The chat template a GGUF file of this family without one gets.
    pub chat_template: Option<&'static str>,
    /// The attention from GGUF keys and llama.cpp's defaults.
    pub gguf: fn(&GgufKeys, &Dims) -> Result<Attention>,
    /// The RoPE and the attention from config.json and transformers'
    /// defaults.
    #[cfg(feature = "std")]
    pub hf: fn(&Fields, &Dims) -> Result<(RopeSpec, Attention)>,
}

/// A family's transformer block beyond Llama's.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) struct Block {
    /// The feed-forward activation (config.json's `hidden_act` may say
    /// otherwise).
    pub act: Act,
    /// RMSNorms after attention and after the MLP (`post_attention_norm`,
    /// `post_ffw_norm`).
    pub post_norms: bool,
    /// Embedding rows scaled by √n_embd.
    pub embd_scale: bool,
    /// RMSNorm weights stored as w − 1 in transformers' checkpoints.
    pub norm_plus_one: bool,
    /// Q and K normalised per head (`attn_q_norm`, `attn_k_norm`).
    pub qk_norm: bool,
    /// Q/K/V biases always present (else when config.json's
    /// `attention_bias` says, or in GGUF when the file has them).
    pub qkv_bias: bool,
    /// Q/K/V as one matrix (`attn_qkv`), gate and up as one (`ffn_up`).
    pub fused: bool,
}

impl Block {
    /// Llama's block.
    pub(crate) const LLAMA: Block = Block {
        act: Act::Silu,
        post_norms: false,
        embd_scale: false,
        norm_plus_one: false,
        qk_norm: false,
        qkv_bias: false,
        fused: false,
    };
}

/// The dimensions every family shares, which its own rules depend on.
#[cfg_attr(not(feature = "std"), allow(dead_code))]
pub(crate) struct Dims {
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_head: usize,
    pub head_dim: usize,
    pub n_rot: usize,
    pub n_ctx_train: usize,
}

/// A family's attention, beyond the heads.
pub(crate) struct Attention {
    /// Sliding-window layers, if any.
    pub window: Option<Window>,
    /// The scale of the attention scores.
    pub scale: f32,
    /// Softcap of the attention scores.
    pub softcap: Option<f32>,
    /// Softcap of the output logits.
    pub final_softcap: Option<f32>,
}

impl Attention {
    /// head_dim^-½, no window, no softcaps.
    pub(crate) fn plain(d: &Dims) -> Attention {
        Attention { window: None, scale: head_dim_scale(d.head_dim), softcap: None, final_softcap: None }
    }
}

/// The usual attention score scale, head_dim^-½.
pub(crate) fn head_dim_scale(head_dim: usize) -> f32 {
    1.0 / libm::sqrtf(head_dim as f32)
}

/// Every layer windowed by `size`, when a window is given (Mistral, Phi-3).
pub(crate) fn every_layer(size: Option<usize>, n_layer: usize) -> Option<Window> {
    size.map(|size| Window { size, layers: alloc::vec![true; n_layer], rope_inv_freq: None })
}

/// Every `period`-th layer global, the others windowed (transformers'
/// `sliding_window_pattern`, llama.cpp's `LLAMA_SWA_TYPE_STANDARD`).
pub(crate) fn every_nth_global(n_layer: usize, period: usize) -> Vec<bool> {
    (0..n_layer).map(|i| (i + 1) % period != 0).collect()
}

impl Arch {
    /// The architecture of a GGUF `general.architecture` name.
    pub fn parse(s: &str) -> Result<Arch> {
        Family::by_gguf_name(s).map(|f| f.arch)
    }
    /// Its GGUF name.
    pub fn name(self) -> &'static str {
        self.family().gguf_name
    }
    /// Its family.
    pub(crate) fn family(self) -> &'static Family {
        // every Arch has a row (the `every_arch_has_a_family` test)
        FAMILIES.iter().find(|f| f.arch == self).unwrap_or(&FAMILIES[0])
    }
}

impl Family {
    /// The family of a GGUF `general.architecture` name.
    pub(crate) fn by_gguf_name(name: &str) -> Result<&'static Family> {
        let found = FAMILIES.iter().find(|f| f.gguf_name == name);
        found.copied().ok_or_else(|| Error::UnsupportedArch { arch: name.into() })
    }
    /// The family of a config.json architecture or model_type.
    #[cfg(feature = "std")]
    pub(crate) fn by_hf_name(name: &str) -> Result<&'static Family> {
        let found = FAMILIES.iter().find(|f| f.hf_names.contains(&name));
        found.copied().ok_or_else(|| Error::UnsupportedArch { arch: name.into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arch_has_a_family_and_every_name_one_family() {
        for arch in [Arch::Llama, Arch::Qwen2, Arch::Qwen3, Arch::Gemma2, Arch::Gemma3, Arch::Phi3] {
            let f = FAMILIES.iter().find(|f| f.arch == arch).expect("a row");
            assert_eq!(Arch::parse(f.gguf_name), Ok(arch));
        }
        for (i, f) in FAMILIES.iter().enumerate() {
            for n in f.hf_names {
                let others = FAMILIES.iter().enumerate().filter(|(j, g)| *j != i && g.hf_names.contains(n));
                assert_eq!(others.count(), 0, "{n} names two families");
            }
        }
        assert!(Arch::parse("gpt2").is_err());
    }
}
