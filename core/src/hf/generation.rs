//! `generation_config.json`: the sampling defaults and end tokens a model
//! ships with. A field the file does not set leaves tern's default.

use alloc::string::ToString;
use alloc::vec::Vec;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::sampler::{SamplerConfig, Sampling};

const FILE: &str = "generation_config.json";

/// Sampling defaults from generation_config.json (each unset field leaves the default alone).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GenerationDefaults {
    /// `temperature` (`do_sample: false` makes it 0, greedy), `top_k`,
    /// `top_p`, `min_p`, `typical_p`, `repetition_penalty`.
    pub sampling: Sampling,
    /// `eos_token_id` (one or a list).
    pub eos_token_ids: Vec<u32>,
}

impl GenerationDefaults {
    /// Parse a generation_config.json.
    pub fn parse(bytes: &[u8]) -> Result<GenerationDefaults> {
        let bad = |field: &str, detail: alloc::string::String| Error::ModelFile {
            file: FILE.into(),
            field: field.into(),
            detail,
        };
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad("(file)", e.to_string()))?;
        let Value::Object(m) = &v else { return Err(bad("(file)", "not a JSON object".into())) };
        let num = |k: &str| -> Result<Option<f32>> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(x) => x
                    .as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| Some(f as f32))
                    .ok_or_else(|| bad(k, alloc::format!("{x} is not a number ≥ 0"))),
            }
        };
        let count = |k: &str| -> Result<Option<usize>> {
            match m.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(x) => {
                    x.as_u64().map(|n| Some(n as usize)).ok_or_else(|| bad(k, alloc::format!("{x} is not a count")))
                }
            }
        };
        let greedy = match m.get("do_sample") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => !b,
            Some(x) => return Err(bad("do_sample", alloc::format!("{x} is not true or false"))),
        };
        let sampling = Sampling {
            temperature: if greedy { Some(0.0) } else { num("temperature")? },
            top_k: count("top_k")?,
            top_p: num("top_p")?,
            min_p: num("min_p")?,
            typical_p: num("typical_p")?,
            repeat_penalty: num("repetition_penalty")?,
            ..Sampling::default()
        };
        Ok(GenerationDefaults {
            sampling,
            eos_token_ids: super::fields::ids(FILE, "eos_token_id", m.get("eos_token_id"))?,
        })
    }

    /// Put the file's values into `s` (the caller then applies what the
    /// user asked for explicitly).
    pub fn apply(&self, s: &mut SamplerConfig) {
        self.sampling.apply(s)
    }
}
