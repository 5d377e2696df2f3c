//! The tiny transformers checkpoints against their oracle (logits of 12
//! inputs, 8 greedy ids), and their GGUF twins against both: what the
//! HF-directory and family tests share.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tern::Loaded;
use tern_core::{Engine, Logits};

use crate::hfdir::tiny;
use crate::{argmax, bits_equal, ids, max_abs_diff, threads};

/// Made by scripts/make-test-models.sh (the test command runs it).
pub fn test_model(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-models").join(name);
    assert!(p.exists(), "{} is missing: run scripts/make-test-models.sh (scripts/test.sh does)", p.display());
    p
}

/// A tiny model's oracle: its inputs, transformers' logits, greedy ids.
pub struct Oracle {
    pub input: Vec<u32>,
    /// [12, 512] row-major.
    pub logits: Vec<f32>,
    pub generated: Vec<u32>,
}

/// The oracle of tiny model `name` (its logits' SHA-256 checked).
pub fn oracle(name: &str) -> Oracle {
    let dir = tiny(name);
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("oracle.json")).unwrap()).unwrap();
    let bytes = std::fs::read(dir.join("logits.bin")).unwrap();
    assert_eq!(format!("{:x}", Sha256::digest(&bytes)), j["logits_sha256"].as_str().unwrap(), "{name}: logits.bin");
    let logits = bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    Oracle { input: ids(&j["input_ids"]), logits, generated: ids(&j["generated_ids"]) }
}

/// Load a model, panicking with the path and error.
pub fn load_path(p: &Path) -> Loaded {
    tern::load(p).unwrap_or_else(|e| panic!("loading {}: {e}", p.display()))
}

/// The native engine on the tests' two threads.
pub fn engine(exact: bool) -> Engine<'static> {
    tern::engine(threads(), exact).unwrap()
}

/// Every row's logits of one forward over `input`.
pub fn all_logits(lm: &Loaded, e: &Engine, input: &[u32]) -> Vec<f32> {
    let mut s = lm.model.session_kv(input.len(), 512, e.kv_type());
    s.forward(&lm.model, e, input, Logits::All).unwrap().to_vec()
}

/// Greedy ids, cached decode, no end token (as the oracle's generate).
pub fn greedy(lm: &Loaded, e: &Engine, input: &[u32], n: usize) -> Vec<u32> {
    let mut s = lm.model.session_kv(input.len() + n, 512, e.kv_type());
    let mut next = argmax(s.forward(&lm.model, e, input, Logits::Last).unwrap());
    let mut out = vec![next];
    while out.len() < n {
        next = argmax(s.forward(&lm.model, e, &[next], Logits::Last).unwrap());
        out.push(next);
    }
    out
}

/// The exact path (f32 everywhere) must meet the oracle within 1e-4; the
/// default path keeps its KV cache in f16 (as llama.cpp), which costs more.
pub fn tolerance(exact: bool) -> f64 {
    if exact {
        1e-4
    } else {
        1e-2
    }
}

/// All 12×512 logits within `tolerance` of the oracle and its 8 greedy
/// ids; returns the logits.
pub fn against_oracle(name: &str, lm: &Loaded, o: &Oracle, exact: bool) -> Vec<f32> {
    let e = engine(exact);
    let got = all_logits(lm, &e, &o.input);
    let d = max_abs_diff(&got, &o.logits);
    println!("{name} exact={exact}: max |Δ| over 12×512 logits {d:.2e}");
    assert!(d <= tolerance(exact), "{name} exact={exact}: max |Δ| {d:e}");
    assert_eq!(greedy(lm, &e, &o.input, 8), o.generated, "{name} exact={exact}: greedy ids");
    got
}

/// A tiny bf16 model written as GGUF the way llama.cpp's converter writes
/// its architecture (tests/tools/tiny_to_gguf.py): the transformers
/// oracle's logits and greedy ids, and the same bits as its HF directory,
/// on both paths.
pub fn gguf_twin_equals_the_oracle_and_the_hf_directory(name: &str, arch: &str) -> Loaded {
    gguf_twin_within(name, arch, 0.0)
}

/// As above, the GGUF within `within` of the oracle's tolerance of the HF
/// directory (0: the same bits).
pub fn gguf_twin_within(name: &str, arch: &str, within: f64) -> Loaded {
    let o = oracle(name);
    let gguf = load_path(&test_model(&format!("{name}.gguf")));
    let dir = load_path(&tiny(name));
    assert_eq!(gguf.model.config.arch.name(), arch);
    for exact in [true, false] {
        let got = against_oracle(&format!("{name}.gguf"), &gguf, &o, exact);
        let from_dir = all_logits(&dir, &engine(exact), &o.input);
        let d = max_abs_diff(&got, &from_dir);
        println!("{name}: GGUF against the HF directory (exact={exact}): max |Δ| {d:.2e}");
        let same = if within == 0.0 { bits_equal(&got, &from_dir) } else { d <= within * tolerance(exact) };
        assert!(same, "{name}: GGUF and HF directory differ by {d:e} (exact={exact})");
    }
    gguf
}

/// One forward over 40 tokens, in one batch, in steps of 7 and one token
/// at a time, on 1 and 2 threads, on every backend, exact and quantized:
/// the same bits, or a panic naming the run that differs.
pub fn same_bits_whatever_the_batch_threads_and_backend(lm: &Loaded, name: &str) {
    let seq: Vec<u32> = (0..40u32).map(|i| (i * 37 + 11) % 512).collect();
    for exact in [false, true] {
        let mut want: Option<Vec<f32>> = None;
        for backend in tern::kernels::available() {
            for n_threads in [1, 2] {
                let par = tern::Threads::new(n_threads);
                let e = Engine { kernels: tern::kernels::by_name(backend).unwrap(), par: &par, exact };
                for step in [40, 7, 1] {
                    let got = in_steps(lm, &e, &seq, step);
                    let label = format!("{name} exact={exact} {backend} threads={n_threads} step={step}");
                    match &want {
                        None => want = Some(got),
                        Some(w) => assert!(bits_equal(&got, w), "{label}: differs"),
                    }
                }
            }
        }
    }
}

/// Every row's logits of `seq`, fed `step` tokens a call.
pub fn in_steps(lm: &Loaded, e: &Engine, seq: &[u32], step: usize) -> Vec<f32> {
    let mut s = lm.model.session_kv(seq.len(), step, e.kv_type());
    let mut out = Vec::new();
    for chunk in seq.chunks(step) {
        out.extend_from_slice(s.forward(&lm.model, e, chunk, Logits::All).unwrap());
    }
    out
}

/// Max |Δ| to the oracle of tiny model `name` once `mutate` has changed it.
pub fn mutated(name: &str, mutate: impl Fn(&mut Loaded)) -> f64 {
    let o = oracle(name);
    let mut lm = load_path(&tiny(name));
    mutate(&mut lm);
    max_abs_diff(&all_logits(&lm, &engine(true), &o.input), &o.logits)
}

/// Tiny model `name`'s exact path within `rel`·max|logit| of the oracle
/// and its greedy ids equal (printing the figure); the model.
pub fn exact_within(name: &str, rel: f64) -> Loaded {
    let o = oracle(name);
    let lm = load_path(&tiny(name));
    let e = engine(true);
    let got = crate::rel_err(&all_logits(&lm, &e, &o.input), &o.logits);
    println!("{name}: max |Δ| / max |logit| {got:.2e}");
    assert!(got <= rel, "{name}: {got:e}");
    assert_eq!(greedy(&lm, &e, &o.input, 8), o.generated, "{name}");
    lm
}
