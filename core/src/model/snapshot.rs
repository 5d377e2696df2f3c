//! A session to bytes and back: the cached tokens, their K/V rows and the
//! RNG, so a conversation can be saved and continued identically.
//!
//! Layout (little-endian): "TERNSES2" | n_layer u32 | kv_dim u32 |
//! n_tokens u32 | kv element bytes u32 (2: f16, 4: f32; 1: Q8_0 blocks,
//! 34 bytes per 32 elements) | rng 4×u64 | tokens n×u32 | for each layer:
//! K rows, then V rows, n×kv_dim elements each.
//!
//! An f16 or f32 state restores into an f16 or f32 session (converted). A
//! Q8_0 state only into a Q8_0 session, and a Q8_0 session takes only
//! one: its rows are rotated (`hadamard`). Restored, its rows widen to
//! f32 exactly and quantize back to the same blocks (each block's largest
//! |q| is 127, so its scale comes back exactly, and so each q).

use alloc::vec::Vec;

use super::{Config, KvType, Session};
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
        let es = es_of(self.kv.ty());
        let row_bytes = es_bytes(es, kvd);
        let mut out = Vec::with_capacity(HEADER + 4 * n + 2 * c.n_layer * n * row_bytes);
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
                        Some(KvRows::Q8_0(x)) => out.extend_from_slice(x),
                        None => out.resize(out.len() + row_bytes, 0),
                    }
                }
            }
        }
        out
    }

    /// The most bytes a state this session can restore takes: all its
    /// positions, in f32 (the widest element).
    pub fn state_bytes_max(&self, c: &Config) -> u64 {
        let n = self.kv.n_ctx as u64;
        let row = es_bytes(4, self.kv.kv_dim).max(es_bytes(1, self.kv.kv_dim)) as u64;
        (HEADER as u64)
            .saturating_add(4 * n)
            .saturating_add((2 * c.n_layer as u64).saturating_mul(n).saturating_mul(row))
    }

    /// Replace this session's state with a saved one from the same model.
    pub fn restore(&mut self, c: &Config, bytes: &[u8]) -> Result<()> {
        let bad = |detail: alloc::string::String| Error::InvalidValue { field: "session state", offset: 0, detail };
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("not a tern session state".into()));
        }
        let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]) as usize;
        let (n_layer, kvd, n, es) = (u32_at(8), u32_at(12), u32_at(16), u32_at(20));
        if ![1, 2, 4].contains(&es) {
            return Err(bad(alloc::format!("KV element size {es} (1, 2 or 4)")));
        }
        let (q8, here) = (es == 1, self.kv.ty() == KvType::Q8_0);
        if q8 != here {
            return Err(bad(alloc::format!(
                "saved with {} a q8_0 KV cache, this session has {}: a q8_0 cache's rows are rotated, \
                 so it restores only into a session of the same type",
                if q8 { "" } else { "no" },
                self.kv.ty().name()
            )));
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
        if q8 && !KvType::Q8_0.fits(c.head_dim, kvd) {
            return Err(bad("q8_0 rows of heads that are not whole blocks".into()));
        }
        let want = HEADER + 4 * n + 2 * n_layer * n * es_bytes(es, kvd);
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
        let rows = &bytes[HEADER + 4 * n..];
        let floats: Vec<f32> = match es {
            1 => {
                let mut f = alloc::vec![0.0; 2 * n_layer * n * kvd];
                KvRows::Q8_0(rows).read(0..f.len(), &mut f);
                f
            }
            2 => rows.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            _ => rows.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        };
        // (a cache the model wrote holds finite values; NaN or ∞ would
        // poison every later token's attention)
        if let Some(i) = floats.iter().position(|x| !x.is_finite()) {
            let row = i / kvd;
            return Err(bad(alloc::format!(
                "a KV value that is not finite ({}) in layer {}, position {}",
                floats[i],
                row / (2 * n),
                row % n
            )));
        }
        self.kv.truncate(0);
        for (l, kv) in floats.chunks_exact(2 * n * kvd).enumerate() {
            let (k, v) = kv.split_at(n * kvd);
            self.kv.write(l, 0, k, v);
        }
        self.tokens = tokens;
        self.rng = Rng::from_state(rng);
        Ok(())
    }
}

/// The header's element code of a cache type.
fn es_of(ty: KvType) -> usize {
    match ty {
        KvType::F16 => 2,
        KvType::F16Wide | KvType::F32 => 4,
        KvType::Q8_0 => 1,
    }
}

/// Bytes of a row of `kvd` elements of element code `es`.
fn es_bytes(es: usize, kvd: usize) -> usize {
    if es == 1 {
        KvType::Q8_0.bytes(kvd)
    } else {
        es * kvd
    }
}
