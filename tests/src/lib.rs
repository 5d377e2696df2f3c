//! Shared helpers of the cross-crate tests: the oracle fixtures and the
//! real models (fetched by scripts/fetch-models.sh, which runs `tern pull`; a missing model fails
//! the test, it is never skipped).

pub mod bert_gguf;
pub mod hfdir;
pub mod tiny_oracle;

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};
use tern::{Loaded, Threads};
use tern_core::{Engine, Logits, Session};

/// The two oracle models: (oracle name, GGUF file name).
pub const MODELS: [(&str, &str); 2] = [
    ("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    ("smollm2-135m", "smollm2-135m-instruct-q4_1.gguf"),
];
pub const PROMPTS: [&str; 5] = ["p1", "p2", "p3", "p4", "p5"];

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

pub fn oracle_dir() -> PathBuf {
    fixtures().join("oracle")
}

pub fn read_json(rel: &str) -> Value {
    let p = oracle_dir().join(rel);
    let s = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&s).unwrap()
}

pub fn manifest() -> &'static Value {
    static M: OnceLock<Value> = OnceLock::new();
    M.get_or_init(|| read_json("manifest.json"))
}

/// A logits file of the oracle, checked against the manifest's sha256.
pub fn oracle_logits(model: &str, prompt: &str, kind: &str) -> Vec<f32> {
    let rel = format!("logits/{model}/{prompt}.{kind}.bin");
    let bytes = std::fs::read(oracle_dir().join(&rel)).unwrap();
    let entry = manifest()["files"].as_array().unwrap().iter().find(|f| f["file"] == rel).expect("in manifest");
    let sha = format!("{:x}", Sha256::digest(&bytes));
    assert_eq!(sha, entry["sha256"].as_str().unwrap(), "{rel} differs from the oracle's");
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

pub struct PromptCase {
    pub name: &'static str,
    pub input_ids: Vec<u32>,
    /// HF greedy continuation (16 tokens).
    pub generated: Vec<u32>,
    pub margins: Vec<f64>,
}

pub fn prompt_case(model: &str, p: &'static str) -> PromptCase {
    let e = &manifest()["prompts"][model][p];
    PromptCase {
        name: p,
        input_ids: ids(&e["input_ids"]),
        generated: ids(&e["generation"]["generated_ids"]),
        margins: e["generation"]["top1_top2_margins"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect(),
    }
}

pub fn model_path(file: &str) -> PathBuf {
    let p = tern::models_dir().join(file);
    assert!(p.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", p.display());
    p
}

pub fn load(file: &str) -> Loaded {
    tern::load(&model_path(file)).unwrap_or_else(|e| panic!("loading {file}: {e}"))
}

pub fn threads() -> &'static Threads {
    static T: OnceLock<Threads> = OnceLock::new();
    T.get_or_init(|| Threads::new(2))
}

/// Relative error as the issue defines it: max |Δ| / max |oracle|.
pub fn rel_err(got: &[f32], want: &[f32]) -> f64 {
    assert_eq!(got.len(), want.len());
    let max_abs = want.iter().fold(0.0f64, |a, &b| a.max((b as f64).abs()));
    let max_d = got.iter().zip(want).fold(0.0f64, |a, (&g, &w)| a.max((g as f64 - w as f64).abs()));
    max_d / max_abs
}

pub fn max_abs_diff(got: &[f32], want: &[f32]) -> f64 {
    got.iter().zip(want).fold(0.0f64, |a, (&g, &w)| a.max((g as f64 - w as f64).abs()))
}

pub fn argmax(x: &[f32]) -> u32 {
    tern_core::runtime::argmax(x)
}

/// Logits of a prompt and the first `steps` cached decode steps fed the
/// oracle's own continuation: rows for every prompt position, then one row
/// per step (the step-k row picks generated token k).
pub struct Run {
    pub prompt_rows: Vec<f32>,
    pub steps: Vec<Vec<f32>>,
}

pub fn run_cached(lm: &Loaded, e: &Engine, s: &mut Session, input: &[u32], feed: &[u32]) -> Run {
    let prompt_rows = s.forward(&lm.model, e, input, Logits::All).unwrap().to_vec();
    let steps = feed.iter().map(|&t| s.forward(&lm.model, e, &[t], Logits::Last).unwrap().to_vec()).collect();
    Run { prompt_rows, steps }
}

/// Every row of one forward over the whole sequence, from an empty cache.
pub fn run_full(lm: &Loaded, e: &Engine, seq: &[u32]) -> Vec<f32> {
    let mut s = lm.model.session_kv(seq.len(), 512, e.kv_type());
    s.forward(&lm.model, e, seq, Logits::All).unwrap().to_vec()
}

/// Bitwise equality of two float slices (NaN-safe, ±0 distinguished).
/// The cosine of two vectors, in f64.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let d = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(&p, &q)| p as f64 * q as f64).sum::<f64>();
    d(a, b) / (d(a, a).sqrt() * d(b, b).sqrt())
}

/// The retrieval check of an embedding oracle (`retrieval` in
/// embed/minilm.json): for each query, (query, our top-5 documents by
/// cosine, the oracle's), `ours` and `theirs` giving a text's vector.
pub fn top5s(
    oracle: &Value,
    ours: &dyn Fn(usize) -> Vec<f32>,
    theirs: &dyn Fn(usize) -> Vec<f32>,
) -> Vec<(usize, Vec<usize>, Vec<usize>)> {
    let idx = |k: &str| -> Vec<usize> {
        oracle["retrieval"][k].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect()
    };
    let (qs, ds) = (idx("queries"), idx("documents"));
    let top = |q: usize, vec: &dyn Fn(usize) -> Vec<f32>| {
        let mut r: Vec<(f64, usize)> = ds.iter().map(|&d| (cosine(&vec(q), &vec(d)), d)).collect();
        r.sort_by(|a, b| b.0.total_cmp(&a.0));
        r.iter().take(5).map(|x| x.1).collect::<Vec<_>>()
    };
    qs.iter().map(|&q| (q, top(q, ours), top(q, theirs))).collect()
}

pub fn bits_equal(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The largest relative error against the oracle over a run's recorded
/// positions (last prompt row, then one row per step), with each row's name.
pub fn recorded_errors(model: &str, prompt: &str, run: &Run, n_vocab: usize) -> Vec<(String, f64, bool)> {
    let n = run.prompt_rows.len() / n_vocab;
    let mut rows = vec![("last".to_string(), &run.prompt_rows[(n - 1) * n_vocab..])];
    for (k, r) in run.steps.iter().enumerate() {
        rows.push((format!("gen{}", k + 1), &r[..]));
    }
    rows.into_iter()
        .map(|(kind, got)| {
            let want = oracle_logits(model, prompt, &kind);
            let same_top1 = argmax(got) == argmax(&want);
            (kind, rel_err(got, &want), same_top1)
        })
        .collect()
}

/// Streaming `ids`' bytes through a UTF-8 stream gives `decoded` (as
/// generated text: the decoder's one dropped leading space aside).
pub fn assert_streams_as_decoded(tok: &tern_core::Tokenizer, ids: &[u32], decoded: &str, what: &str) {
    let mut stream = tern_core::runtime::Utf8Stream::new();
    let mut streamed = String::new();
    for &id in ids {
        streamed += &stream.push(tok.token_bytes(id));
    }
    streamed += &stream.finish();
    let same = streamed == decoded || streamed.strip_prefix(' ') == Some(decoded);
    assert!(same, "{what}: streamed {streamed:?}, decoded {decoded:?}");
}
