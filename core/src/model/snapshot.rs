//! A session to bytes and back: the cached tokens, their K/V rows and the
//! RNG, so a conversation can be saved and continued identically.
//!
//! Layout (little-endian): "TERNSES2" | n_layer u32 | kv_dim u32 |
//! n_tokens u32 | kv element bytes u32 (2: f16, 4: f32) | rng 4×u64 |
//! tokens n×u32 | for each layer: K rows, then V rows, n×kv_dim elements
//! each. A state restores into a session of either KV type (converted).

use alloc::vec::Vec;

use super::{Config, Session};
use crate::backend::KvRows;
use crate::error::{Error, Result};
use crate::sampler::Rng;

const MAGIC: &[u8; 8] = b"TERNSES2";
/// magic, four u32, the RNG
const HEADER: usize = 8 + 16 + 32;

impl Session {
    /// The session as bytes: its tokens, KV cache and RNG (`restore` reads them back).
    pub fn save(&self, c: &Config) -> Vec<u8> {
        let n = self.tokens.len();
        let kvd = self.kv.kv_dim;
        let es = self.kv.ty().size();
        let mut out = Vec::with_capacity(HEADER + 4 * n + 2 * es * c.n_layer * n * kvd);
        out.extend_from_slice(MAGIC);
        for v in [c.n_layer, kvd, n, es] {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
        for w in self.rng.state() {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for t in &self.tokens {
            out.extend_from_slice(&t.to_le_bytes());
        }
        // rows a sliding-window ring no longer holds (never read again) as zeros
        for l in 0..c.n_layer {
            for v in [false, true] {
                for p in 0..n {
                    match self.kv.row(l, v, p, n) {
                        Some(KvRows::F16(x)) => x.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                        Some(KvRows::F32(x)) => x.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
                        None => out.resize(out.len() + kvd * es, 0),
                    }
                }
            }
        }
        out
    }

    /// Replace this session's state with a saved one from the same model.
    pub fn restore(&mut self, c: &Config, bytes: &[u8]) -> Result<()> {
        let bad = |detail: alloc::string::String| Error::InvalidValue { field: "session state", offset: 0, detail };
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("not a tern session state".into()));
        }
        let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize;
        let (n_layer, kvd, n, es) = (u32_at(8), u32_at(12), u32_at(16), u32_at(20));
        if es != 2 && es != 4 {
            return Err(bad(alloc::format!("KV element size {es} (2 or 4)")));
        }
        if n_layer != c.n_layer || kvd != self.kv.kv_dim {
            return Err(bad(alloc::format!(
                "saved for {n_layer} layers × {kvd}, this model has {} × {}",
                c.n_layer,
                self.kv.kv_dim
            )));
        }
        if n > self.kv.n_ctx {
            return Err(Error::ContextFull { n_ctx: self.kv.n_ctx, needed: n });
        }
        let want = HEADER + 4 * n + 2 * es * n_layer * n * kvd;
        if bytes.len() != want {
            return Err(bad(alloc::format!("{} bytes, expected {want}", bytes.len())));
        }
        let mut rng = [0u64; 4];
        for (i, w) in rng.iter_mut().enumerate() {
            let o = 24 + 8 * i;
            *w = u64::from_le_bytes(bytes[o..o + 8].try_into().unwrap_or([0; 8]));
        }
        let tokens: Vec<u32> = (0..n).map(|i| u32_at(HEADER + 4 * i) as u32).collect();
        if let Some(&id) = tokens.iter().find(|&&t| t as usize >= c.n_vocab) {
            return Err(Error::TokenOutOfRange { id, n_vocab: c.n_vocab });
        }
        let mut floats = bytes[HEADER + 4 * n..].chunks_exact(es).map(|b| match b {
            [a, b] => half::f16::from_le_bytes([*a, *b]).to_f32(),
            b => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        });
        self.kv.truncate(0);
        for l in 0..n_layer {
            let k: Vec<f32> = floats.by_ref().take(n * kvd).collect();
            let v: Vec<f32> = floats.by_ref().take(n * kvd).collect();
            self.kv.write(l, 0, &k, &v);
        }
        self.tokens = tokens;
        self.rng = Rng::from_state(rng);
        Ok(())
    }
}
