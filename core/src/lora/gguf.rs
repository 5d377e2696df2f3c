//! llama.cpp's GGUF LoRA files (convert_lora_to_gguf.py writes them):
//! `general.type = adapter`, `adapter.type = lora`, the base's
//! `general.architecture`, `adapter.lora.alpha`, and per projection
//! `blk.N.<tensor>.weight.lora_a` (ggml dims [inputs, rank]) and
//! `.lora_b` ([rank, outputs]).

use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;

use super::{bad, float_type, Found, Meta, Side};
use crate::error::Result;
use crate::gguf::Gguf;
use crate::hash::Fnv;
use crate::model::{Model, Proj, RopeStyle};

pub(super) fn read<'a, B>(bytes: &'a [u8], name: &str, base: &Model<B>) -> Result<(Vec<Found<'a>>, Meta)> {
    let g = Gguf::parse(bytes).map_err(|e| bad(name, format!("not a GGUF file tern can read: {e}")))?;
    let key = |k: &str| g.get_str(k).map_err(|e| bad(name, e.to_string()));
    match key("general.type")? {
        Some("adapter") => {}
        other => {
            return Err(bad(
                name,
                format!("general.type is {}: not an adapter (a GGUF LoRA says `adapter`)", other.unwrap_or("absent")),
            ))
        }
    }
    match key("adapter.type")? {
        Some("lora") => {}
        other => {
            return Err(bad(name, format!("adapter.type {}: tern applies LoRA adapters", other.unwrap_or("absent"))))
        }
    }
    if g.get("adapter.alora.invocation_tokens").is_some() {
        return Err(bad(name, "an activated LoRA (aLoRA: adapter.alora.invocation_tokens); tern applies plain LoRA"));
    }
    let arch = key("general.architecture")?.unwrap_or("(absent)");
    let family = crate::model::Arch::parse(arch).map_err(|_| bad(name, format!("architecture {arch}")))?;
    if family != base.config.arch {
        return Err(bad(name, format!("made for architecture {arch}; the model is {}", base.config.arch)));
    }
    let alpha = match g.get_f32("adapter.lora.alpha").map_err(|e| bad(name, e.to_string()))? {
        Some(a) if !a.is_finite() => return Err(bad(name, format!("adapter.lora.alpha is {a}"))),
        // (llama.cpp reads 0 as absent: the caller's scale alone)
        Some(a) if a != 0.0 => Some(a),
        _ => None,
    };
    // tensors whose bytes overlap another's are refused: a well-formed
    // file lays them out one after another
    let mut spans: Vec<(u64, u64, &str)> =
        g.tensors.iter().map(|t| (t.offset, t.offset + t.data.len() as u64, t.name)).collect();
    spans.sort_unstable();
    if let Some(w) = spans.windows(2).find(|w| w[0].1 > w[1].0) {
        return Err(bad(name, format!("tensors {} and {} overlap", w[0].2, w[1].2)));
    }
    let mut found = Vec::with_capacity(g.tensors.len());
    for t in &g.tensors {
        let (layer, proj, side) = parse_name(t.name).map_err(|what| bad(name, what))?;
        if t.dims.len() != 2 {
            return Err(bad(name, format!("tensor {} has {} dimensions, not 2", t.name, t.dims.len())));
        }
        if !float_type(t.ty) {
            return Err(bad(
                name,
                format!("tensor {} is {}; tern applies f32, f16 and bf16 adapters", t.name, t.ty.name()),
            ));
        }
        let (n_cols, n_rows) = t.rows();
        found.push(Found { name: t.name.to_string(), layer, proj, side, ty: t.ty, n_rows, n_cols, data: t.data });
    }
    let meta = Meta {
        name: name.into(),
        hash: Fnv::new(0).bytes(bytes).finish(),
        alpha,
        rank: None,
        rslora: false,
        adjacent_rows: family.family().gguf_rope == RopeStyle::Adjacent,
    };
    Ok((found, meta))
}

/// `blk.N.<projection>.weight.lora_{a,b}`; anything else named as what
/// tern does not apply.
fn parse_name(n: &str) -> core::result::Result<(usize, Proj, Side), alloc::string::String> {
    let side = if let Some(base) = n.strip_suffix(".weight.lora_a") {
        (base, Side::A)
    } else if let Some(base) = n.strip_suffix(".weight.lora_b") {
        (base, Side::B)
    } else {
        return Err(format!("tensor {n} is not a LoRA matrix (`<weight>.lora_a` or `.lora_b`)"));
    };
    let (base, side) = side;
    let what = |why: &str| format!("tensor {n}: {why}");
    let Some(rest) = base.strip_prefix("blk.") else {
        return Err(what("an adapter of the embedding or output head; tern applies adapters to a layer's projections"));
    };
    let (layer, proj) = rest.split_once('.').ok_or_else(|| what("no layer"))?;
    let layer: usize = layer.parse().map_err(|_| what("its layer is not a number"))?;
    match Proj::ALL.into_iter().find(|p| p.gguf_name() == proj) {
        Some(p) => Ok((layer, p, side)),
        None if proj.ends_with("_exps") || proj.ends_with("_shexp") => {
            Err(what("an adapter of a mixture's experts; tern applies adapters to dense projections"))
        }
        None if proj == "attn_qkv" || proj == "ffn_up_gate" => {
            Err(what("an adapter of a fused projection; tern applies adapters to q/k/v/o/gate/up/down"))
        }
        None => Err(what("tern applies adapters to attn_q/k/v/output and ffn_gate/up/down")),
    }
}
