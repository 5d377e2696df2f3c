//! Time one decode step's attention of a KV head's group of 7 query heads
//! (Qwen2.5's) over a cache of `n` f16 positions — or, given `m`, a
//! prompt's `m` queries of one head after `n` cached positions (query j
//! sees n + j + 1) — the rows dense and in KV blocks (the same numbers),
//! on the selected backend: `cargo run --release -p tern-llm --example
//! attention_speed [n] [m]`.

use std::sync::Arc;
use std::time::Instant;

use half::f16;
use tern_core::backend::{tiles, BlockRows, Cached, KvBlock, KvRows, Queries, Score, KV_BLOCK};

fn main() {
    let arg = |i: usize| std::env::args().nth(i).and_then(|s| s.parse().ok());
    let (depth, m): (usize, usize) = (arg(1).unwrap_or(4096), arg(2).unwrap_or(0));
    let n = depth + m;
    let (hd, row, layers, layer) = (64, 128, 24, 12);
    let k = tern::kernels::select().expect("a backend");
    let x = |i: usize| f16::from_f32(((i * 7919) % 1000) as f32 / 1000.0 - 0.5);
    let dense_k: Vec<f16> = (0..n * row).map(x).collect();
    let dense_v: Vec<f16> = (0..n * row).map(|i| x(i + 1)).collect();
    let blocks: Vec<Arc<KvBlock>> = (0..n.div_ceil(KV_BLOCK))
        .map(|b| {
            let mut kb = vec![f16::ZERO; layers * KV_BLOCK * row];
            let mut vb = kb.clone();
            for p in 0..KV_BLOCK.min(n - b * KV_BLOCK) {
                let (src, dst) = ((b * KV_BLOCK + p) * row, (layer * KV_BLOCK + p) * row);
                kb[dst..dst + row].copy_from_slice(&dense_k[src..src + row]);
                vb[dst..dst + row].copy_from_slice(&dense_v[src..src + row]);
            }
            Arc::new(KvBlock { k: BlockRows::F16(kb), v: BlockRows::F16(vb) })
        })
        .collect();
    // the decode step's 7 query heads, or the prompt's m queries
    let (group, what) = if m == 0 { (7, "a group of 7 heads") } else { (m, "a head's prompt queries") };
    let q: Vec<f32> = (0..group * hd).map(|i| x(i + 5).to_f32()).collect();
    let lens: Vec<usize> = (0..group).map(|j| if m == 0 { n } else { depth + j + 1 }).collect();
    let dense = Cached::dense(KvRows::F16(&dense_k), KvRows::F16(&dense_v), row);
    let paged = Cached::paged(&blocks, layer, row);
    let (mut w, mut o) = (vec![0.0; tiles::work_len(hd, group)], vec![0.0; group * hd]);
    // alternating, the best of 7 rounds each
    let mut best = [f64::INFINITY; 2];
    for _ in 0..7 {
        for (i, kv) in [dense, paged].into_iter().enumerate() {
            let reps = if m == 0 { 200 } else { 2 };
            let t = Instant::now();
            for r in 0..reps {
                let qs = Queries { q: &q, stride: hd, n_kv: &lens, score: Score::scaled(0.125) };
                k.attention_queries(qs, kv.head((r % 2) * hd), &mut w, &mut o);
            }
            best[i] = best[i].min(t.elapsed().as_secs_f64() * 1e6 / reps as f64);
        }
    }
    for (name, us) in ["dense", "paged"].iter().zip(best) {
        // query·key pairs, each a dot and an axpy of hd
        let pairs: usize = lens.iter().sum();
        println!(
            "{}: {name} {n} positions: {us:.1} µs for {what}, {:.2} GB/s of f16 K and V, {:.1} GFLOP/s",
            k.name(),
            4.0 * (n * hd) as f64 / us / 1e3,
            4.0 * (pairs * hd) as f64 / us / 1e3
        );
    }
}
