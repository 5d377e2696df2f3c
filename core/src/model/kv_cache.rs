//! The KV cache of one sequence: capacity fixed at creation, rows stored
//! as f16 (the default, as llama.cpp), as f16 values kept widened to f32
//! (the same numbers, for backends that widen f16 slowly), as Q8_0 blocks
//! (half of f16's memory), or f32 (the exact path).
//!
//! A layer's rows live in KV blocks (`backend::KvBlock`: 256 positions of
//! every such layer), held in a table: block b holds positions 256b.. .
//! Blocks are allocated as the sequence grows and shared between caches
//! (`adopt` takes another cache's, or a prefix cache's, by reference); a
//! write to a shared block copies it first. So a session holds memory for
//! what it has cached, and sessions with a common prefix hold it once.
//!
//! A sliding-window layer of window W, in a session whose steps run up to
//! B tokens, needs only the last R = W + B − 1 positions: it keeps them in
//! a ring, each row stored twice (slots p mod R and p mod R + R), so any
//! window is one contiguous run of rows in position order. (In blocks like
//! a global layer when the ring would not be smaller.)
//!
//! Attention reads exactly the rows, in exactly the order, one dense run
//! of rows would give it: the same bits whatever the layout.

use alloc::sync::Arc;
use alloc::vec::Vec;

use half::f16;

use super::config::Config;
use super::hadamard::Rotation;
pub use crate::backend::KvType;
use crate::backend::{BlockRows, Cached, KvBlock, KvRows, KV_BLOCK};

/// Where a layer's rows are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    /// In the blocks, as their `i`-th layer.
    Paged(usize),
    /// In the rings from row `start`: a ring of R = `ring` positions, 2R rows.
    Ring { start: usize, ring: usize },
}

pub struct KvCache {
    pub n_ctx: usize,
    /// Row length: n_head_kv * head_dim.
    pub kv_dim: usize,
    layers: Vec<Layer>,
    /// Most tokens one step may write (B): a ring holds W + B − 1 positions.
    max_step: usize,
    /// Windowed layers' window (0: none).
    window: usize,
    ty: KvType,
    /// The rotation rows are stored in (Q8_0's), if any.
    rotation: Option<Rotation>,
    /// Paged layers' rows: block b holds positions b·KV_BLOCK.. .
    blocks: Vec<Arc<KvBlock>>,
    /// Layers in a block.
    n_paged: usize,
    /// Sliding-window rings' K and V rows, ring layers one after another.
    ring_k: BlockRows,
    ring_v: BlockRows,
}

impl KvCache {
    /// A cache for `n_ctx` positions, written `max_step` tokens at a time
    /// at most.
    /// Q8_0 needs heads of whole blocks (`KvType::fits`); a model whose
    /// heads are not gets f16 (`Model::check_sessions` refuses it first).
    pub fn new(c: &Config, n_ctx: usize, max_step: usize, ty: KvType) -> KvCache {
        let ty = if ty.fits(c.head_dim, c.kv_dim()) { ty } else { KvType::F16 };
        let window = c.window.as_ref().map_or(0, |w| w.size);
        let layers = geometry(c, n_ctx, max_step);
        let n = owned(c, layers.clone()).map(ring_rows).sum::<usize>() * c.kv_dim();
        let n_paged = owned(c, layers.clone()).filter(|l| matches!(l, Layer::Paged(_))).count();
        KvCache {
            n_ctx,
            kv_dim: c.kv_dim(),
            layers,
            max_step: max_step.max(1),
            window,
            ty,
            rotation: Rotation::of(c, ty),
            blocks: Vec::new(),
            n_paged,
            ring_k: BlockRows::zeros(n, ty),
            ring_v: BlockRows::zeros(n, ty),
        }
    }

    /// Most tokens one step may write.
    pub fn max_step(&self) -> usize {
        self.max_step
    }

    /// Of the first `n` positions of a cache that holds `len`, how many a
    /// session can keep and go on from: all `n`, unless a ring has since
    /// overwritten rows the window of position `n` needs — then none.
    pub fn keepable(&self, len: usize, n: usize) -> usize {
        let ring = self.layers.iter().map(|&l| ring_rows(l) / 2).max().unwrap_or(0);
        if ring == 0 || n >= len || n + ring + 1 >= len + self.window {
            n
        } else {
            0
        }
    }

    /// Keep the blocks of the first `n` positions only (their memory is
    /// freed, or stays with the caches that share it).
    pub fn truncate(&mut self, n: usize) {
        self.blocks.truncate(n.div_ceil(KV_BLOCK));
    }

    pub fn ty(&self) -> KvType {
        self.ty
    }

    /// The rotation its rows are stored in: what writes them and the
    /// queries that read them must apply (`hadamard`).
    pub fn rotation(&self) -> Option<Rotation> {
        self.rotation
    }

    /// Write rows for positions `pos..pos + n` of one layer.
    pub fn write(&mut self, layer: usize, pos: usize, k: &[f32], v: &[f32]) {
        let d = self.kv_dim;
        let round = round(self.ty);
        for (i, (k, v)) in k.chunks_exact(d).zip(v.chunks_exact(d)).enumerate() {
            let p = pos + i;
            match self.layers[layer] {
                Layer::Paged(l) => {
                    let b = p / KV_BLOCK;
                    while self.blocks.len() <= b {
                        self.blocks.push(Arc::new(KvBlock::new(self.n_paged, d, self.ty)));
                    }
                    // a block other caches share is copied before it changes
                    let block = Arc::make_mut(&mut self.blocks[b]);
                    let at = (l * KV_BLOCK + p % KV_BLOCK) * d;
                    block.k.write(at, k, round);
                    block.v.write(at, v, round);
                }
                Layer::Ring { start, ring } => {
                    for slot in [start + p % ring, start + p % ring + ring] {
                        self.ring_k.write(slot * d, k, round);
                        self.ring_v.write(slot * d, v, round);
                    }
                }
            }
        }
    }

    /// One layer's K and V rows from position `first` on, in position
    /// order (as far as the window of a query of the current step reaches).
    pub fn rows(&self, layer: usize, first: usize) -> Cached<'_> {
        let d = self.kv_dim;
        match self.layers[layer] {
            Layer::Paged(l) => Cached::paged(&self.blocks, l, d).from(first),
            Layer::Ring { start, ring } => {
                let r = (start + first % ring) * d..(start + 2 * ring) * d;
                Cached::dense(self.ring_k.slice(r.clone()), self.ring_v.slice(r), d)
            }
        }
    }

    /// The K (`v` false) or V row of position `pos` of a cache holding
    /// `len`, if it still holds it (a ring keeps the last R).
    pub fn row(&self, layer: usize, v: bool, pos: usize, len: usize) -> Option<KvRows<'_>> {
        if let Layer::Ring { ring, .. } = self.layers[layer] {
            if pos + ring < len {
                return None;
            }
        }
        let rows = self.rows(layer, pos);
        Some(if v { rows.value(0) } else { rows.key(0) }.first(self.kv_dim))
    }

    /// What blocks a cache can share must agree on (layers in a block, row
    /// length, element type); None for a cache with window rings, which
    /// shares nothing (a ring's rows are not in its blocks).
    pub fn shape(&self) -> Option<(usize, usize, KvType)> {
        let ringed = self.layers.iter().any(|l| matches!(l, Layer::Ring { .. }));
        (!ringed).then_some((self.n_paged, self.kv_dim, self.ty))
    }

    /// The table of blocks (block b: positions b·KV_BLOCK..).
    pub fn blocks(&self) -> &[Arc<KvBlock>] {
        &self.blocks
    }

    /// Hold `blocks` (of a cache of this `shape`) as the rows of positions
    /// `0..n`; false, changing nothing, if they cannot be (a ringed cache,
    /// `n` past the context or not within the blocks).
    pub fn adopt(&mut self, blocks: &[Arc<KvBlock>], n: usize) -> bool {
        if self.shape().is_none() || n > self.n_ctx || n.div_ceil(KV_BLOCK) != blocks.len() {
            return false;
        }
        self.blocks.clear();
        self.blocks.extend_from_slice(blocks);
        true
    }

    /// Blocks that writing positions `pos..pos + n` allocates: new ones,
    /// and a copy of a shared one it writes into.
    pub fn blocks_to_write(&self, pos: usize, n: usize) -> usize {
        if n == 0 || self.n_paged == 0 {
            return 0;
        }
        let first = pos / KV_BLOCK;
        let shared = self.blocks.get(first).is_some_and(|b| Arc::strong_count(b) > 1);
        (pos + n).div_ceil(KV_BLOCK).saturating_sub(self.blocks.len()) + usize::from(shared)
    }

    /// Bytes of the blocks this cache refers to (shared ones too) and of
    /// its rings.
    pub fn bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.bytes()).sum::<usize>() + self.ring_k.bytes() + self.ring_v.bytes()
    }
}

/// How an f32-stored type rounds what it stores.
fn round(ty: KvType) -> fn(f32) -> f32 {
    if ty == KvType::F16Wide {
        |s| f16::from_f32(s).to_f32()
    } else {
        |s| s
    }
}

/// Where each layer's rows are: blocks, or a ring of W + B − 1 positions
/// when a windowed layer's two copies of it are smaller than the context;
/// a layer attending to an earlier one's keys (Gemma 3n) where that
/// layer's are.
fn geometry(c: &Config, n_ctx: usize, max_step: usize) -> Vec<Layer> {
    let ring = c.window.as_ref().map_or(0, |w| w.size + max_step.max(1) - 1);
    let (mut rows, mut paged) = (0usize, 0usize);
    let mut layers = Vec::with_capacity(c.n_layer);
    for l in 0..c.n_layer {
        let windowed = c.window.as_ref().is_some_and(|w| w.layers[l]);
        let src = c.kv_source(l);
        layers.push(if src < l {
            layers[src]
        } else if windowed && 2 * ring < n_ctx {
            rows += 2 * ring;
            Layer::Ring { start: rows - 2 * ring, ring }
        } else {
            paged += 1;
            Layer::Paged(paged - 1)
        });
    }
    layers
}

/// The layers that keep rows of their own.
fn owned(c: &Config, layers: Vec<Layer>) -> impl Iterator<Item = Layer> + '_ {
    layers.into_iter().enumerate().filter(move |(l, _)| c.kv_source(*l) == *l).map(|(_, g)| g)
}

/// Rows a layer holds in the rings.
fn ring_rows(l: Layer) -> usize {
    match l {
        Layer::Ring { ring, .. } => 2 * ring,
        Layer::Paged(_) => 0,
    }
}

/// Rows (per K or V) a cache of `n_ctx` positions written `max_step` at a
/// time holds at most, all layers together.
pub fn rows(c: &Config, n_ctx: usize, max_step: usize) -> usize {
    let paged_rows = n_ctx.div_ceil(KV_BLOCK).saturating_mul(KV_BLOCK);
    owned(c, geometry(c, n_ctx, max_step))
        .fold(0usize, |a, l| a.saturating_add(if let Layer::Paged(_) = l { paged_rows } else { ring_rows(l) }))
}

/// Bytes of one KV block of a cache of `n_ctx` positions written
/// `max_step` at a time (0 when every layer keeps a ring).
pub fn block_bytes(c: &Config, n_ctx: usize, max_step: usize, ty: KvType) -> usize {
    let paged = owned(c, geometry(c, n_ctx, max_step)).filter(|l| matches!(l, Layer::Paged(_))).count();
    2 * paged * ty.bytes(KV_BLOCK * c.kv_dim())
}
