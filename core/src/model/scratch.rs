//! Buffers a forward pass works in, allocated once per session for a
//! maximum batch of `n_batch` tokens.

use alloc::vec;
use alloc::vec::Vec;

use super::config::Config;
use super::lora::LoraBufs;
use super::matmul::ActBufs;
use super::moe::Moe;
use crate::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1};
use crate::backend::tiles;

/// Output rows computed per chunk of the output head (bounds `mm`).
pub const HEAD_TOKENS: usize = 16;

/// Most queries of one KV head attended together (heads of it, or heads
/// times tokens of a verify step: side by side in a task's room).
pub(super) const MAX_GROUP: usize = 16;

/// Scratch a head's attention task holds beyond its outputs: up to
/// `MAX_GROUP` queries of a KV head gathered side by side and their
/// outputs, and the kernels' work for a run of up to `n_batch` queries
/// (or `MAX_GROUP`).
pub(super) fn per_head_room(c: &Config, n_batch: usize) -> usize {
    2 * MAX_GROUP * c.head_dim + tiles::work_len(c.head_dim, n_batch.max(MAX_GROUP))
}

/// A forward pass's working buffers, sized for a maximum batch (the
/// attention's work does not grow with the context; `Model::batch_scratch`
/// makes one for `Model::forward_batch`).
pub struct Scratch {
    pub(crate) n_batch: usize,
    /// (n_batch) sequence index and position of each batch token
    pub(crate) tok_seq: Vec<usize>,
    pub(crate) tok_pos: Vec<usize>,
    /// (n_batch) the keys each batch token attends to: first position, count
    pub(crate) kv_first: Vec<usize>,
    pub(crate) kv_len: Vec<usize>,
    /// (n_batch) batch rows whose logits a call wants
    pub(crate) out_rows: Vec<usize>,
    /// (n_batch, n_embd) residual stream
    pub(crate) x: Vec<f32>,
    /// (n_batch, n_embd) normed input of a sub-layer
    pub(crate) xn: Vec<f32>,
    /// (n_batch, q_dim)
    pub(crate) q: Vec<f32>,
    /// (n_batch, kv_dim)
    pub(crate) k: Vec<f32>,
    /// (n_batch, kv_dim)
    pub(crate) v: Vec<f32>,
    /// (n_batch, q_dim) attention output
    pub(crate) att: Vec<f32>,
    /// (n_head, n_batch * head_dim + per_head_room): per head, outputs then work
    pub(crate) heads: Vec<f32>,
    /// (n_batch, widest feed-forward: `Config::ff_widest`)
    pub(crate) gate: Vec<f32>,
    /// (n_batch, widest feed-forward)
    pub(crate) up: Vec<f32>,
    /// (n_batch, n_embd) a sub-layer's output before the residual add
    pub(crate) y: Vec<f32>,
    /// matmul output by row: (rows, tokens), then transposed
    pub(crate) mm: Vec<f32>,
    /// (n_batch, n_rot) RoPE cos/sin per position
    pub(crate) rope: Vec<f32>,
    /// (n_batch, n_rot) the same for windowed layers with their own RoPE; else empty
    pub(crate) rope_local: Vec<f32>,
    pub(crate) acts: ActBufs,
    /// a mixture of experts' routing and gathering (empty for a dense model)
    pub(crate) moe: MoeBufs,
    /// Gemma 3n's streams and per-layer inputs (empty for other models)
    pub(crate) g3n: Gemma3nBufs,
    /// LoRA deltas' buffers (grown by the first step with adapters)
    pub(crate) lora: LoraBufs,
}

impl Scratch {
    pub(crate) fn new(c: &Config, n_batch: usize) -> Scratch {
        let b = n_batch;
        let ff = c.ff_widest();
        let widest = c.n_embd.max(ff).max(c.q_dim());
        let n_expert = c.moe.as_ref().map_or(0, |m| m.n_expert);
        let per_layer = c.gemma3n.as_ref().map_or(0, |g| c.n_layer * g.n_embd_per_layer);
        let mm_rows = (2 * ff).max(c.q_dim() + 2 * c.kv_dim()).max(c.n_embd).max(n_expert).max(per_layer) * b;
        // a decode step runs a token's experts side by side
        let experts = c.moe.as_ref().map_or(0, |m| m.n_expert_used * m.n_ff_exp);
        let (ffs, mm_rows) = ((b * ff).max(experts), mm_rows.max(2 * experts));
        Scratch {
            n_batch,
            tok_seq: vec![0; b],
            tok_pos: vec![0; b],
            kv_first: vec![0; b],
            kv_len: vec![0; b],
            out_rows: Vec::with_capacity(b),
            x: vec![0.0; b * c.n_embd],
            xn: vec![0.0; b * c.n_embd],
            q: vec![0.0; b * c.q_dim()],
            k: vec![0.0; b * c.kv_dim()],
            v: vec![0.0; b * c.kv_dim()],
            att: vec![0.0; b * c.q_dim()],
            heads: vec![0.0; c.n_head * (b * c.head_dim + per_head_room(c, b))],
            gate: vec![0.0; ffs],
            up: vec![0.0; ffs],
            y: vec![0.0; b * c.n_embd],
            mm: vec![0.0; mm_rows.max(c.n_vocab * HEAD_TOKENS.min(b))],
            rope: vec![0.0; b * c.n_rot],
            rope_local: match c.window.as_ref().and_then(|w| w.rope_inv_freq.as_ref()) {
                Some(_) => vec![0.0; b * c.n_rot],
                None => Vec::new(),
            },
            acts: ActBufs::new(b, widest),
            moe: MoeBufs::new(c.moe.as_ref(), c.n_embd, b),
            g3n: Gemma3nBufs::new(c, b),
            lora: LoraBufs::new(),
        }
    }

    /// Bytes the buffers hold.
    pub fn bytes(&self) -> usize {
        let f = self.x.len()
            + self.xn.len()
            + self.q.len()
            + self.k.len()
            + self.v.len()
            + self.att.len()
            + self.heads.len()
            + self.gate.len()
            + self.up.len()
            + self.y.len()
            + self.mm.len()
            + self.rope.len()
            + self.rope_local.len();
        f * 4
            + self.acts.q8_0.len() * core::mem::size_of::<BlockQ8_0>()
            + self.acts.q8_1.len() * core::mem::size_of::<BlockQ8_1>()
            + self.acts.q8k.len() * core::mem::size_of::<BlockQ8K>()
            + self.moe.bytes()
            + self.g3n.bytes()
            + self.lora.bytes()
    }
}

/// The buffers Gemma 3n's streams and per-layer inputs work in, for up to
/// `n_batch` tokens (empty for other models).
pub(crate) struct Gemma3nBufs {
    /// (n_altup, n_batch, n_embd) the streams between layers
    pub streams: Vec<f32>,
    /// (n_altup, n_batch, n_embd) a layer's predictions of them
    pub preds: Vec<f32>,
    /// (n_batch, n_layer · width) the per-layer inputs
    pub inputs: Vec<f32>,
    /// (n_batch, n_layer · width) the per-layer embedding's rows
    pub embd: Vec<f32>,
    /// (n_batch, n_altup) AltUp's router outputs
    pub modal: Vec<f32>,
    /// (n_batch, max(width, rank)) LAuReL's and the per-layer gate's middle
    pub narrow: Vec<f32>,
    /// (n_batch, n_embd) LAuReL's output
    pub laurel: Vec<f32>,
}

impl Gemma3nBufs {
    fn new(c: &Config, b: usize) -> Gemma3nBufs {
        let (a, p, r) = c.gemma3n.as_ref().map_or((0, 0, 0), |g| (g.n_altup, g.n_embd_per_layer, g.laurel_rank));
        let e = if a > 0 { c.n_embd } else { 0 };
        Gemma3nBufs {
            streams: vec![0.0; a * b * e],
            preds: vec![0.0; a * b * e],
            inputs: vec![0.0; b * c.n_layer * p],
            embd: vec![0.0; b * c.n_layer * p],
            modal: vec![0.0; b * a],
            narrow: vec![0.0; b * p.max(r)],
            laurel: vec![0.0; b * e],
        }
    }

    fn bytes(&self) -> usize {
        let f = [&self.streams, &self.preds, &self.inputs, &self.embd, &self.modal, &self.narrow, &self.laurel];
        4 * f.iter().map(|v| v.len()).sum::<usize>()
    }
}

/// The buffers an MoE layer works in, for up to `n_batch` tokens.
pub(crate) struct MoeBufs {
    /// (n_batch, n_expert) router logits
    pub logits: alloc::vec::Vec<f32>,
    /// (n_expert) one token's probabilities
    pub probs: alloc::vec::Vec<f32>,
    /// (n_batch, k) each token's experts and weights, ascending by expert
    pub ids: alloc::vec::Vec<u32>,
    pub weights: alloc::vec::Vec<f32>,
    /// (n_expert + 1) where each expert's slots start in `order`
    pub starts: alloc::vec::Vec<usize>,
    /// (n_expert) filling cursor
    pub fill: alloc::vec::Vec<usize>,
    /// (n_batch · k) slots (token · k + i) grouped by expert
    pub order: alloc::vec::Vec<usize>,
    /// (n_batch, n_embd) one expert's tokens gathered
    pub x: alloc::vec::Vec<f32>,
    /// (n_batch · k, n_embd) each slot's expert output
    pub out: alloc::vec::Vec<f32>,
    /// (n_batch, n_embd) the shared expert's output
    pub shared: alloc::vec::Vec<f32>,
}

impl MoeBufs {
    /// None for a dense model (no buffers).
    pub(crate) fn new(moe: Option<&Moe>, n_embd: usize, n_batch: usize) -> MoeBufs {
        use alloc::vec;
        let (n_x, k, sh) = moe.map_or((0, 0, false), |m| (m.n_expert, m.n_expert_used, m.n_ff_shared.is_some()));
        let any = moe.is_some();
        MoeBufs {
            logits: vec![0.0; n_batch * n_x],
            probs: vec![0.0; n_x],
            ids: vec![0; n_batch * k],
            weights: vec![0.0; n_batch * k],
            starts: vec![0; if any { n_x + 1 } else { 0 }],
            fill: vec![0; n_x],
            order: vec![0; n_batch * k],
            x: vec![0.0; if any { n_batch * n_embd } else { 0 }],
            out: vec![0.0; n_batch * k * n_embd],
            shared: vec![0.0; if sh { n_batch * n_embd } else { 0 }],
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        4 * (self.logits.len() + self.probs.len() + self.ids.len() + self.weights.len())
            + 8 * (self.starts.len() + self.fill.len() + self.order.len())
            + 4 * (self.x.len() + self.out.len() + self.shared.len())
    }
}
