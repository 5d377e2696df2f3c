//! The forward pass over a batch: one or more sequences, each a run of
//! tokens at consecutive positions of its own KV cache. Matmuls see all the
//! batch's tokens at once (weights read once); attention reads each
//! sequence's own cache. Every token's arithmetic is the same whatever else
//! is in the batch, so results are batch-invariant bit for bit.

use super::config::{Config, RopeStyle};
use super::kv_cache::KvCache;
use super::matmul::{matmul, Engine};
use super::scratch::{Scratch, HEAD_TOKENS};
use super::weights::LayerWeights;
use super::{rope, Faults, View};
use crate::error::Result;
use crate::kernels::scalar::MAX_HEAD_DIM;
use crate::quant;

/// One sequence's part of a batch.
pub(super) struct Seq<'a> {
    pub kv: &'a mut KvCache,
    /// Position of the first token (tokens before it are in `kv`).
    pub pos0: usize,
    pub tokens: &'a [u32],
    pub faults: Faults,
}

/// Run the batch; write the logits of batch rows `out_rows` (indices into
/// the concatenated tokens) into `logits`, one n_vocab row each.
pub(super) fn batch(
    m: View,
    e: &Engine,
    s: &mut Scratch,
    seqs: &mut [Seq],
    out_rows: &[usize],
    logits: &mut [f32],
) -> Result<()> {
    // on a pool worker: its parallel regions then open without a hand-off
    let mut r = Ok(());
    e.par.install(&mut || r = run(m, e, s, seqs, out_rows, logits));
    r
}

fn run(m: View, e: &Engine, s: &mut Scratch, seqs: &mut [Seq], out_rows: &[usize], logits: &mut [f32]) -> Result<()> {
    let (c, w) = (m.config, m.weights);
    let ne = c.n_embd;
    let n: usize = seqs.iter().map(|q| q.tokens.len()).sum();

    // token embeddings; which sequence and position each token has
    let emb = m.matrix(&w.token_embd);
    let mut t = 0;
    for (i, q) in seqs.iter().enumerate() {
        for (j, &id) in q.tokens.iter().enumerate() {
            quant::dequantize_row(emb.ty, emb.row(id as usize), &mut s.x[t * ne..(t + 1) * ne])?;
            let pos = q.pos0 + j;
            s.tok_seq[t] = i;
            s.tok_pos[t] = pos;
            // keys visible to the query at `pos`: 0..=pos (or a fault's)
            let f = q.faults;
            (s.kv_first[t], s.kv_len[t]) = if f.mask_inverted {
                (pos, q.pos0 + q.tokens.len() - pos)
            } else if f.frontier_off_by_one {
                (0, pos.max(1))
            } else {
                (0, pos + 1)
            };
            t += 1;
        }
    }
    rope::tables(c, s.tok_pos[..n].iter().copied(), &mut s.rope);

    for (l, lw) in w.layers.iter().enumerate() {
        layer(m, e, s, seqs, l, lw, n);
    }

    // final norm and output head, for the requested rows only
    let n_out = out_rows.len();
    let head = m.matrix(&w.output);
    for (t, &r) in out_rows.iter().enumerate() {
        let x = &s.x[r * ne..(r + 1) * ne];
        e.kernels.rms_norm(x, &w.output_norm, c.norm_eps, &mut s.xn[t * ne..(t + 1) * ne]);
    }
    for t0 in (0..n_out).step_by(HEAD_TOKENS) {
        let nt = HEAD_TOKENS.min(n_out - t0);
        let out = &mut logits[t0 * c.n_vocab..(t0 + nt) * c.n_vocab];
        matmul(e, &[(head, None)], &s.xn[t0 * ne..], nt, &mut s.acts, &mut s.mm, &mut [out]);
    }
    Ok(())
}

/// One transformer block, in place on the residual stream `s.x`.
fn layer(m: View, e: &Engine, s: &mut Scratch, seqs: &mut [Seq], l: usize, lw: &LayerWeights, n: usize) {
    let c = m.config;
    let (ne, hd, qd, kvd) = (c.n_embd, c.head_dim, c.q_dim(), c.kv_dim());
    let k = e.kernels;

    // attention rmsnorm
    rms_norm_rows(e, &s.x[..n * ne], &lw.attn_norm, c.norm_eps, &mut s.xn);

    // qkv matmuls (+ bias for qwen2)
    let (xn, acts, mm) = (&s.xn[..], &mut s.acts, &mut s.mm[..]);
    let qkv = [
        (m.matrix(&lw.wq), lw.bq.as_deref()),
        (m.matrix(&lw.wk), lw.bk.as_deref()),
        (m.matrix(&lw.wv), lw.bv.as_deref()),
    ];
    matmul(e, &qkv, xn, n, acts, mm, &mut [&mut s.q, &mut s.k, &mut s.v]);
    if seqs[0].faults.swap_qk {
        for t in 0..n {
            s.q[t * qd..t * qd + kvd].swap_with_slice(&mut s.k[t * kvd..(t + 1) * kvd]);
        }
    }

    // qwen3: RMSNorm of each head of Q and K; then RoPE
    let style = match (c.rope_style, seqs[0].faults.rope_pairing) {
        (st, false) => st,
        (RopeStyle::Neox, true) => RopeStyle::Adjacent,
        (RopeStyle::Adjacent, true) => RopeStyle::Neox,
    };
    for (buf, norm) in [(&mut s.q[..n * qd], &lw.q_norm), (&mut s.k[..n * kvd], &lw.k_norm)] {
        let row = buf.len() / n;
        for (t, head) in buf.chunks_exact_mut(hd).enumerate() {
            if let Some(w) = norm {
                let mut tmp = [0.0f32; MAX_HEAD_DIM];
                let tmp = &mut tmp[..hd];
                tmp.copy_from_slice(head);
                k.rms_norm(tmp, w, c.norm_eps, head);
            }
            let tok = t * hd / row;
            rope::apply(style, c.n_rot, &s.rope[tok * c.n_rot..(tok + 1) * c.n_rot], head);
        }
    }

    // the new K/V go to the caches; attention reads them back from there
    let mut t = 0;
    for q in seqs.iter_mut() {
        let r = t * kvd..(t + q.tokens.len()) * kvd;
        q.kv.write(l, q.pos0, &s.k[r.clone()], &s.v[r]);
        t += q.tokens.len();
    }
    attention(c, e, s, seqs, l, n);

    // output projection and residual
    matmul(e, &[(m.matrix(&lw.wo), None)], &s.att, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
    add(&mut s.x[..n * ne], &s.y[..n * ne]);

    // ffn rmsnorm, then w_down(silu(w_gate(x)) * w_up(x)), residual
    rms_norm_rows(e, &s.x[..n * ne], &lw.ffn_norm, c.norm_eps, &mut s.xn);
    let (xn, acts, mm) = (&s.xn[..], &mut s.acts, &mut s.mm[..]);
    let gate_up = [(m.matrix(&lw.w_gate), None), (m.matrix(&lw.w_up), None)];
    matmul(e, &gate_up, xn, n, acts, mm, &mut [&mut s.gate, &mut s.up]);
    // element-wise: an equal share per worker, even of one token's row
    let (nf, up) = (c.n_ff, &s.up);
    let per = (n * nf).div_ceil(e.par.n_workers()).next_multiple_of(16);
    e.par.for_each_run(&mut s.gate[..n * nf], per, &|i, g| k.swiglu(g, &up[i * per..]));
    matmul(e, &[(m.matrix(&lw.w_down), None)], &s.gate, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
    add(&mut s.x[..n * ne], &s.y[..n * ne]);
}

/// Causal multi-head attention (GQA) of the batch's queries, each over
/// its own sequence's cache.
fn attention(c: &Config, e: &Engine, s: &mut Scratch, seqs: &[Seq], l: usize, n: usize) {
    let (hd, qd, kvd) = (c.head_dim, c.q_dim(), c.kv_dim());
    let group = c.n_head / c.n_head_kv;
    let scale = 1.0 / libm::sqrtf(hd as f32);
    let (q, tok_seq, first, len) = (&s.q, &s.tok_seq, &s.kv_first, &s.kv_len);
    // a run of queries of one sequence whose keys start at its first
    // position shares the keys' reading
    let joins = |t: usize| first[t] == 0 && t + 1 < n && tok_seq[t + 1] == tok_seq[t] && first[t + 1] == 0;
    // no runs (decode): the heads of a KV head share them instead
    let lone = !(0..n).any(joins);
    let rows = |t: usize, g: usize| {
        let ((kl, vl), at) = (seqs[tok_seq[t]].kv.layer(l), first[t] * kvd + g * hd);
        (kl.from(at), vl.from(at))
    };
    // a task: one query head — its outputs [token][hd], then room for the
    // outputs of a KV head's queries and for the scores (a run of tasks
    // works in its last task's room)
    let room = per_head_room(c, s.n_ctx);
    let per_task = n * hd + room;
    let k = e.kernels;
    e.par.for_each_run(&mut s.heads[..c.n_head * per_task], per_task, &|h_first, run| {
        let m = run.len() / per_task;
        let (outs, work) = run.split_at_mut((m - 1) * per_task + n * hd);
        let (tmp, scores) = work.split_at_mut(MAX_GROUP.min(group) * hd);
        let out = |j: usize, t: usize| j * per_task + t * hd;
        if lone {
            // the run's query heads of one KV head together, one query
            // each: its cached rows are read once for them
            let mut h0 = h_first;
            while h0 < h_first + m {
                let h1 = ((h0 / group + 1) * group).min(h_first + m).min(h0 + MAX_GROUP);
                let o = &mut tmp[..(h1 - h0) * hd];
                for t in 0..n {
                    let (kl, vl) = rows(t, h0 / group);
                    let lens = [len[t]; MAX_GROUP];
                    k.attention_queries(&q[t * qd + h0 * hd..], hd, kl, vl, kvd, &lens[..h1 - h0], scale, scores, o);
                    for (j, oj) in o.chunks_exact(hd).enumerate() {
                        outs[out(h0 - h_first + j, t)..][..hd].copy_from_slice(oj);
                    }
                }
                h0 = h1;
            }
            return;
        }
        // each head over the batch's runs of queries
        for j in 0..m {
            let h = h_first + j;
            let mut t = 0;
            while t < n {
                let mut t1 = t + 1;
                while joins(t1 - 1) {
                    t1 += 1;
                }
                let (kl, vl) = rows(t, h / group);
                let o = &mut outs[out(j, t)..out(j, t1)];
                k.attention_queries(&q[t * qd + h * hd..], qd, kl, vl, kvd, &len[t..t1], scale, scores, o);
                t = t1;
            }
        }
    });
    for h in 0..c.n_head {
        for t in 0..n {
            let src = &s.heads[h * per_task + t * hd..][..hd];
            s.att[t * qd + h * hd..t * qd + (h + 1) * hd].copy_from_slice(src);
        }
    }
}

/// Most query heads of one KV head attended together (their outputs side
/// by side in a task's room).
const MAX_GROUP: usize = 16;

/// Scratch a head's attention task holds beyond its outputs: the outputs
/// of a KV head's queries and the scores of `n_ctx` positions.
pub(super) fn per_head_room(c: &Config, n_ctx: usize) -> usize {
    MAX_GROUP.min(c.n_head / c.n_head_kv) * c.head_dim + n_ctx
}

fn rms_norm_rows(e: &Engine, x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    for (x, o) in x.chunks_exact(w.len()).zip(out.chunks_exact_mut(w.len())) {
        e.kernels.rms_norm(x, w, eps, o);
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (x, &y) in x.iter_mut().zip(y) {
        *x += y;
    }
}
