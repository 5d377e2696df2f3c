//! From an encoder's hidden states to one vector per input, as the model
//! describes it: sentence-transformers' `modules.json` and
//! `1_Pooling/config.json` (or GGUF's `*.pooling_type`).

use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;

use serde_json::Value;

use crate::error::{Error, Result};

/// How the token vectors become one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolingMode {
    /// The mean of every token's vector.
    Mean,
    /// The first token's (`[CLS]`).
    Cls,
    /// The last token's (decoder embedders).
    Last,
}

impl PoolingMode {
    /// The mode named `mean`, `cls` or `last` (llama.cpp's `--pooling`
    /// names), else an error naming the choices.
    pub fn from_name(name: &str) -> Result<PoolingMode> {
        match name {
            "mean" => Ok(PoolingMode::Mean),
            "cls" => Ok(PoolingMode::Cls),
            "last" => Ok(PoolingMode::Last),
            _ => Err(Error::InvalidArgument { what: format!("pooling {name:?}: mean, cls or last") }),
        }
    }
}

/// A pooling mode and whether the result is scaled to unit length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pooling {
    /// Which tokens' vectors.
    pub mode: PoolingMode,
    /// L2-normalise the result.
    pub normalize: bool,
}

fn bad(file: &str, detail: impl Into<alloc::string::String>) -> Error {
    Error::ModelFile { file: file.into(), field: "(pooling)".into(), detail: detail.into() }
}

impl Pooling {
    /// sentence-transformers' description: `modules_json` lists the
    /// modules (a `Pooling` one whose `path` holds `pooling_config`, an
    /// optional `Normalize`); `pooling_config` is that folder's
    /// config.json. Modules tern does not run (Dense, ...) are refused.
    pub fn from_sentence_transformers(modules_json: &[u8], pooling_config: &[u8]) -> Result<Pooling> {
        let modules: Value = serde_json::from_slice(modules_json).map_err(|e| bad("modules.json", e.to_string()))?;
        let list = modules.as_array().ok_or_else(|| bad("modules.json", "not a list"))?;
        let mut normalize = false;
        for m in list {
            let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
            match ty.rsplit('.').next().unwrap_or("") {
                "Transformer" | "Pooling" => {}
                "Normalize" => normalize = true,
                other => {
                    return Err(Error::Unsupported { what: format!("modules.json: the {other:?} module ({ty})") });
                }
            }
        }
        let c: Value =
            serde_json::from_slice(pooling_config).map_err(|e| bad("1_Pooling/config.json", e.to_string()))?;
        let on = |k: &str| c.get(k).and_then(Value::as_bool).unwrap_or(false);
        let modes = [
            ("pooling_mode_mean_tokens", Some(PoolingMode::Mean)),
            ("pooling_mode_cls_token", Some(PoolingMode::Cls)),
            ("pooling_mode_lasttoken", Some(PoolingMode::Last)),
            ("pooling_mode_max_tokens", None),
            ("pooling_mode_mean_sqrt_len_tokens", None),
            ("pooling_mode_weightedmean_tokens", None),
        ];
        let chosen: Vec<_> = modes.iter().filter(|(k, _)| on(k)).collect();
        match chosen.as_slice() {
            [(_, Some(mode))] => Ok(Pooling { mode: *mode, normalize }),
            [(k, None)] => Err(Error::Unsupported { what: format!("1_Pooling/config.json: {k}") }),
            [] => Err(bad("1_Pooling/config.json", "no pooling mode is on")),
            _ => Err(Error::Unsupported { what: "1_Pooling/config.json: more than one pooling mode".into() }),
        }
    }

    /// Pool `n` rows of `dim` hidden states into `out` (`dim` values).
    pub fn pool(&self, hidden: &[f32], n: usize, dim: usize, out: &mut [f32]) {
        match self.mode {
            PoolingMode::Cls => out.copy_from_slice(&hidden[..dim]),
            PoolingMode::Last => out.copy_from_slice(&hidden[(n - 1) * dim..n * dim]),
            PoolingMode::Mean => {
                out.fill(0.0);
                for row in hidden[..n * dim].chunks_exact(dim) {
                    for (o, &x) in out.iter_mut().zip(row) {
                        *o += x;
                    }
                }
                out.iter_mut().for_each(|o| *o /= n as f32);
            }
        }
        if self.normalize {
            l2_normalize(out);
        }
    }
}

/// `v` scaled to unit length (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = libm::sqrtf(v.iter().map(|x| x * x).sum::<f32>()).max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}
