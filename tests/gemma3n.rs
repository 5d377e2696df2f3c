//! Gemma 3n (text): the tiny checkpoint transformers made (AltUp, LAuReL,
//! per-layer inputs, shared K/V, Gaussian top-k, per-layer widths, final
//! softcap) against its logits and greedy ids; the multimodal layout with
//! its towers left unloaded; the GGUF twin.

use tern_core::Logits;
use tern_tests::hfdir::tiny;
use tern_tests::tiny_oracle::*;
use tern_tests::*;

/// The exact path within 1e-5 of the largest logit, the greedy ids equal.
#[test]
fn gemma3n_exact_path_is_within_1e_5_of_the_largest_logit() {
    for name in ["tiny-gemma3n", "tiny-gemma3n-mm"] {
        let lm = exact_within(name, 1e-5);
        assert!(lm.model.config.gemma3n.is_some(), "{name}");
        if name.ends_with("-mm") {
            // the towers are named, never bound
            let tern_core::Source::Hf(h) = &lm.source else { panic!("{name}: not read as an HF directory") };
            let towers = ["model.audio_tower", "model.embed_audio", "model.embed_vision", "model.vision_tower"];
            assert_eq!(h.not_loaded, towers, "{name}");
        }
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

/// 40 tokens (past the window of 5; the last two layers reading the K/V
/// of layers 3 and 2) in one batch, in steps of 7 and of 1, on 1 and 2
/// threads, every backend, exact and quantized: the same bits.
#[test]
fn gemma3n_logits_are_the_same_bits_whatever_the_batch_threads_and_backend() {
    same_bits_whatever_the_batch_threads_and_backend(&load_path(&tiny("tiny-gemma3n")), "tiny-gemma3n");
}

/// Max |Δ| to the oracle once the bytes of the matrices `pick` names are
/// zeroed (the tiny model is float32, read as it is: no layout of its own).
fn zeroed(pick: impl Fn(&tern_core::Model<tern::Buffer>) -> Vec<(usize, usize, usize)>) -> f64 {
    let name = "tiny-gemma3n";
    let o = oracle(name);
    let lm = tern::load_with(&tiny(name), &tern::LoadOptions { no_repack: true, ..Default::default() }).unwrap();
    let mut bufs: Vec<Vec<u8>> = lm.model.buffers().iter().map(|b| b.as_ref().to_vec()).collect();
    for (buf, start, len) in pick(&lm.model) {
        bufs[buf][start..start + len].fill(0);
    }
    let m = tern_core::Model::from_parts(bufs, lm.model.config.clone(), lm.model.weights.clone()).unwrap();
    let e = engine(true);
    let mut s = m.session_kv(o.input.len(), 512, e.kv_type());
    max_abs_diff(s.forward(&m, &e, &o.input, Logits::All).unwrap(), &o.logits)
}

/// Each part of the block matters: AltUp's correction reduced to a plain
/// residual (its coefficients zeroed) or its prediction to none, the
/// per-layer embeddings zeroed, LAuReL's path zeroed, the Gaussian top-k
/// off, a shared layer reading the wrong layer's K/V, the final softcap
/// off — each misses the oracle by far more than its tolerance (1e-4).
#[test]
fn a_mutated_gemma3n_block_fails_the_oracle() {
    let far = |d: f64| d > 100.0 * 1e-4;
    let name = "tiny-gemma3n";
    let layers = |f: fn(&mut tern_core::Gemma3nLayer)| {
        move |lm: &mut tern::Loaded| lm.model.weights.layers.iter_mut().for_each(|l| f(l.gemma3n.as_mut().unwrap()))
    };
    let config =
        |f: fn(&mut tern_core::Gemma3n)| move |lm: &mut tern::Loaded| f(lm.model.config.gemma3n.as_mut().unwrap());
    let cases: Vec<(&str, f64)> = vec![
        ("AltUp's correction a plain residual", mutated(name, layers(|g| g.correct.fill(0.0)))),
        ("AltUp's prediction skipped", mutated(name, layers(|g| g.predict.fill(0.0)))),
        ("the Gaussian top-k off", mutated(name, config(|g| g.sparsity.fill(None)))),
        ("layer 4 reading layer 2's K/V", mutated(name, config(|g| g.kv_source[4] = 2))),
        ("the final softcap off", mutated(name, |lm| lm.model.config.final_softcap = None)),
        (
            "per-layer embeddings zeroed",
            zeroed(|m| {
                let t = &m.weights.gemma3n.as_ref().unwrap().per_layer_embd;
                vec![(t.buf, t.start, t.len)]
            }),
        ),
        (
            "LAuReL's path zeroed",
            zeroed(|m| {
                let right = m.weights.layers.iter().map(|l| &l.gemma3n.as_ref().unwrap().laurel_right);
                right.map(|t| (t.buf, t.start, t.len)).collect()
            }),
        ),
    ];
    for (what, d) in cases {
        println!("{name}, {what}: max |Δ| {d:.3}");
        assert!(far(d), "{name}: {what} still meets the oracle ({d:e})");
    }
}
