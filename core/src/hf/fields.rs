//! config.json's fields, each read with an error naming it.

use alloc::string::String;
use alloc::vec::Vec;
use serde_json::{Map, Value};

use crate::error::{Error, Result};

pub(crate) const FILE: &str = "config.json";

pub(crate) fn bad(field: &str, detail: impl Into<String>) -> Error {
    Error::ModelFile { file: FILE.into(), field: field.into(), detail: detail.into() }
}

/// A config's fields, each read with an error naming it.
pub(crate) struct Fields<'a>(pub(crate) &'a Map<String, Value>);

impl Fields<'_> {
    pub(crate) fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }
    pub(crate) fn opt_usize(&self, k: &str) -> Result<Option<usize>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 && n < (1 << 31) => Ok(Some(n as usize)),
                _ => Err(bad(k, alloc::format!("{v} is not a positive integer below 2^31"))),
            },
        }
    }
    pub(crate) fn usize(&self, k: &str) -> Result<usize> {
        self.opt_usize(k)?.ok_or_else(|| bad(k, "missing"))
    }
    pub(crate) fn opt_f64(&self, k: &str) -> Result<Option<f64>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| bad(k, alloc::format!("{v} is not a number"))),
        }
    }
    pub(crate) fn opt_bool(&self, k: &str) -> Result<Option<bool>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| bad(k, alloc::format!("{v} is not true or false"))),
        }
    }
    pub(crate) fn opt_str(&self, k: &str) -> Result<Option<&str>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| bad(k, alloc::format!("{v} is not a string"))),
        }
    }
}

/// Token ids given as one integer or a list of them.
pub(crate) fn ids(file: &str, field: &str, v: Option<&Value>) -> Result<Vec<u32>> {
    let one = |v: &Value| {
        v.as_u64().filter(|&n| n < u32::MAX as u64).map(|n| n as u32).ok_or_else(|| Error::ModelFile {
            file: file.into(),
            field: field.into(),
            detail: alloc::format!("{v} is not a token id"),
        })
    };
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(one).collect(),
        Some(v) => Ok(alloc::vec![one(v)?]),
    }
}
