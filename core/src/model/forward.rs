//! The forward pass over a batch: one or more sequences, each a run of
//! tokens at consecutive positions of its own KV cache. Matmuls see all the
//! batch's tokens at once (weights read once); attention reads each
//! sequence's own cache. Every token's arithmetic is the same whatever else
//! is in the batch, so results are batch-invariant bit for bit.

use super::adapter::Proj;
use super::attention::attention;
use super::engine::Engine;
use super::lora;
use super::matmul::matmul;
use super::mlp::{matrices, mlp, MlpBufs};
use super::scratch::{Scratch, HEAD_TOKENS};
use super::seq::Seq;
use super::weights::Ffn;
use super::weights::LayerWeights;
use super::{altup, experts, hadamard, laurel, per_layer, rope, View};
use crate::backend::quant;
use crate::backend::scalar::{self, MAX_HEAD_DIM};
use crate::error::Result;

/// What a batch's requested rows give.
pub(super) enum Out<'a> {
    /// The output head's logits, one n_vocab row each.
    Logits(&'a mut [f32]),
    /// The final norm's output (what the head reads), one n_embd row each:
    /// a decoder embedder's token vectors.
    Hidden(&'a mut [f32]),
}

/// Run the batch; write what `out` asks for of batch rows `out_rows`
/// (indices into the concatenated tokens).
pub(super) fn batch(
    m: View,
    e: &Engine,
    s: &mut Scratch,
    seqs: &mut [Seq],
    out_rows: &[usize],
    out: Out,
) -> Result<()> {
    // on a pool worker: its parallel regions then open without a hand-off
    let mut r = Ok(());
    let mut out = Some(out);
    e.par.install(&mut || {
        if let Some(out) = out.take() {
            r = run(m, e, s, seqs, out_rows, out);
        }
    });
    r
}

fn run(m: View, e: &Engine, s: &mut Scratch, seqs: &mut [Seq], out_rows: &[usize], out: Out) -> Result<()> {
    let (c, w) = (m.config, m.weights);
    let ne = c.n_embd;
    let n: usize = seqs.iter().map(|q| q.tokens.len()).sum();

    // token embeddings (Gemma 3n: and per-layer ones); which sequence and
    // position each token has
    let emb = m.matrix(&w.token_embd);
    let g3n = w.gemma3n.as_ref();
    let per_layer = s.g3n.embd.len() / s.n_batch;
    let mut t = 0;
    for (i, q) in seqs.iter().enumerate() {
        for (j, &id) in q.tokens.iter().enumerate() {
            let x = &mut s.x[t * ne..(t + 1) * ne];
            quant::dequantize_row(emb.ty, emb.row(id as usize), x)?;
            if let Some(scale) = c.embd_scale {
                x.iter_mut().for_each(|v| *v *= scale);
            }
            if let Some(g) = g3n {
                per_layer::embed(m, g, id, &mut s.g3n.embd[t * per_layer..(t + 1) * per_layer])?;
            }
            (s.tok_seq[t], s.tok_pos[t]) = (i, q.pos0 + j);
            t += 1;
        }
    }
    if let Some(g) = g3n {
        per_layer::inputs(m, e, s, g, n);
        altup::spread(m, e, s, g, n);
    }
    // each sequence's RoPE tables (LongRoPE picks its frequencies by the
    // sequence's context size)
    let local = c.window.as_ref().and_then(|w| w.rope_inv_freq.as_deref());
    let mut t = 0;
    for q in seqs.iter() {
        let (at, pos) = (t * c.n_rot, q.pos0..q.pos0 + q.tokens.len());
        let freq = c.rope_inv_freq_for(q.kv.n_ctx);
        rope::tables(freq, c.rope_pos_scale, c.rope_attn_factor, pos.clone(), &mut s.rope[at..]);
        if let Some(local) = local {
            rope::tables(local, 1.0, 1.0, pos, &mut s.rope_local[at..]);
        }
        t += q.tokens.len();
    }

    let mut spans_of = None;
    for (l, lw) in w.layers.iter().enumerate() {
        // the keys each query sees in this layer: its window's, or all
        let window = c.window.as_ref().filter(|w| w.layers[l]).map(|w| w.size);
        if spans_of != Some(window) {
            spans(s, n, window);
            spans_of = Some(window);
        }
        if let Some(a) = &lw.gemma3n {
            altup::predict(m, e, s, a, n);
        }
        layer(m, e, s, seqs, l, lw, n, window.is_some());
        if let Some(a) = &lw.gemma3n {
            altup::correct(m, e, s, a, n);
            per_layer::inject(m, e, s, a, l, n);
        }
    }
    if let Some(g) = g3n {
        altup::gather(m, e, s, g, out_rows);
    }

    // final norm and output head, for the requested rows only
    let n_out = out_rows.len();
    let head = m.matrix(&w.output);
    for (t, &r) in out_rows.iter().enumerate() {
        let x = &s.x[r * ne..(r + 1) * ne];
        e.kernels.rms_norm(x, &w.output_norm, c.norm_eps, &mut s.xn[t * ne..(t + 1) * ne]);
    }
    let logits = match out {
        Out::Logits(logits) => logits,
        Out::Hidden(hidden) => {
            hidden[..n_out * ne].copy_from_slice(&s.xn[..n_out * ne]);
            return Ok(());
        }
    };
    for t0 in (0..n_out).step_by(HEAD_TOKENS) {
        let nt = HEAD_TOKENS.min(n_out - t0);
        let out = &mut logits[t0 * c.n_vocab..(t0 + nt) * c.n_vocab];
        matmul(e, &[(head, None)], &s.xn[t0 * ne..], nt, &mut s.acts, &mut s.mm, &mut [out]);
    }
    if let Some(cap) = c.final_softcap {
        let logits = &mut logits[..n_out * c.n_vocab];
        logits.iter_mut().for_each(|x| *x = scalar::softcap(*x, cap));
    }
    Ok(())
}

/// Keys visible to the query at `pos`: `pos + 1 - window ..= pos`, or
/// `0..=pos` without a window.
fn spans(s: &mut Scratch, n: usize, window: Option<usize>) {
    for t in 0..n {
        let seen = s.tok_pos[t] + 1;
        let first = window.map_or(0, |w| seen.saturating_sub(w));
        (s.kv_first[t], s.kv_len[t]) = (first, seen - first);
    }
}

/// One transformer block, in place on the residual stream `s.x`.
#[allow(clippy::too_many_arguments)]
fn layer(m: View, e: &Engine, s: &mut Scratch, seqs: &mut [Seq], l: usize, lw: &LayerWeights, n: usize, local: bool) {
    let c = m.config;
    let (ne, qd, kvd) = (c.n_embd, c.q_dim(), c.kv_dim());

    // attention rmsnorm (Gemma 3n: LAuReL beside the attention, from it)
    rms_norm_rows(e, &s.x[..n * ne], &lw.attn_norm, c.norm_eps, &mut s.xn);
    if let Some(a) = &lw.gemma3n {
        laurel::run(m, e, s, a, n);
    }

    // Q, K, V (a layer reading another's K/V: Q only), normed, rotated
    let own_kv = qkv(m, e, s, seqs, l, n, local);

    // a cache storing its rows rotated (Q8_0): its tokens' queries, keys
    // and values turn into that basis, and their attention output back
    for t in 0..n {
        if let Some(r) = seqs[s.tok_seq[t]].kv.rotation() {
            hadamard::rotate(&mut s.q[t * qd..(t + 1) * qd], r.k);
            if own_kv {
                hadamard::rotate(&mut s.k[t * kvd..(t + 1) * kvd], r.k);
                hadamard::rotate(&mut s.v[t * kvd..(t + 1) * kvd], r.v);
            }
        }
    }

    // the new K/V go to the caches; attention reads them back from there
    // (a layer sharing another's K/V reads that layer's rows: `KvCache`)
    let mut t = 0;
    for q in seqs.iter_mut().filter(|_| own_kv) {
        let r = t * kvd..(t + q.tokens.len()) * kvd;
        q.kv.write(l, q.pos0, &s.k[r.clone()], &s.v[r]);
        t += q.tokens.len();
    }
    attention(c, e, s, n, &|i, first| seqs[i].kv.rows(l, first));
    for t in 0..n {
        if let Some(r) = seqs[s.tok_seq[t]].kv.rotation() {
            hadamard::rotate(&mut s.att[t * qd..(t + 1) * qd], r.v);
        }
    }

    // output projection (gemma: normed) and residual
    matmul(e, &[(m.matrix(&lw.wo), None)], &s.att, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
    lora::add(e, seqs, l, Proj::O, &s.att[..n * qd], &mut s.y[..n * ne], &mut s.lora);
    residual(e, s, n, lw.post_attn_norm.as_deref(), c.norm_eps);
    if lw.gemma3n.is_some() {
        laurel::join(s, n);
    }

    // ffn rmsnorm, the feed-forward layer (an MLP or experts), residual
    rms_norm_rows(e, &s.x[..n * ne], &lw.ffn_norm, c.norm_eps, &mut s.xn);
    match &lw.ffn {
        Ffn::Dense(w) => {
            let b = MlpBufs { gate: &mut s.gate, up: &mut s.up, acts: &mut s.acts, mm: &mut s.mm };
            let sparsity = c.gemma3n.as_ref().and_then(|g| g.sparsity[l]);
            let (seqs, bufs) = (&*seqs, &mut s.lora);
            let mut delta = |p: Proj, x: &[f32], out: &mut [f32]| lora::add(e, seqs, l, p, x, out, bufs);
            mlp(e, matrices(m, w), c.act, sparsity, &s.xn, n, b, &mut s.y, Some(&mut delta));
        }
        Ffn::Moe(x) => experts::ffn(m, e, s, x, n, l),
    }
    residual(e, s, n, lw.post_ffn_norm.as_deref(), c.norm_eps);
}

/// The layer's queries, keys and values of the `n` normed rows in `s.xn`,
/// normalised and rotated as the family does, into `s.q`, `s.k`, `s.v`;
/// whether the layer has keys and values of its own.
#[allow(clippy::too_many_arguments)]
fn qkv(m: View, e: &Engine, s: &mut Scratch, seqs: &[Seq], l: usize, n: usize, local: bool) -> bool {
    let (c, lw) = (m.config, &m.weights.layers[l]);
    let (hd, qd, kvd) = (c.head_dim, c.q_dim(), c.kv_dim());
    let k = e.kernels;

    // qkv matmuls (+ bias for qwen2); a layer reading another's K/V
    // (Gemma 3n's last ones) has Q only
    let (xn, acts, mm) = (&s.xn[..], &mut s.acts, &mut s.mm[..]);
    let q = (m.matrix(&lw.wq), lw.bq.as_deref());
    let own_kv = if let (Some(wk), Some(wv)) = (&lw.wk, &lw.wv) {
        let qkv = [q, (m.matrix(wk), lw.bk.as_deref()), (m.matrix(wv), lw.bv.as_deref())];
        matmul(e, &qkv, xn, n, acts, mm, &mut [&mut s.q, &mut s.k, &mut s.v]);
        true
    } else {
        matmul(e, &[q], xn, n, acts, mm, &mut [&mut s.q]);
        false
    };
    // the adapters' deltas, before any norm or rotation (they change the
    // projections' outputs)
    let xn = &s.xn[..n * c.n_embd];
    lora::add(e, seqs, l, Proj::Q, xn, &mut s.q[..n * qd], &mut s.lora);
    if own_kv {
        lora::add(e, seqs, l, Proj::K, xn, &mut s.k[..n * kvd], &mut s.lora);
        lora::add(e, seqs, l, Proj::V, xn, &mut s.v[..n * kvd], &mut s.lora);
    }
    // Gemma 3n: V normalised per head, unweighted
    if c.gemma3n.is_some() && own_kv {
        let ones = [1.0f32; MAX_HEAD_DIM];
        for head in s.v[..n * kvd].chunks_exact_mut(hd) {
            let mut tmp = [0.0f32; MAX_HEAD_DIM];
            tmp[..hd].copy_from_slice(head);
            k.rms_norm(&tmp[..hd], &ones[..hd], c.norm_eps, head);
        }
    }

    // OLMoE: RMSNorm of all of Q and all of K; qwen3, gemma: of each head
    // of them; then RoPE (a windowed layer's own, if it has one)
    let whole = c.qk_norm_whole;
    if whole {
        for (buf, norm, len) in [(&mut s.q, &lw.q_norm, qd), (&mut s.k, &lw.k_norm, kvd)] {
            if let Some(w) = norm {
                s.att[..n * len].copy_from_slice(&buf[..n * len]);
                rms_norm_rows(e, &s.att[..n * len], w, c.norm_eps, buf);
            }
        }
    }
    let table = if local && !s.rope_local.is_empty() { &s.rope_local } else { &s.rope };
    let heads = [(&mut s.q[..n * qd], &lw.q_norm), (&mut s.k[..n * kvd], &lw.k_norm)];
    for (buf, norm) in heads.into_iter().take(if own_kv { 2 } else { 1 }) {
        let norm = norm.as_ref().filter(|_| !whole);
        let row = buf.len() / n;
        par_rows(e, buf, hd, n, &|first, run| {
            for (j, head) in run.chunks_exact_mut(hd).enumerate() {
                if let Some(w) = norm {
                    let mut tmp = [0.0f32; MAX_HEAD_DIM];
                    let tmp = &mut tmp[..hd];
                    tmp.copy_from_slice(head);
                    k.rms_norm(tmp, w, c.norm_eps, head);
                }
                let tok = (first + j) * hd / row;
                rope::apply(c.rope_style, c.n_rot, &table[tok * c.n_rot..(tok + 1) * c.n_rot], head);
            }
        });
    }
    own_kv
}

/// `x += y`, or `x += rms_norm(y)` with a post-norm.
fn residual(e: &Engine, s: &mut Scratch, n: usize, post_norm: Option<&[f32]>, eps: f32) {
    let ne = s.x.len() / s.n_batch;
    match post_norm {
        None => add(&mut s.x[..n * ne], &s.y[..n * ne]),
        Some(w) => {
            rms_norm_rows(e, &s.y[..n * ne], w, eps, &mut s.xn);
            add(&mut s.x[..n * ne], &s.xn[..n * ne]);
        }
    }
}

fn rms_norm_rows(e: &Engine, x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let ne = w.len();
    let n = x.len() / ne;
    par_rows(e, &mut out[..n * ne], ne, n, &|first, run| {
        for (j, o) in run.chunks_exact_mut(ne).enumerate() {
            e.kernels.rms_norm(&x[(first + j) * ne..(first + j + 1) * ne], w, eps, o);
        }
    });
}

/// Fewest tokens a step has for its row-wise work (norms, RoPE) to be
/// shared among the workers: below it (decode) a parallel region costs
/// more than it saves.
const PAR_MIN_TOKENS: usize = 8;

/// `f(first, run)` over runs of whole `len`-sized rows of `data` (the
/// step's `n` tokens' worth): shared among the workers for a prompt, on
/// this thread for a decode step. Each row's arithmetic is the same either
/// way.
fn par_rows(e: &Engine, data: &mut [f32], len: usize, n: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
    if n >= PAR_MIN_TOKENS {
        e.par.for_each_run(data, len, f);
    } else {
        f(0, data);
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (x, &y) in x.iter_mut().zip(y) {
        *x += y;
    }
}
