//! The parity checks can fail: each injected fault (RoPE pairing, causal
//! mask, cache frontier, K/V wiring) pushes the exact path far outside the
//! oracle tolerance that the correct engine meets. The faults come from
//! outside the forward pass: a wrapped kernel backend that misreads the
//! mask, or a model whose configuration or weights were rewired.

use tern_core::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1};
use tern_core::backend::{Acts, Cached, Kernels, QMatrix, Queries, Score};
use tern_core::Engine;
use tern_core::RopeStyle;
use tern_tests::*;

const TOL: f64 = 1e-3;
const STEPS: usize = 4;

/// How a wrapped backend misreads the causal mask.
#[derive(Clone, Copy)]
enum Mask {
    Right,
    /// Each query sees itself and the positions after it (in its prompt
    /// chunk) instead of those before it.
    Inverted,
    /// Each query sees one position fewer (its own K/V left out).
    FrontierOffByOne,
}

/// The process's kernels with the mask misread as `mask` says.
struct Faulty(&'static dyn Kernels, Mask);

impl Kernels for Faulty {
    fn name(&self) -> &'static str {
        "faulty"
    }
    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: std::ops::Range<usize>, out: &mut [f32]) {
        self.0.matmul_rows(w, x, n_tok, rows, out)
    }
    fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
        self.0.quantize_q8_0(x, out)
    }
    fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
        self.0.quantize_q8_1(x, out)
    }
    fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
        self.0.quantize_q8_k(x, out)
    }
    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        self.0.rms_norm(x, w, eps, o)
    }
    fn swiglu(&self, g: &mut [f32], u: &[f32]) {
        self.0.swiglu(g, u)
    }
    fn attention_head(&self, q: &[f32], kv: Cached, n: usize, score: Score, scores: &mut [f32], out: &mut [f32]) {
        self.0.attention_head(q, kv, n, score, scores, out)
    }
    fn attention_queries(&self, qs: Queries, kv: Cached, scores: &mut [f32], out: &mut [f32]) {
        let last = qs.n_kv.iter().copied().max().unwrap_or(0);
        qs.each(out, |q, n, o| match self.1 {
            Mask::Right => self.0.attention_head(q, kv, n, qs.score, scores, o),
            Mask::FrontierOffByOne => self.0.attention_head(q, kv, (n - 1).max(1), qs.score, scores, o),
            Mask::Inverted => self.0.attention_head(q, kv.from(n - 1), last - n + 1, qs.score, scores, o),
        });
    }
}

/// Worst relative error over the recorded rows, and whether every top-1
/// matched.
fn worst_error(lm: &tern::Loaded, model: &str, mask: Mask) -> (f64, bool) {
    let kernels = Faulty(tern::kernels::select().unwrap(), mask);
    let e = Engine { kernels: &kernels, par: threads(), exact: true };
    let case = prompt_case(model, "p1");
    let mut s = lm.model.session_kv(case.input_ids.len() + STEPS, 512, e.kv_type());
    let run = run_cached(lm, &e, &mut s, &case.input_ids, &case.generated[..STEPS]);
    let errs = recorded_errors(model, "p1", &run, lm.model.config.n_vocab);
    let worst = errs.iter().map(|e| e.1).fold(0.0f64, |a, b| if b.is_nan() { f64::INFINITY } else { a.max(b) });
    (worst, errs.iter().all(|e| e.2))
}

fn check(model: &str, file: &str) {
    let lm = load(file);
    let (clean, top1) = worst_error(&lm, model, Mask::Right);
    assert!(clean <= TOL && top1, "{model}: the clean engine should pass ({clean:.2e})");
    let mut faults: Vec<(&str, tern::Loaded, Mask)> = vec![
        ("causal mask inverted", load(file), Mask::Inverted),
        ("cache frontier off by one", load(file), Mask::FrontierOffByOne),
    ];
    let mut rope = load(file);
    let c = &mut rope.model.config;
    c.rope_style = if c.rope_style == RopeStyle::Neox { RopeStyle::Adjacent } else { RopeStyle::Neox };
    faults.push(("RoPE pairing swapped", rope, Mask::Right));
    let mut kv = load(file);
    for l in &mut kv.model.weights.layers {
        std::mem::swap(&mut l.wk, &mut l.wv);
        std::mem::swap(&mut l.bk, &mut l.bv);
    }
    faults.push(("K/V projections swapped", kv, Mask::Right));
    for (name, lm, mask) in faults {
        let (err, _) = worst_error(&lm, model, mask);
        println!("{model}: {name}: worst max|Δ|/max|logit| {err:.3e} (clean {clean:.1e})");
        assert!(err > 100.0 * TOL, "{model}: {name} went unnoticed ({err:.2e})");
    }
}

#[test]
fn faults_break_parity_qwen() {
    check(MODELS[0].0, MODELS[0].1);
}

#[test]
fn faults_break_parity_smollm2() {
    check(MODELS[1].0, MODELS[1].1);
}
