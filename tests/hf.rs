//! HuggingFace model directories. The tiny models transformers itself made
//! (Qwen2 in 3 float32 shards, Qwen3 in bf16 with a tied head, Llama in
//! float32) against their oracle logits at every position and their greedy
//! ids; the tiny Qwen3 written as GGUF by gguf-py; the Qwen2.5 GGUF
//! dequantized by gguf-py into an HF directory against the GGUF's exact
//! path; Q8_0 at load; and broken directories, every problem named.

use std::path::Path;

use sha2::{Digest, Sha256};
use tern::LoadOptions;
use tern_core::backend::quant::GgmlType;
use tern_core::backend::KV_BLOCK;
use tern_core::{Engine, Logits};
use tern_tests::hfdir::{self, tiny};
use tern_tests::tiny_oracle::*;
use tern_tests::*;

const TINY: [&str; 21] = [
    "tiny-qwen2",
    "tiny-qwen3",
    "tiny-llama",
    "tiny-gemma-bf16",
    "tiny-gemma2",
    "tiny-gemma2-bf16",
    "tiny-gemma3",
    "tiny-gemma3-mm",
    "tiny-mistral",
    "tiny-mistral-bf16",
    "tiny-phi3",
    "tiny-phi3-bf16",
    "tiny-phi3-longrope",
    "tiny-qwen2-yarn",
    "tiny-qwen3-yarn",
    "tiny-qwen2-moe",
    "tiny-qwen3-moe",
    "tiny-mixtral",
    "tiny-olmoe",
    "tiny-gemma3n",
    "tiny-gemma3n-mm",
];

#[test]
fn tiny_models_equal_the_transformers_oracle() {
    for name in TINY {
        let o = oracle(name);
        let lm = load_path(&tiny(name));
        for exact in [true, false] {
            against_oracle(name, &lm, &o, exact);
        }
    }
}

#[test]
fn tied_head_is_the_embedding_tensor_not_a_copy() {
    let dir = tiny("tiny-qwen3");
    let lm = load_path(&dir);
    let w = &lm.model.weights;
    assert!(w.tied_output);
    assert_eq!((w.output.buf, w.output.start, w.output.len), (w.token_embd.buf, w.token_embd.start, w.token_embd.len));
    let file = std::fs::metadata(dir.join("model.safetensors")).unwrap().len() as usize;
    assert_eq!(lm.model.n_bytes(), file, "the weights are the mapped file, nothing more");
}

#[test]
fn qwen3_gguf_from_gguf_py_equals_the_oracle_and_the_hf_directory() {
    gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-qwen3", "qwen3");
}

/// Phi-3: fused Q/K/V and gate/up, half-rotated heads, every layer windowed.
#[test]
fn phi3_gguf_from_gguf_py_equals_the_oracle_and_the_hf_directory() {
    let g = gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-phi3-bf16", "phi3");
    assert_eq!(g.model.config.window.as_ref().map(|w| w.size), Some(5));
}

/// LongRoPE: a session past `original_max_position_embeddings` (32) uses
/// the long factors — transformers' logits over a 40-token input; the
/// short ones there are far off (the 12-token oracle above is short); the
/// GGUF written as llama.cpp's converter does gives the same bits.
#[test]
fn phi3_longrope_past_the_original_context_uses_the_long_factors() {
    let dir = tiny("tiny-phi3-longrope");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("oracle.json")).unwrap()).unwrap();
    let bytes = std::fs::read(dir.join("logits_long.bin")).unwrap();
    assert_eq!(format!("{:x}", Sha256::digest(&bytes)), j["long_logits_sha256"].as_str().unwrap());
    let want: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let input = ids(&j["long_input_ids"]);
    let mut lm = load_path(&dir);
    assert_eq!(lm.model.config.rope_long.as_ref().map(|l| l.orig_ctx), Some(32));
    for exact in [true, false] {
        let d = max_abs_diff(&all_logits(&lm, &engine(exact), &input), &want);
        println!("tiny-phi3-longrope, 40 tokens, exact={exact}: max |Δ| {d:.2e}");
        assert!(d <= tolerance(exact), "exact={exact}: max |Δ| {d:e}");
    }
    // the GGUF as llama.cpp's converter writes it: the same bits, short and long
    let gguf = gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-phi3-longrope", "phi3");
    let e = engine(true);
    assert!(bits_equal(&all_logits(&gguf, &e, &input), &all_logits(&lm, &e, &input)), "GGUF, 40 tokens");
    lm.model.config.rope_long = None;
    let d = max_abs_diff(&all_logits(&lm, &e, &input), &want);
    assert!(d > 100.0 * tolerance(true), "the short factors are as close: {d:e}");
}

/// Mistral as llama.cpp converts it: a `llama` GGUF whose Q and K rows are
/// permuted for ggml's adjacent-pair RoPE (so a head's elements are summed
/// in another order: equal within a tenth of the oracle's tolerance, not
/// bit for bit), its window read
/// from `llama.attention.sliding_window`.
#[test]
fn mistral_gguf_from_gguf_py_equals_the_oracle_and_the_hf_directory() {
    let g = gguf_twin_within("tiny-mistral-bf16", "llama", 0.1);
    assert_eq!(g.model.config.window.as_ref().map(|w| (w.size, w.layers.clone())), Some((5, vec![true; 3])));
}

/// YaRN in a GGUF (type, factor and original context, as llama.cpp's
/// Qwen converter writes it): the same frequencies and attention factor as
/// the HF directory's `rope_parameters`.
#[test]
fn qwen3_yarn_gguf_from_gguf_py_equals_the_oracle_and_the_hf_directory() {
    let g = gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-qwen3-yarn", "qwen3");
    let dir = load_path(&tiny("tiny-qwen3-yarn"));
    let (a, b) = (&g.model.config, &dir.model.config);
    assert!(a.rope_attn_factor > 1.0);
    assert_eq!((&a.rope_inv_freq, a.rope_attn_factor), (&b.rope_inv_freq, b.rope_attn_factor));
}

/// Gemma (the first): llama.cpp's `gemma` GGUF, norms stored as 1 + w
/// under Llama's names, head_dim from the key length, no window, no
/// softcaps; its SentencePiece spelling is Gemma's.
#[test]
fn gemma_gguf_from_gguf_py_equals_the_oracle_and_the_hf_directory() {
    let g = gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-gemma-bf16", "gemma");
    let c = &g.model.config;
    assert_eq!((c.head_dim, c.n_head, c.n_embd), (32, 4, 64));
    assert!(c.window.is_none() && c.attn_softcap.is_none() && c.final_softcap.is_none() && !c.post_norms);
}

/// Gemma 2: norms stored as 1 + w, every other layer windowed, softcaps
/// from the GGUF keys; without the softcaps the logits are far off.
#[test]
fn gemma2_gguf_from_gguf_py_equals_the_oracle_and_the_hf_directory() {
    let g = gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-gemma2-bf16", "gemma2");
    let c = &g.model.config;
    assert_eq!((c.attn_softcap, c.final_softcap), (Some(1.0), Some(1.5)));
    assert_eq!(c.window.as_ref().map(|w| (w.size, w.layers.clone())), Some((5, vec![true, false, true, false])));
    let o = oracle("tiny-gemma2-bf16");
    for uncapped in [(None, Some(1.5)), (Some(1.0), None)] {
        let mut m = load_path(&test_model("tiny-gemma2-bf16.gguf"));
        (m.model.config.attn_softcap, m.model.config.final_softcap) = uncapped;
        let d = max_abs_diff(&all_logits(&m, &engine(true), &o.input), &o.logits);
        println!("tiny-gemma2-bf16.gguf with softcaps {uncapped:?}: max |Δ| {d:.3}");
        assert!(d > 100.0 * tolerance(true), "softcaps {uncapped:?}: max |Δ| only {d:e}");
    }
}

#[test]
fn dequantized_qwen_directory_equals_the_gguf_exact_path() {
    let dir = load_path(&test_model("qwen2.5-hf-f32"));
    let gguf = load(MODELS[0].1);
    assert_eq!(dir.model.weights.matrices().filter(|t| t.ty == GgmlType::F32).count(), 170);
    let e = engine(true);
    for p in PROMPTS {
        let case = prompt_case(MODELS[0].0, p);
        let input: Vec<u32> = case.input_ids.iter().chain(&case.generated).copied().collect();
        let a = all_logits(&dir, &e, &input);
        let b = all_logits(&gguf, &e, &input);
        println!(
            "qwen2.5 {p}: {} positions, HF f32 directory vs GGUF --exact max |Δ| {:.2e}",
            input.len(),
            max_abs_diff(&a, &b)
        );
        assert!(bits_equal(&a, &b), "{p}: the directory's logits differ from the GGUF exact path");
    }
    // the tokenizer from tokenizer.json matches the GGUF's on a prompt
    let text = "def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)  # 日本語";
    assert_eq!(
        dir.tokenizer().unwrap().encode(text, true).unwrap(),
        gguf.tokenizer().unwrap().encode(text, true).unwrap()
    );
}

#[test]
fn q8_0_at_load_runs_the_integer_path() {
    let o = oracle("tiny-llama");
    let lm =
        tern::load_with(&tiny("tiny-llama"), &LoadOptions { quantize: Some(GgmlType::Q8_0), ..Default::default() })
            .unwrap();
    let r = lm.requantized.expect("reported");
    assert_eq!((r.converted, r.kept), (30, 0));
    assert!(lm.model.weights.matrices().all(|t| t.ty == GgmlType::Q8_0));
    let got = all_logits(&lm, &engine(false), &o.input);
    let d = max_abs_diff(&got, &o.logits);
    let scale = o.logits.iter().fold(0f64, |a, &x| a.max(x.abs() as f64));
    println!("tiny-llama Q8_0 at load: max |Δ| {d:.3e} (logits up to {scale:.2})");
    // weights and activations in 8 bits: near, not equal
    assert!(d > 1e-6 && d < 0.05 * scale, "max |Δ| {d:e} for logits up to {scale}");
    assert_eq!(greedy(&lm, &engine(false), &o.input, 8), o.generated);
}

#[test]
fn dequantized_smollm2_llama_directory_matches_the_gguf_exact_path() {
    // llama: GGUF's Q/K rows are permuted for adjacent-pair rotation, the
    // directory's are HF's (rotate_half); the same numbers summed in
    // another order inside each head, so near, not bit-equal
    let dir = load_path(&test_model("smollm2-hf-f32"));
    let gguf = load(MODELS[1].1);
    assert!(dir.model.weights.tied_output);
    let e = engine(true);
    for p in PROMPTS {
        let case = prompt_case(MODELS[1].0, p);
        let a = all_logits(&dir, &e, &case.input_ids);
        let b = all_logits(&gguf, &e, &case.input_ids);
        let d = max_abs_diff(&a, &b);
        println!("smollm2 {p}: HF f32 directory vs GGUF --exact max |Δ| {d:.2e}");
        assert!(d <= 1e-4, "{p}: max |Δ| {d:e}");
        assert_eq!(greedy(&dir, &e, &case.input_ids, 16), greedy(&gguf, &e, &case.input_ids, 16), "{p}");
    }
}

#[test]
fn float16_checkpoint_runs_as_its_float32_widening() {
    // tiny-llama saved in f16, beside the same numbers saved in f32: the
    // f16 weights widen exactly, so the exact path gives the same bits
    let round = |b: &[u8]| -> Vec<half::f16> {
        b.chunks_exact(4).map(|c| half::f16::from_f32(f32::from_le_bytes(c.try_into().unwrap()))).collect()
    };
    let f16 = hfdir::copy("tiny-llama", "f16");
    hfdir::edit_shard(&f16.join("model.safetensors"), |m| {
        for t in m.values_mut() {
            t.2 = round(&t.2).iter().flat_map(|h| h.to_le_bytes()).collect();
            t.0 = safetensors::Dtype::F16;
        }
    });
    hfdir::edit_json(&f16.join("config.json"), |v| v["dtype"] = "float16".into());
    let f32_ = hfdir::copy("tiny-llama", "f16-widened");
    hfdir::edit_shard(&f32_.join("model.safetensors"), |m| {
        for t in m.values_mut() {
            t.2 = round(&t.2).iter().flat_map(|h| h.to_f32().to_le_bytes()).collect();
        }
    });
    let (a, b) = (load_path(&f16), load_path(&f32_));
    assert!(a.model.weights.matrices().all(|t| t.ty == GgmlType::F16));
    let o = oracle("tiny-llama");
    for exact in [true, false] {
        let e = engine(exact);
        let (la, lb) = (all_logits(&a, &e, &o.input), all_logits(&b, &e, &o.input));
        assert!(bits_equal(&la, &lb), "exact={exact}: F16 and its f32 widening differ");
        println!("tiny-llama in f16, exact={exact}: max |Δ| to the f32 oracle {:.2e}", max_abs_diff(&la, &o.logits));
        assert_eq!(greedy(&a, &e, &o.input, 8), o.generated, "exact={exact}");
    }
    for d in [f16, f32_] {
        std::fs::remove_dir_all(d).ok();
    }
}

/// Sliding-window layers keep a ring of W + B − 1 positions (tiny-gemma3,
/// tiny-gemma2 and tiny-mistral: window 5, steps of up to 4 → 8, stored twice):
/// decoding 60 tokens past the window gives the same bits as one dense
/// forward over the whole sequence, on every backend, exact and quantized; the ring's memory does
/// not grow with the context; a truncation the ring can no longer serve
/// keeps nothing, and a saved session restores to the same logits.
#[test]
fn sliding_window_ring_equals_a_dense_recompute() {
    let seq: Vec<u32> = (0..64u32).map(|i| (i * 37 + 11) % 512).collect();
    // (tiny-gemma2 softcaps its scores too)
    for (model, name) in
        ["tiny-gemma3", "tiny-gemma2"].iter().flat_map(|m| tern::kernels::available().into_iter().map(|k| (*m, k)))
    {
        let lm = load_path(&tiny(model));
        for exact in [false, true] {
            let par = tern::Threads::new(2);
            let e = Engine { kernels: tern::kernels::by_name(name).unwrap(), par: &par, exact };
            // dense: one session sized for the whole sequence in one step
            let mut dense = lm.model.session_kv(64, 64, e.kv_type());
            let want = dense.forward(&lm.model, &e, &seq, Logits::All).unwrap().to_vec();
            // ring: a 4-token prefill, then one token at a time
            let mut ring = lm.model.session_kv(64, 4, e.kv_type());
            let mut got = ring.forward(&lm.model, &e, &seq[..4], Logits::All).unwrap().to_vec();
            for &t in &seq[4..] {
                got.extend_from_slice(ring.forward(&lm.model, &e, &[t], Logits::Last).unwrap());
            }
            assert!(
                bits_equal(&got, &want),
                "{model} {name} exact={exact}: ring decode differs from the dense forward"
            );
            assert!(ring.kv_bytes() < dense.kv_bytes(), "{model} {name}: the ring is not smaller");
        }
    }
    let lm = load_path(&tiny("tiny-gemma3"));
    let e = engine(true);
    let small = lm.model.session_kv(256, 4, e.kv_type()).kv_bytes();
    let mut large = lm.model.session_kv(4096, 4, e.kv_type());
    assert_eq!(large.kv_bytes(), small, "the rings grew with n_ctx");
    let c = &lm.model.config;
    let global = c.window.as_ref().unwrap().layers.iter().filter(|w| !**w).count();
    // held positions grow only the global layer's blocks, a block at a time
    let held = KV_BLOCK + 4;
    for p in (0..held).step_by(4) {
        let toks: Vec<u32> = (p..p + 4).map(|i| (i % 97 + 1) as u32).collect();
        large.forward(&lm.model, &e, &toks, Logits::None).unwrap();
    }
    let block = KV_BLOCK * global * 2 * c.kv_dim() * 4;
    assert_eq!(large.kv_bytes() - small, 2 * block, "{held} positions: not two blocks of the global layer");

    let mut s = lm.model.session_kv(64, 4, e.kv_type());
    s.forward(&lm.model, &e, &seq[..40], Logits::None).unwrap();
    assert_eq!(s.truncate(36), 36, "the ring still holds position 36's window");
    assert_eq!(s.truncate(10), 0, "position 10's window was overwritten: nothing can be kept");
    s.forward(&lm.model, &e, &seq[..40], Logits::None).unwrap();
    let saved = s.save(&lm.model.config);
    let next = s.forward(&lm.model, &e, &seq[40..41], Logits::Last).unwrap().to_vec();
    let mut r = lm.model.session_kv(64, 4, e.kv_type());
    r.restore(&lm.model.config, &saved).unwrap();
    assert!(bits_equal(r.forward(&lm.model, &e, &seq[40..41], Logits::Last).unwrap(), &next), "restored ring");
}

/// A directory without a tokenizer runs on ids: `Bundle::vocab` gives
/// tokens no text, and generation ends at generation_config.json's end id
/// (here made the second greedy token, so a generation of 8 stops at 2).
#[test]
fn a_directory_without_a_tokenizer_generates_ids_and_stops_at_its_end_id() {
    use tern_core::SamplerConfig;
    use tern_core::{FinishReason, GenerateConfig, Generator, Vocab};
    let o = oracle("tiny-llama");
    let run = |dir: &Path| {
        let lm = load_path(dir);
        assert!(lm.tokenizer.is_none());
        let vocab = lm.vocab();
        let mut s = lm.model.session(64, 512);
        let cfg = GenerateConfig { max_tokens: 8, sampler: SamplerConfig::greedy(), ..Default::default() };
        let r = Generator::new(&lm.model, engine(false), &vocab, &mut s, &o.input, cfg).run(|_, _| {}).unwrap();
        assert!(r.tokens.iter().all(|&t| vocab.token_bytes(t).is_empty()));
        r
    };
    let dir = hfdir::copy("tiny-llama", "no-tokenizer-eos");
    // an end id greedy decoding does not produce: all 8 tokens
    let unused = (0..).find(|t| !o.generated.contains(t)).unwrap();
    hfdir::edit_json(&dir.join("generation_config.json"), |v| v["eos_token_id"] = unused.into());
    let all = run(&dir);
    assert_eq!(all.tokens, o.generated, "greedy ids without a tokenizer");
    assert_eq!(all.finish_reason, FinishReason::Length);
    // the second token as the end id: the generation stops there
    hfdir::edit_json(&dir.join("generation_config.json"), |v| v["eos_token_id"] = o.generated[1].into());
    let cut = run(&dir);
    assert_eq!(cut.tokens, o.generated[..2], "ends at the end id (kept, as an end token is)");
    assert_eq!(cut.finish_reason, FinishReason::Stop);
    std::fs::remove_dir_all(dir).unwrap();
}
