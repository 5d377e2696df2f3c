//! The normalised model configuration, read from GGUF metadata.

use crate::kernels::scalar::MAX_HEAD_DIM;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::{Error, Result};
use crate::gguf::Gguf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Llama,
    Qwen2,
    Qwen3,
}

impl Arch {
    pub fn parse(s: &str) -> Result<Arch> {
        match s {
            "llama" => Ok(Arch::Llama),
            "qwen2" => Ok(Arch::Qwen2),
            "qwen3" => Ok(Arch::Qwen3),
            _ => Err(Error::UnsupportedArch { arch: s.to_string() }),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Arch::Llama => "llama",
            Arch::Qwen2 => "qwen2",
            Arch::Qwen3 => "qwen3",
        }
    }
}

/// Which elements RoPE rotates together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// ggml "normal" (GGUF llama, whose Q/K rows the converter permuted):
    /// pairs (2i, 2i+1).
    Adjacent,
    /// ggml NEOX / HF `rotate_half`: pairs (i, i + n_rot/2).
    Neox,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub arch: Arch,
    pub name: String,
    pub n_vocab: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub n_head_kv: usize,
    pub head_dim: usize,
    pub n_ff: usize,
    pub n_ctx_train: usize,
    pub norm_eps: f32,
    pub rope_style: RopeStyle,
    pub rope_base: f32,
    /// Rotated dimensions per head (≤ head_dim).
    pub n_rot: usize,
    /// Linear position scaling: positions are multiplied by this.
    pub rope_pos_scale: f32,
    /// `inv_freq[i] = 1 / (base^(2i/n_rot) * freq_factor[i])`, i < n_rot/2.
    pub rope_inv_freq: Vec<f32>,
}

/// Limits no real checkpoint comes near (the largest have ~128 layers,
/// 16k-wide embeddings, 53k-wide feed-forwards, 262k vocabularies): a file
/// past them is refused before anything is sized by it.
pub const MAX_LAYERS: usize = 1024;
pub const MAX_EMBD: usize = 1 << 16;
pub const MAX_FF: usize = 1 << 18;
pub const MAX_HEADS: usize = 1024;
pub const MAX_VOCAB: usize = 1 << 21;
pub const MAX_CTX_TRAIN: usize = 1 << 26;

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
        }
    }
}

fn usize_key(g: &Gguf, key: &str) -> Result<usize> {
    let v = g.require_u64(key)?;
    usize::try_from(v).ok().filter(|&v| v > 0 && v < (1 << 31)).ok_or_else(|| Error::Hyperparameter {
        key: key.into(),
        value: v.to_string(),
        why: "must be in 1..2^31".into(),
    })
}

fn opt_usize_key(g: &Gguf, key: &str) -> Result<Option<usize>> {
    if g.get(key).is_none() {
        return Ok(None);
    }
    usize_key(g, key).map(Some)
}

impl Config {
    /// Read the configuration. `n_vocab` and rope frequency factors come
    /// from tensors, which the caller has already located.
    pub fn from_gguf(g: &Gguf, n_vocab: usize, rope_freq_factors: Option<&[f32]>) -> Result<Config> {
        let arch = Arch::parse(g.require_str("general.architecture")?)?;
        let a = arch.name();
        let k = |s: &str| alloc::format!("{a}.{s}");
        let n_embd = usize_key(g, &k("embedding_length"))?;
        let n_head = usize_key(g, &k("attention.head_count"))?;
        let n_head_kv = opt_usize_key(g, &k("attention.head_count_kv"))?.unwrap_or(n_head);
        let head_dim = opt_usize_key(g, &k("attention.key_length"))?.unwrap_or(n_embd / n_head);
        if let Some(vl) = opt_usize_key(g, &k("attention.value_length"))? {
            if vl != head_dim {
                return Err(Error::Unsupported { what: alloc::format!("value_length {vl} != key_length {head_dim}") });
            }
        }
        let n_rot = opt_usize_key(g, &k("rope.dimension_count"))?.unwrap_or(head_dim);
        check_heads(n_head, n_head_kv, head_dim, n_rot)?;
        let rope_base = g.get_f32(&k("rope.freq_base"))?.unwrap_or(10000.0);
        let mut rope_pos_scale = 1.0f32;
        let scaling = g.get_str(&k("rope.scaling.type"))?.unwrap_or("none");
        match scaling {
            "none" => {}
            "linear" => {
                let f = g.get_f32(&k("rope.scaling.factor"))?.unwrap_or(1.0);
                if !(f > 0.0) {
                    return Err(Error::InvalidValue {
                        field: "rope.scaling.factor",
                        offset: 0,
                        detail: alloc::format!("{f}"),
                    });
                }
                rope_pos_scale = 1.0 / f;
            }
            other => return Err(Error::Unsupported { what: alloc::format!("rope scaling {other:?}") }),
        }
        if let Some(ff) = rope_freq_factors {
            if ff.len() != n_rot / 2 {
                return Err(Error::TensorShape {
                    tensor: "rope_freqs.weight".into(),
                    detail: alloc::format!("{} factors for {} rotated pairs", ff.len(), n_rot / 2),
                });
            }
        }
        let mut rope_inv_freq = inv_freq(rope_base, n_rot);
        if let Some(ff) = rope_freq_factors {
            for (f, d) in rope_inv_freq.iter_mut().zip(ff) {
                *f /= d;
            }
        }
        Ok(Config {
            arch,
            name: g.get_str("general.name")?.unwrap_or("").to_string(),
            n_vocab,
            n_embd,
            n_layer: usize_key(g, &k("block_count"))?,
            n_head,
            n_head_kv,
            head_dim,
            n_ff: usize_key(g, &k("feed_forward_length"))?,
            n_ctx_train: opt_usize_key(g, &k("context_length"))?.unwrap_or(2048),
            norm_eps: g.get_f32(&k("attention.layer_norm_rms_epsilon"))?.unwrap_or(1e-5),
            rope_style: match arch {
                Arch::Llama => RopeStyle::Adjacent,
                Arch::Qwen2 | Arch::Qwen3 => RopeStyle::Neox,
            },
            rope_base,
            n_rot,
            rope_pos_scale,
            rope_inv_freq,
        })
    }

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
        if let Some(f) = self.rope_inv_freq.iter().find(|f| !(f.is_finite() && **f > 0.0)) {
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
        let layer = 2 * e * q + 2 * e * kv + 3 * e * ff;
        let elements = self.n_layer as u128 * layer + self.n_vocab as u128 * e;
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

    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }
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

/// RoPE's `inv_freq[i] = 1 / base^(2i/n_rot)`, i < n_rot/2.
pub(crate) fn inv_freq(base: f32, n_rot: usize) -> Vec<f32> {
    (0..n_rot / 2).map(|i| 1.0 / libm::powf(base, (2 * i) as f32 / n_rot as f32)).collect()
}
