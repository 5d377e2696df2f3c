//! `tern perplexity` against llama.cpp's llama-perplexity on the same file,
//! model and context (figures recorded in fixtures/oracle/perplexity/).

use tern_core::perplexity::perplexity;
use tern_tests::*;

fn check(file: &str) {
    let rec = read_json("perplexity/llamacpp.json");
    let want = &rec["results"][file];
    let (ctx, want_ppl) = (want["ctx"].as_u64().unwrap() as usize, want["ppl"].as_f64().unwrap());
    let text = std::fs::read_to_string(oracle_dir().join("perplexity").join(rec["text"].as_str().unwrap())).unwrap();
    let lm = load(file);
    let tokens = lm.tokenizer.encode(&text, false).unwrap();
    let bos = lm.tokenizer.add_bos.then_some(lm.tokenizer.bos).flatten();
    let e = tern::engine(threads(), false);
    let r = perplexity(&lm.model, &e, &tokens, ctx, bos, None, |_, _| {}).unwrap();
    let rel = (r.ppl - want_ppl).abs() / want_ppl;
    println!(
        "{file}: tern PPL {:.4} ± {:.4} vs llama.cpp {want_ppl} ({} chunks of {ctx}): {:.2}% apart",
        r.ppl,
        r.stderr,
        r.n_chunks,
        rel * 100.0
    );
    assert!(rel < 0.01, "perplexity {:.4} is more than 1% from llama.cpp's {want_ppl}", r.ppl);
}

#[test]
fn perplexity_matches_llamacpp_smollm2() {
    check(tern::models::SMOLLM2);
}

#[test]
fn perplexity_matches_llamacpp_qwen() {
    check(tern::models::DEFAULT_MODEL);
}
