//! The parity checks can fail: each injected fault (RoPE pairing, causal
//! mask, cache frontier, Q/K wiring) pushes the exact path far outside the
//! oracle tolerance that the correct engine meets.

use tern_core::model::Faults;
use tern_tests::*;

const TOL: f64 = 1e-3;
const STEPS: usize = 4;

fn worst_error(lm: &tern::Loaded, model: &str, p: &'static str, f: Faults) -> (f64, bool) {
    let e = tern::engine(threads(), true);
    let case = prompt_case(model, p);
    let mut s = lm.model.session_kv(case.input_ids.len() + STEPS, 512, e.kv_type());
    s.set_faults(f);
    let run = run_cached(lm, &e, &mut s, &case.input_ids, &case.generated[..STEPS]);
    let errs = recorded_errors(model, p, &run, lm.model.config.n_vocab);
    let worst = errs.iter().map(|e| e.1).fold(0.0f64, |a, b| if b.is_nan() { f64::INFINITY } else { a.max(b) });
    (worst, errs.iter().all(|e| e.2))
}

fn check(model: &str, file: &str) {
    let lm = load(file);
    let (clean, top1) = worst_error(&lm, model, "p1", Faults::default());
    assert!(clean <= TOL && top1, "{model}: the clean engine should pass ({clean:.2e})");
    let faults = [
        ("RoPE pairing swapped", Faults { rope_pairing: true, ..Default::default() }),
        ("causal mask inverted", Faults { mask_inverted: true, ..Default::default() }),
        ("cache frontier off by one", Faults { frontier_off_by_one: true, ..Default::default() }),
        ("Q/K swapped", Faults { swap_qk: true, ..Default::default() }),
    ];
    for (name, f) in faults {
        let (err, _) = worst_error(&lm, model, "p1", f);
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
