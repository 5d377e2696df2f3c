//! A GGUF file as a model: its configuration from the metadata, its
//! weights bound from its tensors.

use alloc::string::ToString;

use super::keys::GgufKeys;
use super::rope::rope;
use super::Gguf;
use crate::error::{Error, Result};
use crate::model::config::{check_heads, embd_scale, Config};
use crate::model::family::{gemma3n, Dims, Family};
use crate::model::moe::Moe;
use crate::model::weights::{self, Expect, Weights};
use crate::model::Model;
use crate::tensors;

impl<B: AsRef<[u8]>> Model<B> {
    /// Parse a GGUF file held in `bytes`, bind and check its weights, and
    /// let `with` read anything else it needs (e.g. the tokenizer) from the
    /// same parse.
    pub fn load_gguf_with<T>(bytes: B, with: impl FnOnce(&Gguf) -> Result<T>) -> Result<(Model<B>, T)> {
        let (config, weights, extra) = {
            let g = Gguf::parse(bytes.as_ref())?;
            let ff = weights::rope_freq_factors(&g)?;
            let config = Config::from_gguf(&g, tensors::n_vocab(&g)?, ff.as_deref())?;
            config.check_fits(false, bytes.as_ref().len() as u64)?;
            let weights = Weights::bind(&g, &config, Expect::GGUF)?;
            (config, weights, with(&g)?)
        };
        Ok((Model::from_parts(alloc::vec![bytes], config, weights)?, extra))
    }

    /// Parse a GGUF file held in `bytes` into a model.
    pub fn load_gguf(bytes: B) -> Result<Model<B>> {
        Ok(Self::load_gguf_with(bytes, |_| Ok(()))?.0)
    }
}

impl Config {
    /// Read the configuration. `n_vocab` and rope frequency factors come
    /// from tensors, which the caller has already located.
    pub fn from_gguf(g: &Gguf, n_vocab: usize, rope_freq_factors: Option<&[f32]>) -> Result<Config> {
        let family = Family::by_gguf_name(g.require_str("general.architecture")?)?;
        let a = family.gguf_name;
        let keys = GgufKeys { g, arch: a };
        let n_embd = keys.usize("embedding_length")?;
        let n_head = keys.usize("attention.head_count")?;
        let n_head_kv = keys.opt_usize("attention.head_count_kv")?.unwrap_or(n_head);
        let head_dim = keys.opt_usize("attention.key_length")?.unwrap_or(n_embd / n_head);
        if let Some(vl) = keys.opt_usize("attention.value_length")? {
            if vl != head_dim {
                return Err(Error::Unsupported { what: alloc::format!("value_length {vl} != key_length {head_dim}") });
            }
        }
        let n_rot = keys.opt_usize("rope.dimension_count")?.unwrap_or(head_dim);
        check_heads(n_head, n_head_kv, head_dim, n_rot)?;
        let rope = rope(&keys, n_rot, rope_freq_factors)?;
        let n_layer = keys.usize("block_count")?;
        let n_ctx_train = keys.opt_usize("context_length")?.unwrap_or(2048);
        let dims = Dims { n_layer, n_embd, n_head, head_dim, n_rot, n_ctx_train };
        let attention = (family.gguf)(&keys, &dims)?;
        let block = family.block;
        let windowed = attention.window.as_ref().map_or(&[][..], |w| &w.layers);
        let gemma3n = block.altup.then(|| gemma3n::from_gguf(&keys, n_layer, windowed)).transpose()?;
        let n_ff = gemma3n.as_ref().map_or_else(|| keys.usize("feed_forward_length"), |g| Ok(g.widest_ff()))?;
        let moe = moe(&keys, family, n_ff)?;
        Ok(Config {
            arch: family.arch(),
            name: g.get_str("general.name")?.unwrap_or("").to_string(),
            n_vocab,
            n_embd,
            n_layer,
            n_head,
            n_head_kv,
            head_dim,
            n_ff,
            n_ctx_train,
            norm_eps: keys.f32("attention.layer_norm_rms_epsilon")?.unwrap_or(1e-5),
            rope_style: family.gguf_rope,
            rope_base: rope.base,
            n_rot,
            rope_pos_scale: rope.pos_scale,
            rope_inv_freq: rope.inv_freq,
            rope_attn_factor: rope.attn_factor,
            rope_long: rope.long,
            attn_scale: attention.scale,
            attn_softcap: attention.softcap,
            final_softcap: attention.final_softcap,
            act: block.act,
            embd_scale: block.embd_scale.then(|| embd_scale(n_embd)),
            post_norms: block.post_norms,
            window: attention.window,
            qk_norm_whole: block.qk_norm_whole,
            moe,
            gemma3n,
        })
    }
}

/// The experts, as `expert_count`, `expert_used_count`,
/// `expert_feed_forward_length` (else `feed_forward_length`),
/// `expert_shared_feed_forward_length` and `expert_weights_norm` (else the
/// family's rule) say; refused where the family routes otherwise or has
/// none.
fn moe(keys: &GgufKeys, family: &Family, n_ff: usize) -> Result<Option<Moe>> {
    let count_key = keys.key("expert_count");
    let count = keys.g.get_u64(&count_key)?.filter(|&n| n > 0);
    let router = match (count, family.router) {
        (None, Some(r)) if !r.dense_too => return Err(Error::MissingKey { key: count_key }),
        (None, _) => return Ok(None),
        (Some(_), None) => {
            let what = alloc::format!("{count_key}: experts in a {} file", family.title);
            return Err(Error::Unsupported { what });
        }
        (Some(_), Some(r)) => r,
    };
    if let Some(g) = keys.g.get_u64(&keys.key("expert_gating_func"))?.filter(|&g| g > 1) {
        let what = alloc::format!("{} {g} (tern's experts are routed by softmax)", keys.key("expert_gating_func"));
        return Err(Error::Unsupported { what });
    }
    if let Some(x) = keys.f32("expert_weights_scale")?.filter(|&x| x != 0.0 && x != 1.0) {
        let what = alloc::format!("{} {x} (tern's expert weights are unscaled)", keys.key("expert_weights_scale"));
        return Err(Error::Unsupported { what });
    }
    Ok(Some(Moe {
        n_expert: keys.usize("expert_count")?,
        n_expert_used: keys.usize("expert_used_count")?,
        n_ff_exp: keys.opt_usize("expert_feed_forward_length")?.unwrap_or(n_ff),
        norm_topk: keys.g.get_bool(&keys.key("expert_weights_norm"))?.unwrap_or(router.gguf_norm),
        n_ff_shared: match router.shared_expert {
            true => Some(keys.opt_usize("expert_shared_feed_forward_length")?.unwrap_or(n_ff)),
            false => None,
        },
    }))
}
