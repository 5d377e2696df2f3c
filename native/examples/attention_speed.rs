//! Time one decode step's attention of a KV head's group of 7 query heads
//! (Qwen2.5's) over a cache of `n` f16 positions, the rows dense and in
//! KV blocks (the same numbers), on the selected backend: `cargo run --release -p tern-llm --example
//! attention_speed [n]`.

use std::sync::Arc;
use std::time::Instant;

use half::f16;
use tern_core::backend::{tiles, BlockRows, Cached, KvBlock, KvRows, Queries, Score, KV_BLOCK};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(4096);
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
    let group = 7;
    let q: Vec<f32> = (0..group * hd).map(|i| x(i + 5).to_f32()).collect();
    let lens = vec![n; group];
    let dense = Cached::dense(KvRows::F16(&dense_k), KvRows::F16(&dense_v), row);
    let paged = Cached::paged(&blocks, layer, row);
    let (mut w, mut o) = (vec![0.0; tiles::work_len(hd, group)], vec![0.0; group * hd]);
    // alternating, the best of 7 rounds each
    let mut best = [f64::INFINITY; 2];
    for _ in 0..7 {
        for (i, kv) in [dense, paged].into_iter().enumerate() {
            let reps = 200;
            let t = Instant::now();
            for r in 0..reps {
                let qs = Queries { q: &q, stride: hd, n_kv: &lens, score: Score::scaled(0.125) };
                k.attention_queries(qs, kv.head((r % 2) * hd), &mut w, &mut o);
            }
            best[i] = best[i].min(t.elapsed().as_secs_f64() * 1e6 / reps as f64);
        }
    }
    for (name, us) in ["dense", "paged"].iter().zip(best) {
        println!(
            "{}: {name} {n} positions: {us:.1} µs per group of {group} heads, {:.2} GB/s of f16 K and V",
            k.name(),
            4.0 * (n * hd) as f64 / us / 1e3
        );
    }
}
