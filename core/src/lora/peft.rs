//! PEFT's LoRA directories: `adapter_config.json` (`r`, `lora_alpha`,
//! `use_rslora`, `target_modules`, `fan_in_fan_out`, and what tern
//! refuses: `use_dora`, `modules_to_save`, `bias`, patterns) beside
//! `adapter_model.safetensors` (`….layers.N.self_attn.q_proj.lora_A.weight`
//! [rank, inputs], `lora_B.weight` [outputs, rank]).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use safetensors::tensor::{Dtype, SafeTensors};
use serde_json::Value;

use super::{bad, Found, Meta, Side};
use crate::backend::quant::GgmlType;
use crate::error::Result;
use crate::hash::Fnv;
use crate::model::Proj;

pub(super) fn read<'a>(config: &[u8], tensors: &'a [u8], name: &str) -> Result<(Vec<Found<'a>>, Meta)> {
    let c: Value =
        serde_json::from_slice(config).map_err(|e| bad(name, format!("adapter_config.json does not parse: {e}")))?;
    let field = |k: &str| c.get(k).filter(|v| !v.is_null());
    if let Some(t) = field("peft_type").and_then(Value::as_str).filter(|t| *t != "LORA") {
        return Err(bad(name, format!("peft_type {t}: tern applies LoRA adapters")));
    }
    if field("use_dora").and_then(Value::as_bool) == Some(true) {
        return Err(bad(name, "DoRA (use_dora): tern applies plain LoRA, without magnitude vectors"));
    }
    if field("modules_to_save").is_some_and(|v| v.as_array().is_none_or(|a| !a.is_empty())) {
        return Err(bad(
            name,
            format!("modules_to_save {}: tern applies low-rank pairs, not whole trained modules", c["modules_to_save"]),
        ));
    }
    match field("bias").and_then(Value::as_str) {
        None | Some("none") => {}
        Some(b) => return Err(bad(name, format!("bias = {b}: tern applies adapters without trained biases"))),
    }
    if field("lora_bias").and_then(Value::as_bool) == Some(true) {
        return Err(bad(name, "lora_bias: tern applies adapters without trained biases"));
    }
    for k in ["rank_pattern", "alpha_pattern"] {
        if field(k).is_some_and(|v| v.as_object().is_none_or(|o| !o.is_empty())) {
            return Err(bad(name, format!("{k}: tern applies one rank and alpha to every module")));
        }
    }
    if field("layer_replication").is_some() {
        return Err(bad(name, "layer_replication: tern applies adapters to the base's own layers"));
    }
    if field("target_parameters").is_some_and(|v| v.as_array().is_none_or(|a| !a.is_empty())) {
        return Err(bad(name, "target_parameters: tern applies adapters to projections, not to parameters"));
    }
    if let Some(Value::Array(ms)) = field("target_modules") {
        let unknown: Vec<&str> = ms
            .iter()
            .map(|m| m.as_str().unwrap_or("?"))
            .filter(|m| Proj::ALL.iter().all(|p| p.hf_name() != *m))
            .collect();
        if !unknown.is_empty() {
            return Err(bad(
                name,
                format!("target_modules {unknown:?}: tern applies adapters to q/k/v/o/gate/up/down_proj"),
            ));
        }
    }
    let rank = match field("r") {
        None => 8, // PEFT's default
        Some(r) => match r.as_u64() {
            Some(r) if r as usize <= super::MAX_RANK => r as usize,
            Some(r) => return Err(bad(name, format!("r = {r}: past the largest rank, {}", super::MAX_RANK))),
            None => return Err(bad(name, format!("r is {r}, not a whole number"))),
        },
    };
    let alpha = match field("lora_alpha") {
        None => 8.0, // PEFT's default
        Some(a) => a.as_f64().ok_or_else(|| bad(name, format!("lora_alpha is {a}, not a number")))?,
    };
    if !(alpha as f32).is_finite() {
        return Err(bad(name, format!("lora_alpha is {alpha}")));
    }
    let rslora = field("use_rslora").and_then(Value::as_bool).unwrap_or(false);
    // (`fan_in_fan_out` only says how a Conv1D base stores its weight: A
    // and B are the same either way, and the bases tern runs are Linear,
    // for which PEFT itself sets it false)

    let st = SafeTensors::deserialize(tensors)
        .map_err(|e| bad(name, format!("adapter_model.safetensors does not parse: {e}")))?;
    let mut found = Vec::new();
    for (tname, view) in st.tensors() {
        let (layer, proj, side) = parse_name(&tname).map_err(|what| bad(name, what))?;
        let ty = match view.dtype() {
            Dtype::F32 => GgmlType::F32,
            Dtype::F16 => GgmlType::F16,
            Dtype::BF16 => GgmlType::BF16,
            d => return Err(bad(name, format!("tensor {tname} is {d:?}; tern applies F32, F16 and BF16 adapters"))),
        };
        let [n_rows, n_cols] = view.shape()[..] else {
            return Err(bad(name, format!("tensor {tname} has shape {:?}, not 2-D", view.shape())));
        };
        found.push(Found { name: tname, layer, proj, side, ty, n_rows, n_cols, data: view.data() });
    }
    let meta = Meta {
        name: name.into(),
        hash: Fnv::new(0).bytes(config).bytes(tensors).finish(),
        alpha: Some(alpha as f32),
        rank: Some(rank),
        rslora,
        adjacent_rows: false,
    };
    Ok((found, meta))
}

/// `….layers.N.{self_attn,mlp}.<proj>.lora_{A,B}[.default].weight`;
/// anything else named as what tern does not apply.
fn parse_name(n: &str) -> core::result::Result<(usize, Proj, Side), String> {
    let what = |why: &str| format!("tensor {n}: {why}");
    if n.contains("lora_embedding_") {
        return Err(what("an embedding adapter; tern applies adapters to a layer's projections"));
    }
    if n.contains("lora_magnitude_vector") {
        return Err(what("DoRA's magnitude vector; tern applies plain LoRA"));
    }
    if n.contains("modules_to_save") {
        return Err(what("a whole trained module (modules_to_save); tern applies low-rank pairs"));
    }
    if n.ends_with(".bias") {
        return Err(what("a trained bias; tern applies adapters without biases"));
    }
    if n.contains(".experts.") {
        return Err(what("an adapter of a mixture's experts; tern applies adapters to dense projections"));
    }
    let (module, side) = if let Some(m) = n.strip_suffix(".lora_A.weight").or(n.strip_suffix(".lora_A.default.weight"))
    {
        (m, Side::A)
    } else if let Some(m) = n.strip_suffix(".lora_B.weight").or(n.strip_suffix(".lora_B.default.weight")) {
        (m, Side::B)
    } else {
        return Err(what("not a LoRA matrix (`lora_A.weight` or `lora_B.weight`)"));
    };
    let at = module
        .rfind("layers.")
        .ok_or_else(|| what("not in a layer; tern applies adapters to a layer's projections"))?;
    let (layer, rest) = module[at + 7..].split_once('.').ok_or_else(|| what("no layer"))?;
    let layer: usize = layer.parse().map_err(|_| what("its layer is not a number"))?;
    let proj = rest.rsplit('.').next().unwrap_or(rest);
    match Proj::ALL.into_iter().find(|p| p.hf_name() == proj) {
        Some(p) => Ok((layer, p, side)),
        None if proj == "qkv_proj" || proj == "gate_up_proj" => {
            Err(what("an adapter of a fused projection; tern applies adapters to q/k/v/o/gate/up/down_proj"))
        }
        None => Err(what("tern applies adapters to q/k/v/o/gate/up/down_proj")),
    }
}
