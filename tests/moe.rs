//! Mixtures of experts: the tiny Qwen2-MoE (shared expert), Qwen3-MoE,
//! Mixtral and OLMoE checkpoints transformers made, against its logits
//! and greedy ids (tests/fixtures/tiny, make_tiny_families.py); their GGUF
//! twins with experts stacked as llama.cpp's converter writes them; the
//! same bits whatever the threads, the batch and the backend; and the
//! router's rules each shown to matter — a mutated router fails the oracle.

use tern_core::{Engine, Ffn};
use tern_tests::hfdir::tiny;
use tern_tests::tiny_oracle::*;
use tern_tests::*;

/// (tiny model, the architecture its GGUF twin names)
const MOE: [(&str, &str); 4] = [
    ("tiny-qwen2-moe", "qwen2moe"),
    ("tiny-qwen3-moe", "qwen3moe"),
    ("tiny-olmoe", "olmoe"),
    ("tiny-mixtral", "llama"),
];

/// The exact path within 1e-5 of the largest logit (the HF test over all
/// tiny models checks 1e-4 absolute and the greedy ids).
#[test]
fn moe_exact_path_is_within_1e_5_of_the_largest_logit() {
    for (name, _) in MOE {
        let lm = exact_within(name, 1e-5);
        let moe = lm.model.config.moe.as_ref().expect("an MoE config");
        assert_eq!((moe.n_expert, moe.n_expert_used), (4, 2), "{name}");
    }
}

/// The GGUF twins: the oracle's logits and greedy ids, and the same bits
/// as the HF directory (Mixtral, as `llama`, has its Q/K rows permuted:
/// within a tenth of the tolerance).
#[test]
fn moe_gguf_twins_equal_the_oracle_and_the_hf_directory() {
    for (name, arch) in MOE {
        let within = if arch == "llama" { 0.1 } else { 0.0 };
        let g = gguf_twin_within(name, arch, within);
        let dir = load_path(&tiny(name));
        assert_eq!(g.model.config.moe, dir.model.config.moe, "{name}");
    }
}

/// One forward over 40 tokens, in one batch, in steps of 7 and one token
/// at a time, on 1 and 2 threads, on every backend, exact and quantized:
/// the same bits (tokens grouped by expert differently each time).
#[test]
fn moe_logits_are_the_same_bits_whatever_the_batch_threads_and_backend() {
    for (name, _) in MOE {
        same_bits_whatever_the_batch_threads_and_backend(&load_path(&tiny(name)), name);
    }
}

/// Each rule of the router matters: one expert fewer or more, the
/// renormalisation dropped (or added), the shared expert skipped — each
/// misses the oracle by far more than its tolerance.
#[test]
fn a_mutated_router_fails_the_oracle() {
    let far = |d: f64| d > 100.0 * 1e-4;
    for (name, _) in MOE {
        for delta in [-1isize, 1] {
            let d = mutated(name, |lm| {
                let m = lm.model.config.moe.as_mut().unwrap();
                m.n_expert_used = m.n_expert_used.checked_add_signed(delta).unwrap();
            });
            println!("{name}, top-k off by {delta}: max |Δ| {d:.3}");
            assert!(far(d), "{name}: top-k off by {delta} still meets the oracle ({d:e})");
        }
        let d = mutated(name, |lm| {
            let m = lm.model.config.moe.as_mut().unwrap();
            m.norm_topk = !m.norm_topk;
        });
        println!("{name}, renormalisation flipped: max |Δ| {d:.3}");
        assert!(far(d), "{name}: the renormalisation flipped still meets the oracle ({d:e})");
    }
    let d = mutated("tiny-qwen2-moe", |lm| {
        for l in &mut lm.model.weights.layers {
            let Ffn::Moe(x) = &mut l.ffn else { panic!("a dense layer") };
            x.shared = None;
        }
    });
    println!("tiny-qwen2-moe without its shared expert: max |Δ| {d:.3}");
    assert!(far(d), "the shared expert skipped still meets the oracle ({d:e})");
}

/// Experts interleaved on their first use by a decode step (the tiny
/// Qwen3-MoE quantized to Q8_0 at load, a type the AVX-512 kernels read
/// interleaved): decoding token by token packs them, and gives the same
/// bits as the file's layout (`no_repack`) and as one prompt over the same
/// tokens, on both threads counts; none is packed before a decode step.
#[test]
fn experts_packed_on_first_use_give_the_same_bits() {
    let seq: Vec<u32> = (0..24u32).map(|i| (i * 37 + 11) % 512).collect();
    let load = |no_repack| {
        let o = tern::LoadOptions {
            quantize: Some(tern_core::backend::quant::GgmlType::Q8_0),
            no_repack,
            ..Default::default()
        };
        tern::load_with(&tiny("tiny-qwen3-moe"), &o).unwrap()
    };
    let (packed, plain) = (load(false), load(true));
    let reads = tern::kernels::select().unwrap().reads_rows8(tern_core::backend::quant::GgmlType::Q8_0);
    for n_threads in [1, 2] {
        let par = tern::Threads::new(n_threads);
        let e = Engine { kernels: tern::kernels::select().unwrap(), par: &par, exact: false };
        let prompt_first = in_steps(&packed, &e, &seq, 24);
        if n_threads == 1 {
            assert_eq!(packed.model.experts_repacked_bytes(), 0, "a prompt packed experts");
        }
        let decoded = in_steps(&packed, &e, &seq, 1);
        assert_eq!(packed.model.experts_repacked_bytes() > 0, reads, "decode packs what the kernels read");
        let file_layout = in_steps(&plain, &e, &seq, 1);
        assert!(bits_equal(&decoded, &file_layout), "threads={n_threads}: packed experts differ from the file's");
        assert!(bits_equal(&decoded, &prompt_first), "threads={n_threads}: decode differs from the prompt");
        assert!(bits_equal(&in_steps(&packed, &e, &seq, 24), &prompt_first), "a prompt over packed experts");
    }
    println!("experts packed: {} bytes", packed.model.experts_repacked_bytes());
}
