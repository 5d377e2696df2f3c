//! The normalised model configuration: what the forward pass needs to
//! know of a model, whichever format it came in (`crate::gguf` and
//! `crate::hf` build it).

use crate::backend::scalar::MAX_HEAD_DIM;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::family::Arch;
use super::gemma3n::Gemma3n;
use super::limits::{MAX_CTX_TRAIN, MAX_EMBD, MAX_FF, MAX_HEADS, MAX_LAYERS, MAX_VOCAB};
use super::moe::{Moe, MAX_EXPERTS};
use super::parts::{Act, LongRope, RopeStyle, Window};
use crate::error::{Error, Result};

/// The hyper-parameters a forward pass needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The architecture.
    pub arch: Arch,
    /// The model's name (`general.name`, or the directory's).
    pub name: String,
    /// Vocabulary size (rows of the embedding).
    pub n_vocab: usize,
    /// Width of the residual stream.
    pub n_embd: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (fewer with grouped-query attention).
    pub n_head_kv: usize,
    /// Elements per head.
    pub head_dim: usize,
    /// Width of the feed-forward layer.
    pub n_ff: usize,
    /// Context the model was trained for.
    pub n_ctx_train: usize,
    /// RMSNorm epsilon.
    pub norm_eps: f32,
    /// Which elements RoPE rotates together.
    pub rope_style: RopeStyle,
    /// RoPE frequency base (θ).
    pub rope_base: f32,
    /// Rotated dimensions per head (≤ head_dim).
    pub n_rot: usize,
    /// Linear position scaling: positions are multiplied by this.
    pub rope_pos_scale: f32,
    /// `inv_freq[i] = 1 / (base^(2i/n_rot) * freq_factor[i])`, i < n_rot/2.
    pub rope_inv_freq: Vec<f32>,
    /// cos and sin are multiplied by this (YaRN's and LongRoPE's
    /// attention factor; 1).
    pub rope_attn_factor: f32,
    /// LongRoPE's frequencies for long contexts (`rope_inv_freq` holds
    /// the short ones).
    pub rope_long: Option<LongRope>,
    /// Scale of the attention scores (1/√head_dim, or Gemma's
    /// `query_pre_attn_scalar`^−½).
    pub attn_scale: f32,
    /// Softcap of the attention scores, `c · tanh(s / c)` (Gemma 2).
    pub attn_softcap: Option<f32>,
    /// Softcap of the output logits (Gemma 2).
    pub final_softcap: Option<f32>,
    /// The feed-forward activation.
    pub act: Act,
    /// Embedding rows are multiplied by this (Gemma: √n_embd, rounded to
    /// f32, as transformers' `normalizer`).
    pub embd_scale: Option<f32>,
    /// RMSNorms after attention and after the MLP, before each residual
    /// add (Gemma 2/3).
    pub post_norms: bool,
    /// Sliding-window layers, if any.
    pub window: Option<Window>,
    /// Q and K normalised as whole rows, not per head (OLMoE).
    pub qk_norm_whole: bool,
    /// The feed-forward layers are mixtures of experts.
    pub moe: Option<Moe>,
    /// Gemma 3n's block: AltUp's streams, LAuReL, per-layer inputs, shared
    /// K/V, per-layer widths (`n_ff` is the widest).
    pub gemma3n: Option<Gemma3n>,
}

/// The fewest bytes a weight can take among the types with a kernel
/// (Q2_K: 84 bytes per 256), as a fraction.
const MIN_WEIGHT_BYTES: (u128, u128) = (84, 256);

/// A hyper-parameter, for naming it as the file does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    Layers,
    Embd,
    Heads,
    Ff,
    Vocab,
    CtxTrain,
    NormEps,
    RopeBase,
    RopeScale,
    Window,
    AttnSoftcap,
    FinalSoftcap,
    Experts,
    ExpertsUsed,
    ExpertFf,
    SharedFf,
}

impl Param {
    /// The key: GGUF's (after `{arch}.`) and config.json's.
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            Param::Layers => ("block_count", "num_hidden_layers"),
            Param::Embd => ("embedding_length", "hidden_size"),
            Param::Heads => ("attention.head_count", "num_attention_heads"),
            Param::Ff => ("feed_forward_length", "intermediate_size"),
            Param::Vocab => ("vocab_size", "vocab_size"),
            Param::CtxTrain => ("context_length", "max_position_embeddings"),
            Param::NormEps => ("attention.layer_norm_rms_epsilon", "rms_norm_eps"),
            Param::RopeBase => ("rope.freq_base", "rope_theta"),
            Param::RopeScale => ("rope.scaling.factor", "rope_scaling"),
            Param::Window => ("attention.sliding_window", "sliding_window"),
            Param::AttnSoftcap => ("attn_logit_softcapping", "attn_logit_softcapping"),
            Param::FinalSoftcap => ("final_logit_softcapping", "final_logit_softcapping"),
            Param::Experts => ("expert_count", "num_experts"),
            Param::ExpertsUsed => ("expert_used_count", "num_experts_per_tok"),
            Param::ExpertFf => ("expert_feed_forward_length", "moe_intermediate_size"),
            Param::SharedFf => ("expert_shared_feed_forward_length", "shared_expert_intermediate_size"),
        }
    }
}

impl Config {
    /// Refuse hyper-parameters no model has, naming the key as the file
    /// spells it (`hf`: config.json's names, else GGUF's): sizes past the
    /// limits above, NaN/inf or non-positive epsilon and RoPE parameters.
    pub fn check(&self, hf: bool) -> Result<()> {
        let bad =
            |p: Param, value: String, why: &str| Error::Hyperparameter { key: self.key(hf, p), value, why: why.into() };
        let sizes = [
            (Param::Layers, self.n_layer, MAX_LAYERS),
            (Param::Embd, self.n_embd, MAX_EMBD),
            (Param::Heads, self.n_head, MAX_HEADS),
            (Param::Ff, self.n_ff, MAX_FF),
            (Param::Vocab, self.n_vocab, MAX_VOCAB),
            (Param::CtxTrain, self.n_ctx_train, MAX_CTX_TRAIN),
        ];
        for (p, v, max) in sizes {
            if v == 0 || v > max {
                return Err(bad(p, v.to_string(), &alloc::format!("must be in 1..={max}")));
            }
        }
        if let Some(m) = &self.moe {
            let sizes = [
                (Param::Experts, m.n_expert, MAX_EXPERTS),
                (Param::ExpertsUsed, m.n_expert_used, m.n_expert),
                (Param::ExpertFf, m.n_ff_exp, MAX_FF),
                (Param::SharedFf, m.n_ff_shared.unwrap_or(1), MAX_FF),
            ];
            for (p, v, max) in sizes {
                if v == 0 || v > max {
                    return Err(bad(p, v.to_string(), &alloc::format!("must be in 1..={max}")));
                }
            }
        }
        let positive = |p: Param, x: f32| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(bad(p, alloc::format!("{x}"), "must be a finite number above 0"))
            }
        };
        positive(Param::NormEps, self.norm_eps)?;
        if self.norm_eps >= 1.0 {
            return Err(bad(Param::NormEps, alloc::format!("{}", self.norm_eps), "must be below 1"));
        }
        positive(Param::RopeBase, self.rope_base)?;
        positive(Param::RopeScale, self.rope_pos_scale)?;
        positive(Param::RopeScale, self.rope_attn_factor)?;
        if let Some(c) = self.attn_softcap {
            positive(Param::AttnSoftcap, c)?;
        }
        if let Some(c) = self.final_softcap {
            positive(Param::FinalSoftcap, c)?;
        }
        if !(self.attn_scale.is_finite() && self.attn_scale > 0.0) {
            return Err(bad(
                Param::Heads,
                alloc::format!("(attention scale {})", self.attn_scale),
                "gives an attention scale that is not a finite number above 0",
            ));
        }
        if let Some(w) = &self.window {
            if w.size == 0 || w.layers.len() != self.n_layer {
                let why = alloc::format!("{} window flags for {} layers", w.layers.len(), self.n_layer);
                return Err(bad(Param::Window, w.size.to_string(), &why));
            }
        }
        if let Some(g) = &self.gemma3n {
            let windowed = self.window.as_ref().map_or(&[][..], |w| &w.layers);
            g.check(hf, self.n_layer, windowed)?;
        }
        let local = self.window.as_ref().and_then(|w| w.rope_inv_freq.as_deref()).unwrap_or(&[]);
        let long = self.rope_long.as_ref().map_or(&[][..], |l| &l.inv_freq);
        if let Some(f) = self.rope_inv_freq.iter().chain(local).chain(long).find(|f| !(f.is_finite() && **f > 0.0)) {
            let why = "gives a RoPE frequency that is not a finite number above 0";
            return Err(bad(Param::RopeScale, alloc::format!("(frequency {f})"), why));
        }
        Ok(())
    }

    /// The fewest bytes the weights this config describes can take (every
    /// matrix in the smallest type with a kernel): a file holding fewer
    /// cannot be this model.
    pub fn min_weight_bytes(&self) -> u128 {
        let (e, q, kv, ff) = (self.n_embd as u128, self.q_dim() as u128, self.kv_dim() as u128, self.n_ff as u128);
        let ffn = match &self.moe {
            None => 3 * e * ff,
            Some(m) => m.layer_params(self.n_embd).1 as u128,
        };
        let layer = 2 * e * q + 2 * e * kv + ffn;
        let mut elements = self.n_layer as u128 * layer + self.n_vocab as u128 * e;
        if let Some(g) = &self.gemma3n {
            // per-layer widths; the layers that share K/V have none
            let ffs: u128 = g.n_ff.iter().map(|&f| 3 * e * f as u128).sum();
            let shared = g.kv_source.iter().enumerate().filter(|(l, s)| l != *s).count() as u128;
            elements =
                self.n_layer as u128 * (2 * e * q + 2 * e * kv) - shared * 2 * e * kv + ffs + self.n_vocab as u128 * e;
        }
        elements * MIN_WEIGHT_BYTES.0 / MIN_WEIGHT_BYTES.1
    }

    /// How the file names `p`.
    fn key(&self, hf: bool, p: Param) -> String {
        match (hf, p.keys()) {
            (true, (_, k)) => k.into(),
            (false, _) if p == Param::Vocab => "token_embd.weight rows".into(),
            (false, (k, _)) => alloc::format!("{}.{k}", self.arch.name()),
        }
    }

    /// `check`, then the weights' smallest size against `file_bytes`.
    pub fn check_fits(&self, hf: bool, file_bytes: u64) -> Result<()> {
        self.check(hf)?;
        let need = self.min_weight_bytes();
        if need > file_bytes as u128 {
            let v = self.n_layer;
            return Err(Error::Hyperparameter {
                key: self.key(hf, Param::Layers),
                value: v.to_string(),
                why: alloc::format!(
                    "{v} layers of this shape need at least {need} bytes of weights; the model's files have {file_bytes}"
                ),
            });
        }
        Ok(())
    }

    /// The RoPE frequencies of a session of `n_ctx` positions: LongRoPE's
    /// long ones past the original context (llama.cpp's rule; transformers
    /// switches when the sequence itself grows past it), else the model's.
    pub fn rope_inv_freq_for(&self, n_ctx: usize) -> &[f32] {
        match &self.rope_long {
            Some(l) if n_ctx > l.orig_ctx => &l.inv_freq,
            _ => &self.rope_inv_freq,
        }
    }

    /// The widest feed-forward layer a token runs: the dense one, or the
    /// widest of an expert and the shared expert.
    pub fn ff_widest(&self) -> usize {
        if let Some(g) = &self.gemma3n {
            return g.widest_ff();
        }
        match &self.moe {
            None => self.n_ff,
            Some(m) => m.n_ff_exp.max(m.n_ff_shared.unwrap_or(0)),
        }
    }

    /// Layer `l`'s feed-forward width.
    pub fn n_ff_of(&self, l: usize) -> usize {
        self.gemma3n.as_ref().map_or(self.n_ff, |g| g.n_ff[l])
    }

    /// The layer whose keys and values layer `l` attends to.
    pub fn kv_source(&self, l: usize) -> usize {
        self.gemma3n.as_ref().map_or(l, |g| g.kv_source[l])
    }

    /// Width of all query heads together.
    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }
    /// Width of all key (or value) heads together.
    pub fn kv_dim(&self) -> usize {
        self.n_head_kv * self.head_dim
    }
}

/// Checks every format shares: the head layout and the rotated dims.
pub(crate) fn check_heads(n_head: usize, n_head_kv: usize, head_dim: usize, n_rot: usize) -> Result<()> {
    if n_head_kv == 0 || n_head % n_head_kv != 0 {
        return Err(Error::InvalidValue {
            field: "attention.head_count_kv",
            offset: 0,
            detail: alloc::format!("{n_head} heads are not a multiple of {n_head_kv} KV heads"),
        });
    }
    if head_dim == 0 || head_dim > MAX_HEAD_DIM || head_dim % 2 != 0 {
        return Err(Error::Unsupported { what: alloc::format!("head_dim {head_dim} (even, at most {MAX_HEAD_DIM})") });
    }
    if n_rot > head_dim || n_rot % 2 != 0 {
        return Err(Error::InvalidValue {
            field: "rope.dimension_count",
            offset: 0,
            detail: alloc::format!("{n_rot} for head_dim {head_dim}"),
        });
    }
    Ok(())
}

/// The embedding scale of a family that scales (Gemma), √n_embd as an
/// f32 (transformers' `normalizer`; llama.cpp's `sqrtf`: the same value,
/// both correctly rounded).
pub(crate) fn embd_scale(n_embd: usize) -> f32 {
    libm::sqrtf(n_embd as f32)
}
