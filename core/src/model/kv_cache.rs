//! The KV cache of one sequence: dense, capacity fixed at creation.

use alloc::vec;
use alloc::vec::Vec;

use super::config::Config;

pub struct KvCache {
    pub n_ctx: usize,
    /// Row length: n_head_kv * head_dim.
    pub kv_dim: usize,
    /// (n_layer, n_ctx, kv_dim)
    pub k: Vec<f32>,
    /// (n_layer, n_ctx, kv_dim)
    pub v: Vec<f32>,
}

impl KvCache {
    pub fn new(c: &Config, n_ctx: usize) -> KvCache {
        let n = c.n_layer * n_ctx * c.kv_dim();
        KvCache { n_ctx, kv_dim: c.kv_dim(), k: vec![0.0; n], v: vec![0.0; n] }
    }

    fn range(&self, layer: usize, pos: usize, n: usize) -> core::ops::Range<usize> {
        let s = (layer * self.n_ctx + pos) * self.kv_dim;
        s..s + n * self.kv_dim
    }

    /// Write rows for positions `pos..pos + n` of one layer.
    pub fn write(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let n = k.len() / self.kv_dim;
        let r = self.range(layer, pos, n);
        self.k[r.clone()].copy_from_slice(k);
        self.v[r].copy_from_slice(v);
    }

    /// One layer's K and V, all `n_ctx` positions.
    pub fn layer(&self, layer: usize) -> (&[f32], &[f32]) {
        let r = self.range(layer, 0, self.n_ctx);
        (&self.k[r.clone()], &self.v[r])
    }

    pub fn bytes(&self) -> usize {
        (self.k.len() + self.v.len()) * 4
    }
}
