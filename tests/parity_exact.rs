//! The exact path (f32 activations, weights dequantized on the fly) against
//! the HF transformers oracle, on both models and every fixture prompt:
//! full-vocabulary logits at every recorded position within 1e-3 relative,
//! top-1 identical; top-20 and logsumexp at every prompt position; and the
//! cached decode bit-identical to a full-prefix recompute.

use tern_tests::*;

const TOL: f64 = 1e-3;
const STEPS: usize = 4;

fn check_model(model: &str, file: &str) {
    let lm = load(file);
    let e = tern::engine(threads(), true).unwrap();
    let nv = lm.model.config.n_vocab;
    let mut worst = (0.0f64, "");
    for p in PROMPTS {
        let case = prompt_case(model, p);
        let n = case.input_ids.len();
        let mut s = lm.model.session_kv(n + STEPS, 512, e.kv_type());
        let run = run_cached(&lm, &e, &mut s, &case.input_ids, &case.generated[..STEPS]);

        // full vocabulary at the recorded positions: last prompt row, steps 1..4
        for (kind, err, same_top1) in recorded_errors(model, p, &run, nv) {
            assert!(err <= TOL, "{model} {p} {kind}: max|Δ|/max|logit| = {err:.2e} > {TOL:e}");
            assert!(same_top1, "{model} {p} {kind}: top-1 differs");
            if err > worst.0 {
                worst = (err, p);
            }
        }

        // every prompt position: the oracle's top-20 logits, logsumexp and top-1
        let topk = read_json(&format!("topk/{model}/{p}.json"));
        for pos in topk["positions"].as_array().unwrap() {
            let i = pos["pos"].as_u64().unwrap() as usize;
            let row = &run.prompt_rows[i * nv..(i + 1) * nv];
            let scale = row.iter().fold(0.0f64, |a, &b| a.max((b as f64).abs()));
            let top_ids = ids(&pos["topk_ids"]);
            for (id, l) in top_ids.iter().zip(pos["topk_logits"].as_array().unwrap()) {
                let d = (row[*id as usize] as f64 - l.as_f64().unwrap()).abs();
                assert!(d <= TOL * scale, "{model} {p} pos {i} id {id}: |Δ| {d:.2e}");
            }
            let lse = tern_core::runtime::nll(row, 0) + row[0] as f64;
            let want_lse = pos["logsumexp"].as_f64().unwrap();
            assert!((lse - want_lse).abs() <= TOL * scale, "{model} {p} pos {i}: logsumexp {lse} vs {want_lse}");
            assert_eq!(argmax(row), top_ids[0], "{model} {p} pos {i}: top-1 differs");
        }

        // cached decode == one forward over the whole prefix, bit for bit
        let mut seq = case.input_ids.clone();
        seq.extend_from_slice(&case.generated[..STEPS]);
        let full = run_full(&lm, &e, &seq);
        assert!(bits_equal(&run.prompt_rows, &full[..n * nv]), "{model} {p}: prompt rows differ from recompute");
        for (k, r) in run.steps.iter().enumerate() {
            let f = &full[(n + k) * nv..(n + k + 1) * nv];
            assert!(bits_equal(r, f), "{model} {p}: cached step {} differs from full recompute", k + 1);
        }
    }
    println!("{model}: exact path worst max|Δ|/max|logit| = {:.3e} (prompt {})", worst.0, worst.1);
}

#[test]
fn exact_matches_oracle_qwen() {
    check_model(MODELS[0].0, MODELS[0].1);
}

#[test]
fn exact_matches_oracle_smollm2() {
    check_model(MODELS[1].0, MODELS[1].1);
}
