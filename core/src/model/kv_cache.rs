//! The KV cache of one sequence: capacity fixed at creation, rows stored
//! as f16 (the default, as llama.cpp), as f16 values kept widened to f32
//! (the same numbers, for backends that widen f16 slowly), or f32 (the
//! exact path).
//!
//! A global layer keeps every position. A sliding-window layer of window W,
//! in a session whose steps run up to B tokens, needs only the last
//! R = W + B − 1 positions: it keeps them in a ring, each row stored twice
//! (slots p mod R and p mod R + R), so any window is one contiguous run of
//! rows in position order. Attention then reads exactly the rows, in
//! exactly the order, a dense cache would give it: the same bits, in
//! memory bounded by the window, not the context. (Dense when the ring
//! would not be smaller.)

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
    /// Where each layer's rows start (in rows), and its ring size R (0:
    /// dense, n_ctx rows; else 2R rows).
    layers: Vec<(usize, usize)>,
    /// Most tokens one step may write (B): a ring holds W + B − 1 positions.
    max_step: usize,
    /// Windowed layers' window (0: none).
    window: usize,
    /// K and V, each (rows of every layer, kv_dim).
    store: Store,
}

impl KvCache {
    /// A cache for `n_ctx` positions, written `max_step` tokens at a time
    /// at most.
    pub fn new(c: &Config, n_ctx: usize, max_step: usize, ty: KvType) -> KvCache {
        let window = c.window.as_ref().map_or(0, |w| w.size);
        let layers = geometry(c, n_ctx, max_step);
        let n = rows(c, n_ctx, max_step) * c.kv_dim();
        let store = match ty {
            KvType::F16 => Store::F16 { k: vec![f16::ZERO; n], v: vec![f16::ZERO; n] },
            KvType::F16Wide | KvType::F32 => {
                Store::F32 { k: vec![0.0; n], v: vec![0.0; n], wide: ty == KvType::F16Wide }
            }
        };
        KvCache { n_ctx, kv_dim: c.kv_dim(), layers, max_step: max_step.max(1), window, store }
    }

    /// Most tokens one step may write.
    pub fn max_step(&self) -> usize {
        self.max_step
    }

    /// Of the first `n` positions of a cache that holds `len`, how many a
    /// session can keep and go on from: all `n`, unless a ring has since
    /// overwritten rows the window of position `n` needs — then none.
    pub fn keepable(&self, len: usize, n: usize) -> usize {
        let ring = self.layers.iter().map(|l| l.1).max().unwrap_or(0);
        if ring == 0 || n >= len || n + ring + 1 >= len + self.window {
            n
        } else {
            0
        }
    }

    pub fn ty(&self) -> KvType {
        match self.store {
            Store::F16 { .. } => KvType::F16,
            Store::F32 { wide: true, .. } => KvType::F16Wide,
            Store::F32 { wide: false, .. } => KvType::F32,
        }
    }

    /// The slot of position `pos` in a layer (its first copy in a ring),
    /// and the end of the layer's rows.
    fn slot(&self, layer: usize, pos: usize) -> (usize, usize) {
        let (start, ring) = self.layers[layer];
        let at = if ring > 0 { pos % ring } else { pos };
        (start + at, start + layer_rows(ring, self.n_ctx))
    }

    /// Write rows for positions `pos..pos + n` of one layer.
    pub fn write(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let d = self.kv_dim;
        let ring = self.layers[layer].1;
        for (i, (k, v)) in k.chunks_exact(d).zip(v.chunks_exact(d)).enumerate() {
            let s = self.slot(layer, pos + i).0;
            self.write_row(s, k, v);
            if ring > 0 {
                self.write_row(s + ring, k, v);
            }
        }
    }

    fn write_row(&mut self, slot: usize, k: &[f32], v: &[f32]) {
        let r = slot * self.kv_dim..(slot + 1) * self.kv_dim;
        match &mut self.store {
            Store::F16 { k: kc, v: vc } => fill(kc, vc, r, k, v, f16::from_f32),
            Store::F32 { k: kc, v: vc, wide: true } => fill(kc, vc, r, k, v, |s| f16::from_f32(s).to_f32()),
            Store::F32 { k: kc, v: vc, wide: false } => fill(kc, vc, r, k, v, |s| s),
        }
    }

    /// One layer's K and V rows from position `first` on, in position
    /// order (as far as the window of a query of the current step reaches).
    pub fn rows(&self, layer: usize, first: usize) -> (KvRows<'_>, KvRows<'_>) {
        let (s, end) = self.slot(layer, first);
        let r = s * self.kv_dim..end * self.kv_dim;
        match &self.store {
            Store::F16 { k, v } => (KvRows::F16(&k[r.clone()]), KvRows::F16(&v[r])),
            Store::F32 { k, v, .. } => (KvRows::F32(&k[r.clone()]), KvRows::F32(&v[r])),
        }
    }

    /// The K (`v` false) or V row of position `pos` of a cache holding
    /// `len`, if it still holds it (a ring keeps the last R).
    pub fn row(&self, layer: usize, v: bool, pos: usize, len: usize) -> Option<KvRows<'_>> {
        let ring = self.layers[layer].1;
        if ring > 0 && pos + ring < len {
            return None;
        }
        let (k_rows, v_rows) = self.rows(layer, pos);
        let rows = if v { v_rows } else { k_rows };
        Some(match rows {
            KvRows::F16(x) => KvRows::F16(&x[..self.kv_dim]),
            KvRows::F32(x) => KvRows::F32(&x[..self.kv_dim]),
        })
    }

    /// Take `from`'s rows of positions `0..n` (a cache of the same shape and
    /// element type, no window rings); false, changing nothing, if it is
    /// not such a cache.
    pub fn copy_prefix(&mut self, from: &KvCache, n: usize) -> bool {
        let same = self.layers == from.layers && self.kv_dim == from.kv_dim && self.ty() == from.ty();
        if !same || n > self.n_ctx || self.layers.iter().any(|l| l.1 > 0) {
            return false;
        }
        let d = self.kv_dim;
        for &(start, _) in &self.layers {
            let r = start * d..(start + n) * d;
            match (&mut self.store, &from.store) {
                (Store::F16 { k, v }, Store::F16 { k: fk, v: fv }) => {
                    k[r.clone()].copy_from_slice(&fk[r.clone()]);
                    v[r.clone()].copy_from_slice(&fv[r]);
                }
                (Store::F32 { k, v, .. }, Store::F32 { k: fk, v: fv, .. }) => {
                    k[r.clone()].copy_from_slice(&fk[r.clone()]);
                    v[r.clone()].copy_from_slice(&fv[r]);
                }
                _ => return false,
            }
        }
        true
    }

    pub fn bytes(&self) -> usize {
        let n = match &self.store {
            Store::F16 { k, .. } => k.len(),
            Store::F32 { k, .. } => k.len(),
        };
        2 * n * self.ty().size()
    }
}

/// Each layer's first row and ring size (0: dense).
fn geometry(c: &Config, n_ctx: usize, max_step: usize) -> Vec<(usize, usize)> {
    let ring = c.window.as_ref().map_or(0, |w| w.size + max_step.max(1) - 1);
    let mut rows = 0usize;
    (0..c.n_layer)
        .map(|l| {
            let windowed = c.window.as_ref().is_some_and(|w| w.layers[l]);
            let r = if windowed && 2 * ring < n_ctx { ring } else { 0 };
            let at = rows;
            rows = rows.saturating_add(layer_rows(r, n_ctx));
            (at, r)
        })
        .collect()
}

/// Rows one layer holds: a ring's two copies, or every position.
fn layer_rows(ring: usize, n_ctx: usize) -> usize {
    if ring > 0 {
        2 * ring
    } else {
        n_ctx
    }
}

/// Rows (per K or V) a cache of `n_ctx` positions written `max_step` at a
/// time holds, all layers together.
pub fn rows(c: &Config, n_ctx: usize, max_step: usize) -> usize {
    geometry(c, n_ctx, max_step).iter().fold(0usize, |a, &(_, r)| a.saturating_add(layer_rows(r, n_ctx)))
}

/// `kc[r] = f(k)` and `vc[r] = f(v)`, element by element.
fn fill<T>(kc: &mut [T], vc: &mut [T], r: core::ops::Range<usize>, k: &[f32], v: &[f32], f: impl Fn(f32) -> T) {
    for (d, &s) in kc[r.clone()].iter_mut().zip(k).chain(vc[r].iter_mut().zip(v)) {
        *d = f(s);
    }
}
