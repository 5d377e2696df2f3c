//! Gemma 3n (text): the tiny checkpoint transformers made (AltUp, LAuReL,
//! per-layer inputs, shared K/V, Gaussian top-k, per-layer widths, final
//! softcap) against its logits and greedy ids; the multimodal layout with
//! its towers left unloaded; the GGUF twin.

use tern_tests::hfdir::tiny;
use tern_tests::tiny_oracle::*;
use tern_tests::*;

/// The exact path within 1e-5 of the largest logit, the greedy ids equal.
#[test]
fn gemma3n_exact_path_is_within_1e_5_of_the_largest_logit() {
    for name in ["tiny-gemma3n", "tiny-gemma3n-mm"] {
        let o = oracle(name);
        let lm = load_path(&tiny(name));
        assert!(lm.model.config.gemma3n.is_some(), "{name}");
        let e = engine(true);
        let rel = rel_err(&all_logits(&lm, &e, &o.input), &o.logits);
        println!("{name}: max |Δ| / max |logit| {rel:.2e}");
        assert!(rel <= 1e-5, "{name}: {rel:e}");
        assert_eq!(greedy(&lm, &e, &o.input, 8), o.generated, "{name}");
    }
}

/// The GGUF twin (as llama.cpp's converter lays Gemma 3n out): the
/// oracle's logits and greedy ids, the same bits as the HF directory.
#[test]
fn gemma3n_gguf_twin_equals_the_oracle_and_the_hf_directory() {
    let g = gguf_twin_equals_the_oracle_and_the_hf_directory("tiny-gemma3n", "gemma3n");
    let dir = load_path(&tiny("tiny-gemma3n"));
    assert_eq!(g.model.config.gemma3n, dir.model.config.gemma3n);
}
