//! Model families: everything tern knows of one architecture — its GGUF
//! and config.json names, llama.cpp's and transformers' defaults, its
//! attention (windows, score scale, softcaps), its block (activation,
//! norms, embedding scale, fused matrices) and its tensor names — in one
//! file each. The GGUF and HF parsers read the dimensions every family
//! shares and ask the family for the rest. Adding a family is its file and
//! a row of [`FAMILIES`]; its [`Arch`] is the family itself.

mod gemma;
mod gemma1;
mod gemma2;
mod gemma3;
pub(crate) mod gemma3n;
mod llama;
mod mistral;
mod mixtral;
mod olmoe;
mod phi3;
mod qwen2;
mod qwen2moe;
mod qwen3;
mod qwen3moe;

use alloc::string::String;
use alloc::vec::Vec;

use super::moe::Router;
use super::parts::{Act, RopeStyle, Window};
use crate::error::{Error, Result};
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::fields::Fields;
#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;

/// Every family, in lookup order (the first with a name wins: Llama's
/// GGUF name before Mistral's, which llama.cpp writes as `llama` too).
pub(crate) const FAMILIES: [&Family; 13] = [
    &llama::FAMILY,
    &mistral::FAMILY,
    &mixtral::FAMILY,
    &qwen2::FAMILY,
    &qwen3::FAMILY,
    &qwen2moe::FAMILY,
    &qwen3moe::FAMILY,
    &olmoe::FAMILY,
    &gemma1::FAMILY,
    &gemma2::FAMILY,
    &gemma3::FAMILY,
    &gemma3n::FAMILY,
    &phi3::FAMILY,
];

/// One family: its names, its block and how its attention is read.
#[cfg_attr(not(feature = "std"), allow(dead_code))] // the HF side needs std
pub(crate) struct Family {
    /// Its name in prose ("Gemma 3").
    pub title: &'static str,
    /// GGUF's `general.architecture` (two families may share one: Mistral
    /// converts as `llama`; the first in [`FAMILIES`] reads it).
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
    /// How its router picks experts, for a family with mixture-of-experts
    /// models (a GGUF file of it without `expert_count` is dense).
    pub router: Option<Router>,
    /// The chat template a GGUF file of this family without one gets.
    pub chat_template: Option<&'static str>,
    /// How its SentencePiece vocabulary spells and splits text (GGUF
    /// files of BPE vocabularies ignore it).
    pub spm: SpmFlavor,
    /// The attention from GGUF keys and llama.cpp's defaults.
    pub gguf: fn(&GgufKeys, &Dims) -> Result<Attention>,
    /// The RoPE and the attention from config.json and transformers'
    /// defaults.
    #[cfg(feature = "std")]
    pub hf: fn(&Fields, &Dims) -> Result<(RopeSpec, Attention)>,
}

/// How a family's SentencePiece vocabulary spells and splits its text
/// (`crate::tokenizer::spm` acts on it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum SpmFlavor {
    /// Llama 2, Mistral, TinyLlama...: `▁` put before the text (not after
    /// a special token), spaces as `▁`, the first space dropped on decode.
    Llama,
    /// Gemma: no space put before the text; merges ranked by file order.
    Gemma,
    /// Phi-3: `▁` put before every piece of text, special tokens or not.
    Phi3,
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
    /// The Q and K norms span all heads at once (OLMoE), not each head.
    pub qk_norm_whole: bool,
    /// Gemma 3n's block (`crate::model::gemma3n`): AltUp's streams,
    /// LAuReL, per-layer inputs, shared K/V, V normalised.
    pub altup: bool,
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
        qk_norm_whole: false,
        altup: false,
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

/// A model architecture tern runs: the family a file names, by its
/// GGUF name (a Mistral checkpoint is `llama`, as llama.cpp converts it).
#[derive(Clone, Copy)]
pub struct Arch(&'static Family);

impl Arch {
    /// The architecture of a GGUF `general.architecture` name.
    pub fn parse(s: &str) -> Result<Arch> {
        Family::by_gguf_name(s).map(Arch)
    }
    /// Its GGUF name.
    pub fn name(self) -> &'static str {
        self.0.gguf_name
    }
    /// Its family.
    pub(crate) fn family(self) -> &'static Family {
        self.0
    }
}

impl Family {
    /// Its architecture.
    pub(crate) fn arch(&'static self) -> Arch {
        Arch(self)
    }
}

impl PartialEq for Arch {
    fn eq(&self, other: &Arch) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Arch {}

impl core::fmt::Debug for Arch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Arch({:?})", self.name())
    }
}

impl core::fmt::Display for Arch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl Family {
    /// The family of a GGUF `general.architecture` name.
    pub(crate) fn by_gguf_name(name: &str) -> Result<&'static Family> {
        let found = FAMILIES.iter().find(|f| f.gguf_name == name);
        found.copied().ok_or_else(|| unsupported(name))
    }
    /// The family of a config.json architecture or model_type.
    #[cfg(feature = "std")]
    pub(crate) fn by_hf_name(name: &str) -> Result<&'static Family> {
        let found = FAMILIES.iter().find(|f| f.hf_names.contains(&name));
        found.copied().ok_or_else(|| unsupported(name))
    }
}

/// `name` is no family's: the error lists the families there are.
fn unsupported(name: &str) -> Error {
    let mut supported = String::from("the ");
    for (i, f) in FAMILIES.iter().enumerate() {
        if i > 0 {
            supported.push_str(if i + 1 == FAMILIES.len() { " and " } else { ", " });
        }
        supported.push_str(f.title);
    }
    supported.push_str(" families");
    Error::UnsupportedArch { arch: name.into(), supported }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_family_is_its_arch_and_every_name_one_family() {
        for f in FAMILIES {
            // a GGUF name reads as the first family that has it
            let first = FAMILIES.iter().find(|g| g.gguf_name == f.gguf_name).unwrap();
            assert_eq!(Arch::parse(f.gguf_name).map(|a| a.family().title), Ok(first.title));
            assert_eq!(f.arch().name(), f.gguf_name);
        }
        for (i, f) in FAMILIES.iter().enumerate() {
            for n in f.hf_names {
                let others = FAMILIES.iter().enumerate().filter(|(j, g)| *j != i && g.hf_names.contains(n));
                assert_eq!(others.count(), 0, "{n} names two families");
            }
        }
        let err = Arch::parse("gpt2").unwrap_err();
        assert_eq!(
            err.to_string(),
            "unsupported architecture \"gpt2\" (tern runs the Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen2-MoE, \
             Qwen3-MoE, OLMoE, Gemma, Gemma 2, Gemma 3, Gemma 3n and Phi-3 families)"
        );
    }
}
