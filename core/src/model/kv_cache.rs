//! The KV cache of one sequence: dense, capacity fixed at creation, rows
//! stored as f16 (the default, as llama.cpp), as f16 values kept widened
//! to f32 (the same numbers, for backends that widen f16 slowly), or f32
//! (the exact path).

use alloc::vec;
use alloc::vec::Vec;

use half::f16;

use super::config::Config;
use crate::backend::KvRows;

/// Element type of the cached K and V rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvType {
    /// Half the memory and bandwidth; rows rounded to nearest even once,
    /// when written.
    #[default]
    F16,
    /// The same f16-rounded values, kept widened to f32: attention reads
    /// them without widening at every step (wasm: no f16 conversion
    /// instruction), for twice F16's memory. Identical logits to F16.
    F16Wide,
    /// Keeps K/V exactly as computed (the oracle-parity path).
    F32,
}

impl KvType {
    /// The type's name (`f32`, `f16`).
    pub fn name(self) -> &'static str {
        match self {
            KvType::F16 => "f16",
            KvType::F16Wide => "f16-wide",
            KvType::F32 => "f32",
        }
    }
    /// The type named `s`.
    pub fn parse(s: &str) -> Option<KvType> {
        match s {
            "f16" => Some(KvType::F16),
            "f16-wide" => Some(KvType::F16Wide),
            "f32" => Some(KvType::F32),
            _ => None,
        }
    }
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            KvType::F16 => 2,
            KvType::F16Wide | KvType::F32 => 4,
        }
    }
}

enum Store {
    F16 {
        k: Vec<f16>,
        v: Vec<f16>,
    },
    /// f32 rows: exact (`wide` false) or f16-rounded (`wide`).
    F32 {
        k: Vec<f32>,
        v: Vec<f32>,
        wide: bool,
    },
}

pub struct KvCache {
    pub n_ctx: usize,
    /// Row length: n_head_kv * head_dim.
    pub kv_dim: usize,
    /// K and V, each (n_layer, n_ctx, kv_dim).
    store: Store,
}

impl KvCache {
    pub fn new(c: &Config, n_ctx: usize, ty: KvType) -> KvCache {
        let n = c.n_layer * n_ctx * c.kv_dim();
        let store = match ty {
            KvType::F16 => Store::F16 { k: vec![f16::ZERO; n], v: vec![f16::ZERO; n] },
            KvType::F16Wide | KvType::F32 => {
                Store::F32 { k: vec![0.0; n], v: vec![0.0; n], wide: ty == KvType::F16Wide }
            }
        };
        KvCache { n_ctx, kv_dim: c.kv_dim(), store }
    }

    pub fn ty(&self) -> KvType {
        match self.store {
            Store::F16 { .. } => KvType::F16,
            Store::F32 { wide: true, .. } => KvType::F16Wide,
            Store::F32 { wide: false, .. } => KvType::F32,
        }
    }

    fn range(&self, layer: usize, pos: usize, n: usize) -> core::ops::Range<usize> {
        let s = (layer * self.n_ctx + pos) * self.kv_dim;
        s..s + n * self.kv_dim
    }

    /// Write rows for positions `pos..pos + n` of one layer.
    pub fn write(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let n = k.len() / self.kv_dim;
        let r = self.range(layer, pos, n);
        match &mut self.store {
            Store::F16 { k: kc, v: vc } => fill(kc, vc, r, k, v, f16::from_f32),
            Store::F32 { k: kc, v: vc, wide: true } => fill(kc, vc, r, k, v, |s| f16::from_f32(s).to_f32()),
            Store::F32 { k: kc, v: vc, wide: false } => fill(kc, vc, r, k, v, |s| s),
        }
    }

    /// One layer's K and V, all `n_ctx` positions.
    pub fn layer(&self, layer: usize) -> (KvRows<'_>, KvRows<'_>) {
        let r = self.range(layer, 0, self.n_ctx);
        match &self.store {
            Store::F16 { k, v } => (KvRows::F16(&k[r.clone()]), KvRows::F16(&v[r])),
            Store::F32 { k, v, .. } => (KvRows::F32(&k[r.clone()]), KvRows::F32(&v[r])),
        }
    }

    pub fn bytes(&self) -> usize {
        let n = match &self.store {
            Store::F16 { k, .. } => k.len(),
            Store::F32 { k, .. } => k.len(),
        };
        2 * n * self.ty().size()
    }
}

/// `kc[r] = f(k)` and `vc[r] = f(v)`, element by element.
fn fill<T>(kc: &mut [T], vc: &mut [T], r: core::ops::Range<usize>, k: &[f32], v: &[f32], f: impl Fn(f32) -> T) {
    for (d, &s) in kc[r.clone()].iter_mut().zip(k).chain(vc[r].iter_mut().zip(v)) {
        *d = f(s);
    }
}
