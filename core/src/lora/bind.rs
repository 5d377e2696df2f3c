//! An adapter's matrices checked against the base and copied beside it:
//! every pair complete, in a layer the base has, A of the projection's
//! inputs, B of its outputs, one rank within bounds; Q/K rows put in the
//! base's order (llama.cpp's converter permutes a Llama's for rotating
//! adjacent pairs, transformers' do not).

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::vec::Vec;

use super::{bad, Found, Meta, MAX_RANK};
use crate::error::Result;
use crate::model::{Adapter, Ffn, Mat, Model, Pair, Proj, RopeStyle};

pub(super) fn bind<B>(found: Vec<Found>, meta: Meta, base: &Model<B>) -> Result<Adapter> {
    let (c, w, name) = (&base.config, &base.weights, meta.name.as_str());
    if found.is_empty() {
        return Err(bad(name, "it holds no LoRA matrices"));
    }
    let mut pairs: BTreeMap<(usize, Proj), [Option<Found>; 2]> = BTreeMap::new();
    for f in found {
        if f.layer >= c.n_layer {
            return Err(bad(name, format!("tensor {}: layer {} of a model of {} layers", f.name, f.layer, c.n_layer)));
        }
        let slot = &mut pairs.entry((f.layer, f.proj)).or_default()[f.side as usize];
        if let Some(first) = slot {
            return Err(bad(name, format!("tensors {} and {} are the same matrix", first.name, f.name)));
        }
        *slot = Some(f);
    }
    let reorder = meta.adjacent_rows != (c.rope_style == RopeStyle::Adjacent);
    let (mut data, mut rank) = (Vec::new(), 0);
    let mut layers = alloc::vec![[None; 7]; c.n_layer];
    for ((l, p), [a, b]) in pairs {
        let (Some(a), Some(b)) = (a, b) else {
            return Err(bad(name, format!("layer {l}'s {} has only one of its A and B matrices", p.hf_name())));
        };
        let Some(t) = p.of(w, l) else {
            if matches!(w.layers[l].ffn, Ffn::Moe(_)) && p >= Proj::Gate {
                return Err(bad(
                    name,
                    format!("layer {l}'s MLP is a mixture of experts; tern applies no adapter to it"),
                ));
            }
            // (a layer reading another's K/V: transformers never runs
            // its K and V projections either)
            continue;
        };
        let (n_out, n_in, r) = (t.n_rows, t.n_cols, a.n_rows);
        if a.n_cols != n_in || b.n_rows != n_out || b.n_cols != r {
            return Err(bad(
                name,
                format!(
                    "layer {l}'s {} is {n_out}×{n_in} in the model, but the adapter's A is {}×{} and B {}×{} \
                     (A must be rank×{n_in}, B {n_out}×rank)",
                    p.hf_name(),
                    a.n_rows,
                    a.n_cols,
                    b.n_rows,
                    b.n_cols
                ),
            ));
        }
        if r == 0 || r > MAX_RANK || r > n_in.min(n_out) {
            return Err(bad(
                name,
                format!("layer {l}'s {}: rank {r} (1..={})", p.hf_name(), MAX_RANK.min(n_in.min(n_out))),
            ));
        }
        if meta.rank.is_some_and(|want| want != r) {
            return Err(bad(
                name,
                format!("layer {l}'s {}: rank {r}, but the config says r = {}", p.hf_name(), meta.rank.unwrap_or(0)),
            ));
        }
        rank = rank.max(r);
        let scale = match meta.alpha {
            Some(alpha) if meta.rslora => (alpha as f64 / libm::sqrt(r as f64)) as f32,
            Some(alpha) => (alpha as f64 / r as f64) as f32,
            None => 1.0,
        };
        let groups = match p {
            Proj::Q if reorder => Some(c.n_head),
            Proj::K if reorder => Some(c.n_head_kv),
            _ => None,
        };
        let a_at = Mat { ty: a.ty, start: data.len(), len: a.data.len(), n_rows: r, n_cols: n_in };
        data.extend_from_slice(a.data);
        // B's rows in the base's order, then B stored transposed: one row
        // per rank, one column per output (the kernels' `lora_up`)
        let mut rows = Vec::new();
        let b_rows = match groups {
            Some(g) => {
                reordered(b.data, n_out, g, meta.adjacent_rows, &mut rows);
                &rows[..]
            }
            None => b.data,
        };
        let b_at = Mat { ty: b.ty, start: data.len(), len: b.data.len(), n_rows: r, n_cols: n_out };
        transposed(b_rows, n_out, r, &mut data);
        layers[l][p as usize] = Some(Pair { a: a_at, bt: b_at, scale });
    }
    Ok(Adapter {
        name: meta.name,
        hash: meta.hash,
        base: Adapter::fingerprint(c, w),
        rank,
        alpha: meta.alpha.unwrap_or(0.0),
        data,
        layers,
    })
}

/// A `n_rows`×`n_cols` matrix of equal-sized elements, transposed, onto
/// `out`.
fn transposed(src: &[u8], n_rows: usize, n_cols: usize, out: &mut Vec<u8>) {
    let es = src.len() / (n_rows * n_cols).max(1);
    out.reserve(src.len());
    for c in 0..n_cols {
        for r in 0..n_rows {
            let at = (r * n_cols + c) * es;
            out.extend_from_slice(&src[at..at + es]);
        }
    }
}

/// B's rows (one per output, `n_rows` in `groups` heads) from one RoPE
/// pairing's order to the other's: transformers' (h, i, j) row
/// `h·hd + i·hd/2 + j` is llama.cpp's `h·hd + 2j + i`.
fn reordered(src: &[u8], n_rows: usize, groups: usize, from_adjacent: bool, out: &mut Vec<u8>) {
    let rb = src.len() / n_rows.max(1);
    let hd = n_rows / groups.max(1);
    let half = hd / 2;
    for row in 0..n_rows {
        let (h, k) = (row / hd, row % hd);
        // the source row that lands at `row`
        let from = if from_adjacent {
            // row is transformers' (i, j) = (k / half, k % half)
            h * hd + 2 * (k % half) + k / half
        } else {
            // row is llama.cpp's (j, i) = (k / 2, k % 2)
            h * hd + (k % 2) * half + k / 2
        };
        out.extend_from_slice(&src[from * rb..(from + 1) * rb]);
    }
}
