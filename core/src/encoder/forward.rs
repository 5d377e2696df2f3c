//! The encoder's forward pass over a batch of inputs: embeddings (token +
//! position + type, LayerNorm), then post-norm blocks of bidirectional
//! attention and a GELU feed-forward. The inputs' tokens share each
//! matrix product (rows are independent there) and each token attends only
//! to its own input's, so an input's states are the same bits alone or in
//! any batch.

use alloc::vec;
use alloc::vec::Vec;

use super::weights::{EncoderLayer, Linear, Norm};
use super::EncoderView;
use crate::backend::quant;
use crate::backend::{tiles, Cached, KvRows, QMatrix, Score};
use crate::error::Result;
use crate::model::matmul::{matmul, ActBufs};
use crate::model::Engine;

/// One input: its token ids and, for a pair, each token's type (segment).
#[derive(Clone, Copy)]
pub struct Seq<'a> {
    /// The model's input, special tokens included.
    pub ids: &'a [u32],
    /// Token types (None: all 0, one segment).
    pub types: Option<&'a [u32]>,
}

/// Buffers for a batch of `n` tokens.
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

/// The last hidden states of every token of `seqs`, the inputs' rows one
/// after another (`n_embd` each). Ids and types are checked by the caller.
pub(super) fn hidden(m: &EncoderView, e: &Engine, seqs: &[Seq]) -> Result<Vec<f32>> {
    let (c, w) = (m.config, m.weights);
    let n: usize = seqs.iter().map(|s| s.ids.len()).sum();
    let ne = c.n_embd;
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
    // each token's input: (its first token, its length)
    let mut span = Vec::with_capacity(n);
    let emb = m.matrix(&w.token_embd);
    for s in seqs {
        let first = span.len();
        for (p, &id) in s.ids.iter().enumerate() {
            let t = first + p;
            span.push((first, s.ids.len()));
            let row = &mut b.y[t * ne..(t + 1) * ne];
            quant::dequantize_row(emb.ty, emb.row(id as usize), row)?;
            let ty = s.types.map_or(0, |ty| ty[p] as usize);
            let (pos, typ) = (&w.pos_embd[p * ne..(p + 1) * ne], &w.type_embd[ty * ne..(ty + 1) * ne]);
            for ((y, &p), &s) in row.iter_mut().zip(pos).zip(typ) {
                *y = (*y + s) + p;
            }
        }
    }
    norm_rows(e, &b.y, &w.embd_norm, c.norm_eps, &mut b.x);
    for l in &w.layers {
        layer(m, e, &mut b, l, &span);
    }
    Ok(b.x)
}

/// One post-norm block, in place on `b.x`.
fn layer(m: &EncoderView, e: &Engine, b: &mut Buffers, l: &EncoderLayer, span: &[(usize, usize)]) {
    let c = m.config;
    let (n, ne, hd) = (span.len(), c.n_embd, c.head_dim());
    // The values' and the attention output's projections read f32
    // activations on every path: BERT's outlier dimensions cost 8-bit
    // activation blocks too much there (MiniLM at Q8_0, cosine to the f32
    // model: 0.9985 with every projection's activations 8-bit, 0.99915 with
    // these two f32; Q and K f32 instead give 0.9985, the feed-forward's
    // nothing; bench/NOTES.md E3).
    let fine = Engine { exact: true, ..*e };
    matmul(e, &[lin(m, &l.q), lin(m, &l.k)], &b.x, n, &mut b.acts, &mut b.mm, &mut [&mut b.q, &mut b.k]);
    matmul(&fine, &[lin(m, &l.v)], &b.x, n, &mut b.acts, &mut b.mm, &mut [&mut b.v]);

    // every query sees every token of its input, head by head
    let score = Score { scale: 1.0 / libm::sqrtf(hd as f32), softcap: None };
    let (q, k, v) = (&b.q, &b.k, &b.v);
    e.par.for_each_run(&mut b.y[..n * ne], ne, &|t0, run| {
        let mut work = vec![0.0f32; tiles::work_len(hd, 1)];
        for (i, out) in run.chunks_exact_mut(ne).enumerate() {
            let (first, len) = span[t0 + i];
            for h in 0..c.n_head {
                let at = first * ne + h * hd;
                let kv = Cached::dense(KvRows::F32(&k[at..]), KvRows::F32(&v[at..]), ne);
                let qh = &q[(t0 + i) * ne + h * hd..][..hd];
                e.kernels.attention_head(qh, kv, len, score, &mut work, &mut out[h * hd..(h + 1) * hd]);
            }
        }
    });
    matmul(&fine, &[lin(m, &l.o)], &b.y, n, &mut b.acts, &mut b.mm, &mut [&mut b.q]);
    residual_norm(e, b, &l.attn_norm, c.norm_eps, n);

    // GELU feed-forward
    matmul(e, &[lin(m, &l.up)], &b.x, n, &mut b.acts, &mut b.mm, &mut [&mut b.ff]);
    e.par.for_each_chunk(&mut b.ff[..n * c.n_ff], ROWS * c.n_ff, &|_, ff| e.kernels.gelu(ff));
    matmul(e, &[lin(m, &l.down)], &b.ff, n, &mut b.acts, &mut b.mm, &mut [&mut b.q]);
    residual_norm(e, b, &l.out_norm, c.norm_eps, n);
}

/// A sequence classifier's outputs for `cls` (one `[CLS]` state per
/// input): the pooler `tanh(W·h + b)`, then the head. One row of labels
/// per input.
pub(super) fn classify(m: &EncoderView, e: &Engine, cls: &[f32], head: &(Linear, Linear)) -> Vec<f32> {
    let ne = m.config.n_embd;
    let n = cls.len() / ne;
    let labels = head.1.b.len();
    let mut acts = ActBufs::new(n, ne);
    let mut mm = vec![0.0; n * ne.max(labels)];
    let mut pooled = vec![0.0; n * ne];
    matmul(e, &[lin(m, &head.0)], cls, n, &mut acts, &mut mm, &mut [&mut pooled]);
    pooled.iter_mut().for_each(|x| *x = libm::tanhf(*x));
    let mut out = vec![0.0; n * labels];
    matmul(e, &[lin(m, &head.1)], &pooled, n, &mut acts, &mut mm, &mut [&mut out]);
    out
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

/// Tokens per task of the element-wise steps (GELU, LayerNorm).
const ROWS: usize = 16;

/// `out` = each row of `x` through `norm`, rows split across workers.
fn norm_rows(e: &Engine, x: &[f32], norm: &Norm, eps: f32, out: &mut [f32]) {
    let ne = norm.w.len();
    e.par.for_each_chunk(&mut out[..x.len()], ROWS * ne, &|i, out| {
        for (x, o) in x[i * ROWS * ne..].chunks_exact(ne).zip(out.chunks_exact_mut(ne)) {
            e.kernels.layer_norm(x, &norm.w, &norm.b, eps, o);
        }
    });
}
