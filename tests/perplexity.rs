//! `tern perplexity` against llama.cpp's llama-perplexity on the same
//! windows of the same tokens: the first 4 windows of 512 tokens of
//! fixtures/oracle/perplexity/gpl-3.0-head.txt (figures and the windows'
//! sha256 in llamacpp_chunks.json there, made by make_llamacpp_perplexity.py).

use sha2::{Digest, Sha256};
use tern_core::{perplexity, runtime::tokenize};
use tern_tests::*;

fn check(file: &str) {
    let rec = read_json("perplexity/llamacpp_chunks.json");
    let want = &rec["results"][file];
    let (ctx, want_ppl) = (want["ctx"].as_u64().unwrap() as usize, want["ppl"].as_f64().unwrap());
    let chunks = want["chunks"].as_u64().unwrap() as usize;
    let text = std::fs::read_to_string(oracle_dir().join("perplexity").join(rec["text"].as_str().unwrap())).unwrap();
    let lm = load(file);
    let (tokens, bos) = tokenize(lm.tokenizer().unwrap(), &text).unwrap();
    let windows = &tokens[..(chunks * ctx).min(tokens.len())];
    let bytes: Vec<u8> = windows.iter().flat_map(|t| t.to_le_bytes()).collect();
    assert_eq!(
        format!("{:x}", Sha256::digest(&bytes)),
        want["ids_sha256"].as_str().unwrap(),
        "{file}: the {} tokens of tern's windows are not llama.cpp's",
        windows.len()
    );
    let e = tern::engine(threads(), false).unwrap();
    let r = perplexity(&lm.model, &e, e.kv_type(), &tokens, ctx, bos, Some(chunks), |_, _| {}).unwrap();
    let rel = (r.ppl - want_ppl).abs() / want_ppl;
    println!(
        "{file}: tern PPL {:.4} ± {:.4} vs llama.cpp {want_ppl} ({} chunks of {ctx}): {:.2}% apart",
        r.ppl,
        r.stderr,
        r.n_chunks,
        rel * 100.0
    );
    // 1 %: llama.cpp is not the truth here, only the same windows run by
    // another engine's quantized path. Measured on this machine
    // (2026-12-04): tern 0.27-0.36 % from llama.cpp on all three models;
    // Gemma 3's exact f32 path scores 15.354 where both quantized paths give
    // 15.42-15.47. (Over the whole of gpl-3.0.txt, whose windows differ
    // for SmolLM2 by the tokenizers' split, llama.cpp's own settings spanned
    // 18.33-18.39 and tern's exact path 18.13.)
    assert!(rel < 0.01, "perplexity {:.4} is more than 1 % from llama.cpp's {want_ppl}", r.ppl);
}

#[test]
fn perplexity_matches_llamacpp_smollm2() {
    check(MODELS[1].1);
}

#[test]
fn perplexity_matches_llamacpp_qwen() {
    check(MODELS[0].1);
}

#[test]
fn perplexity_matches_llamacpp_gemma3() {
    check("gemma-3-270m-q4_k_m.gguf");
}
