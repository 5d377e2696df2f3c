//! A GGUF file's hyper-parameter keys, `{arch}.…`, each read with an
//! error naming it.

use alloc::string::{String, ToString};

use super::Gguf;
use crate::error::{Error, Result};

/// The keys of one architecture's prefix.
pub(crate) struct GgufKeys<'a> {
    pub g: &'a Gguf<'a>,
    /// `general.architecture`, the keys' prefix.
    pub arch: &'a str,
}

impl GgufKeys<'_> {
    /// The full key of `name`.
    pub fn key(&self, name: &str) -> String {
        alloc::format!("{}.{name}", self.arch)
    }
    /// A size: present, in 1..2^31.
    pub fn usize(&self, name: &str) -> Result<usize> {
        usize_key(self.g, &self.key(name))
    }
    /// A size if present.
    pub fn opt_usize(&self, name: &str) -> Result<Option<usize>> {
        opt_usize_key(self.g, &self.key(name))
    }
    /// A number if present.
    pub fn f32(&self, name: &str) -> Result<Option<f32>> {
        self.g.get_f32(&self.key(name))
    }
    /// A string if present.
    pub fn str(&self, name: &str) -> Result<Option<&str>> {
        self.g.get_str(&self.key(name))
    }
}

/// A size key (full name): present, in 1..2^31.
pub(crate) fn usize_key(g: &Gguf, key: &str) -> Result<usize> {
    let v = g.require_u64(key)?;
    usize::try_from(v).ok().filter(|&v| v > 0 && v < (1 << 31)).ok_or_else(|| Error::Hyperparameter {
        key: key.into(),
        value: v.to_string(),
        why: "must be in 1..2^31".into(),
    })
}

/// A size key (full name) if present.
pub(crate) fn opt_usize_key(g: &Gguf, key: &str) -> Result<Option<usize>> {
    if g.get(key).is_none() {
        return Ok(None);
    }
    usize_key(g, key).map(Some)
}
