//! The encoder's forward pass over one input: embeddings (token +
//! position + type, LayerNorm), then post-norm blocks of bidirectional
//! attention and a GELU feed-forward. One input at a time, so an input's
//! vector never depends on what else is encoded with it.

use alloc::vec;
use alloc::vec::Vec;

use super::weights::{EncoderLayer, Linear, Norm};
use super::EncoderView;
use crate::backend::{Cached, KvRows, QMatrix, Score};
use crate::error::Result;
use crate::model::matmul::{matmul, ActBufs};
use crate::model::Engine;
use crate::quant;

/// Per-input buffers, sized by its `n` tokens.
struct Buffers {
    x: Vec<f32>,
    y: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    ff: Vec<f32>,
    acts: ActBufs,
    mm: Vec<f32>,
}

/// The last hidden states of `ids` (one row of `n_embd` per token), all of
/// token type 0 (one segment).
pub(super) fn hidden(m: &EncoderView, e: &Engine, ids: &[u32]) -> Result<Vec<f32>> {
    let (c, w) = (m.config, m.weights);
    let (n, ne) = (ids.len(), c.n_embd);
    let mut b = Buffers {
        x: vec![0.0; n * ne],
        y: vec![0.0; n * ne],
        q: vec![0.0; n * ne],
        k: vec![0.0; n * ne],
        v: vec![0.0; n * ne],
        ff: vec![0.0; n * c.n_ff],
        acts: ActBufs::new(n, c.n_ff.max(ne)),
        mm: vec![0.0; n * c.n_ff.max(3 * ne)],
    };
    let emb = m.matrix(&w.token_embd);
    for (t, &id) in ids.iter().enumerate() {
        let row = &mut b.y[t * ne..(t + 1) * ne];
        quant::dequantize_row(emb.ty, emb.row(id as usize), row)?;
        let (pos, typ) = (&w.pos_embd[t * ne..(t + 1) * ne], &w.type_embd[..ne]);
        for ((y, &p), &s) in row.iter_mut().zip(pos).zip(typ) {
            *y = (*y + s) + p;
        }
    }
    norm_rows(e, &b.y, &w.embd_norm, c.norm_eps, &mut b.x);
    for l in &w.layers {
        layer(m, e, &mut b, l, n);
    }
    Ok(b.x)
}

/// One post-norm block, in place on `b.x`.
fn layer(m: &EncoderView, e: &Engine, b: &mut Buffers, l: &EncoderLayer, n: usize) {
    let c = m.config;
    let (ne, hd) = (c.n_embd, c.head_dim());
    let qkv = [lin(m, &l.q), lin(m, &l.k), lin(m, &l.v)];
    matmul(e, &qkv, &b.x, n, &mut b.acts, &mut b.mm, &mut [&mut b.q, &mut b.k, &mut b.v]);

    // every query sees every token: head h of token t over all n keys
    let score = Score { scale: 1.0 / libm::sqrtf(hd as f32), softcap: None };
    let (q, k, v) = (&b.q, &b.k, &b.v);
    let per = n * hd + n;
    let mut heads = vec![0.0f32; c.n_head * per];
    e.par.for_each_chunk(&mut heads, per, &|h, run| {
        let (outs, scores) = run.split_at_mut(n * hd);
        let kv = Cached { k: KvRows::F32(&k[h * hd..]), v: KvRows::F32(&v[h * hd..]), stride: ne };
        for t in 0..n {
            let qh = &q[t * ne + h * hd..t * ne + (h + 1) * hd];
            e.kernels.attention_head(qh, kv, n, score, scores, &mut outs[t * hd..(t + 1) * hd]);
        }
    });
    for h in 0..c.n_head {
        for t in 0..n {
            b.y[t * ne + h * hd..t * ne + (h + 1) * hd].copy_from_slice(&heads[h * per + t * hd..][..hd]);
        }
    }
    matmul(e, &[lin(m, &l.o)], &b.y, n, &mut b.acts, &mut b.mm, &mut [&mut b.q]);
    residual_norm(e, b, &l.attn_norm, c.norm_eps, n);

    // GELU feed-forward
    matmul(e, &[lin(m, &l.up)], &b.x, n, &mut b.acts, &mut b.mm, &mut [&mut b.ff]);
    e.kernels.gelu(&mut b.ff[..n * c.n_ff]);
    matmul(e, &[lin(m, &l.down)], &b.ff, n, &mut b.acts, &mut b.mm, &mut [&mut b.q]);
    residual_norm(e, b, &l.out_norm, c.norm_eps, n);
}

/// A linear layer as `matmul` takes it: the weight and its bias.
fn lin<'a>(m: &'a EncoderView, l: &'a Linear) -> (QMatrix<'a>, Option<&'a [f32]>) {
    (m.matrix(&l.w), Some(&l.b))
}

/// `x = LayerNorm(x + q)` (the sublayer's output is in `b.q`).
fn residual_norm(e: &Engine, b: &mut Buffers, norm: &Norm, eps: f32, n: usize) {
    let ne = norm.w.len();
    for (y, (&x, &q)) in b.y[..n * ne].iter_mut().zip(b.x.iter().zip(&b.q)) {
        *y = x + q;
    }
    norm_rows(e, &b.y, norm, eps, &mut b.x);
}

fn norm_rows(e: &Engine, x: &[f32], norm: &Norm, eps: f32, out: &mut [f32]) {
    let ne = norm.w.len();
    for (x, o) in x.chunks_exact(ne).zip(out.chunks_exact_mut(ne)) {
        e.kernels.layer_norm(x, &norm.w, &norm.b, eps, o);
    }
}
