//! `tern perplexity` against llama.cpp's llama-perplexity on the same file,
//! model and context (figures recorded in fixtures/oracle/perplexity/).

use tern_core::perplexity::perplexity;
use tern_tests::*;

fn check(record: &str, file: &str, tolerance: f64) {
    let rec = read_json(record);
    let want = &rec["results"][file];
    let (ctx, want_ppl) = (want["ctx"].as_u64().unwrap() as usize, want["ppl"].as_f64().unwrap());
    let text = std::fs::read_to_string(oracle_dir().join("perplexity").join(rec["text"].as_str().unwrap())).unwrap();
    let lm = load(file);
    let tokens = lm.tokenizer().unwrap().encode(&text, false).unwrap();
    let bos = lm.tokenizer().unwrap().add_bos.then_some(lm.tokenizer().unwrap().bos).flatten();
    let e = tern::engine(threads(), false).unwrap();
    let r = perplexity(&lm.model, &e, e.kv_type(), &tokens, ctx, bos, None, |_, _| {}).unwrap();
    let rel = (r.ppl - want_ppl).abs() / want_ppl;
    println!(
        "{file}: tern PPL {:.4} ± {:.4} vs llama.cpp {want_ppl} ({} chunks of {ctx}): {:.2}% apart",
        r.ppl,
        r.stderr,
        r.n_chunks,
        rel * 100.0
    );
    // 1.5 %: llama.cpp is not the truth here. On SmolLM2 its own settings
    // span 18.33-18.39 (flash attention on/off, f16/f32 cache; this machine,
    // 2026-11-30) while tern's exact f32 path, which tracks the HF oracle to
    // ~1e-6, scores 18.1303: llama.cpp sits 1.1-1.4 % above the model's
    // exact perplexity, tern's quantized path (f16 cache) 0.2 %.
    assert!(rel < tolerance, "perplexity {:.4} is more than {tolerance} from llama.cpp's {want_ppl}", r.ppl);
}

#[test]
fn perplexity_matches_llamacpp_smollm2() {
    check("perplexity/llamacpp.json", MODELS[1].1, 0.015);
}

#[test]
fn perplexity_matches_llamacpp_qwen() {
    check("perplexity/llamacpp.json", MODELS[0].1, 0.015);
}

/// Gemma 3 270M: within 1 % (gemma3/llamacpp_perplexity.json, made by
/// make_llamacpp_fixtures.py).
#[test]
fn perplexity_matches_llamacpp_gemma3() {
    check("gemma3/llamacpp_perplexity.json", "gemma-3-270m-q4_k_m.gguf", 0.01);
}
