//! Sliding windows as config.json describes them: `layer_types`,
//! Mistral's and Phi-3's `sliding_window` over every layer, Qwen2's
//! `use_sliding_window` from `max_window_layers` on.

use alloc::vec::Vec;
use serde_json::Value;

use super::fields::{bad, Fields};
use crate::error::Result;
use crate::model::parts::Window;

/// `layer_types`, if given: per layer, whether it is windowed.
pub(crate) fn layer_types(f: &Fields, n_layer: usize) -> Result<Option<Vec<bool>>> {
    match f.get("layer_types") {
        Some(Value::Array(kinds)) if kinds.len() == n_layer => kinds
            .iter()
            .map(|k| match k.as_str() {
                Some("sliding_attention") => Ok(true),
                Some("full_attention") => Ok(false),
                _ => Err(bad("layer_types", alloc::format!("{k} is not sliding_attention or full_attention"))),
            })
            .collect::<Result<Vec<bool>>>()
            .map(Some),
        Some(v) => Err(bad("layer_types", alloc::format!("{v} is not a list of {n_layer} layer types"))),
        None => Ok(None),
    }
}

/// The sliding window of a Llama-shaped config: `layer_types` naming the
/// windowed layers; else, with `every_layer` (Mistral, Phi-3), every
/// layer; else Qwen2's `use_sliding_window` (layers from
/// `max_window_layers` on). `absent` is the size when the file has no
/// `sliding_window` key at all (Mistral's 4096, as `MistralConfig`).
pub(crate) fn window(f: &Fields, n_layer: usize, every_layer: bool, absent: Option<usize>) -> Result<Option<Window>> {
    let size = match f.get("sliding_window") {
        None if !f.0.contains_key("sliding_window") => absent,
        None => None,
        // Qwen2-MoE's configs say 0 beside `use_sliding_window: false`
        Some(v) if v.as_u64() == Some(0) && f.opt_bool("use_sliding_window")? != Some(true) => None,
        Some(_) => Some(f.usize("sliding_window")?),
    };
    let Some(size) = size else { return Ok(None) };
    let layers = match layer_types(f, n_layer)? {
        Some(l) => l,
        None if every_layer => alloc::vec![true; n_layer],
        None if f.opt_bool("use_sliding_window")? == Some(true) => {
            let first = f.opt_usize("max_window_layers")?.unwrap_or(28);
            (0..n_layer).map(|i| i >= first).collect()
        }
        None => return Ok(None),
    };
    Ok(layers.contains(&true).then_some(Window { size, layers, rope_inv_freq: None }))
}
