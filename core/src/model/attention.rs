//! Scheduling a layer's attention over the workers: causal multi-head
//! attention (GQA) of the batch's queries, each over its own sequence's
//! cache. One task is one query head, or in decode the query heads of
//! one KV head (they share its reads); the math is the kernels'.

use super::config::Config;
use super::engine::Engine;
use super::scratch::{per_head_room, Scratch, MAX_GROUP};
use crate::backend::{Cached, Queries, Score};

/// `s.att` = attention of the batch's `n` queries (`s.q`); token t sees
/// positions `s.kv_first[t]..+s.kv_len[t]` of sequence `s.tok_seq[t]`,
/// whose layer's cached K and V rows from a position on, in position
/// order, `layer_kv(seq, first)` gives.
pub(super) fn attention<'c>(
    c: &Config,
    e: &Engine,
    s: &mut Scratch,
    n: usize,
    layer_kv: &(dyn Fn(usize, usize) -> Cached<'c> + Sync),
) {
    let (hd, qd) = (c.head_dim, c.q_dim());
    let group = c.n_head / c.n_head_kv;
    let score = Score { scale: c.attn_scale, softcap: c.attn_softcap };
    let (q, tok_seq, first, len) = (&s.q, &s.tok_seq, &s.kv_first, &s.kv_len);
    // a run of queries of one sequence whose keys start at its first
    // position shares the keys' reading
    let joins = |t: usize| first[t] == 0 && t + 1 < n && tok_seq[t + 1] == tok_seq[t] && first[t + 1] == 0;
    // no runs (decode), or a run short enough (a verify step's few tokens):
    // the heads of a KV head share the reading instead, as many tokens at
    // a time as fit `MAX_GROUP` queries — each KV tile is widened once per
    // KV head and call, not once per query head
    let per_call = (MAX_GROUP / group.min(MAX_GROUP)).max(1);
    let lone = !(0..n).any(joins) || n.div_ceil(per_call) < group;
    // the cached rows token t reads for KV head g
    let cached = |t: usize, g: usize| layer_kv(tok_seq[t], first[t]).head(g * hd);
    // a task: one query head — its outputs [token][hd], then room for a
    // KV head's gathered queries and their outputs and for the kernels'
    // work (a run of tasks works in its last task's room)
    let per_task = n * hd + per_head_room(c, s.n_batch);
    let k = e.kernels;
    // tasks of whole KV heads' query heads when they share reads (as many
    // as keep the workers busy), else of one query head
    let heads = if lone { group.min(c.n_head.div_ceil(e.par.n_workers())).max(1) } else { 1 };
    e.par.for_each_run(&mut s.heads[..c.n_head * per_task], heads * per_task, &|i, run| {
        let h_first = i * heads;
        let m = run.len() / per_task;
        let (outs, work) = run.split_at_mut((m - 1) * per_task + n * hd);
        let (gathered, work) = work.split_at_mut(MAX_GROUP * hd);
        let (tmp, work) = work.split_at_mut(MAX_GROUP * hd);
        let out = |j: usize, t: usize| j * per_task + t * hd;
        if lone {
            // the run's query heads of one KV head together, with the
            // following tokens that read the same rows: those rows are
            // read once for all of them
            let mut h0 = h_first;
            while h0 < h_first + m {
                let h1 = ((h0 / group + 1) * group).min(h_first + m).min(h0 + MAX_GROUP);
                let nh = h1 - h0;
                let mut t = 0;
                while t < n {
                    let same = |u: usize| tok_seq[u] == tok_seq[t] && first[u] == first[t];
                    let mut t1 = t + 1;
                    while t1 < n && (t1 + 1 - t) * nh <= MAX_GROUP && same(t1) {
                        t1 += 1;
                    }
                    let mut lens = [0; MAX_GROUP];
                    for (i, u) in (t..t1).enumerate() {
                        lens[i * nh..(i + 1) * nh].fill(len[u]);
                    }
                    let q = match t1 - t {
                        1 => &q[t * qd + h0 * hd..],
                        _ => {
                            for (i, u) in (t..t1).enumerate() {
                                gathered[i * nh * hd..(i + 1) * nh * hd]
                                    .copy_from_slice(&q[u * qd + h0 * hd..][..nh * hd]);
                            }
                            &gathered[..]
                        }
                    };
                    let nq = (t1 - t) * nh;
                    let o = &mut tmp[..nq * hd];
                    let qs = Queries { q, stride: hd, n_kv: &lens[..nq], score };
                    k.attention_queries(qs, cached(t, h0 / group), work, o);
                    for (i, oi) in o.chunks_exact(hd).enumerate() {
                        let (u, j) = (t + i / nh, h0 - h_first + i % nh);
                        outs[out(j, u)..][..hd].copy_from_slice(oi);
                    }
                    t = t1;
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
                let qs = Queries { q: &q[t * qd + h * hd..], stride: qd, n_kv: &len[t..t1], score };
                k.attention_queries(qs, cached(t, h / group), work, &mut outs[out(j, t)..out(j, t1)]);
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
