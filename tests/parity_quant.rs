//! The default quantized path (activations in 8-bit blocks, integer block
//! dots) against the HF oracle and llama.cpp:
//! - top-1 equal to the oracle's wherever its top-1/top-2 margin exceeds 0.5;
//! - 32 greedy tokens equal to llama.cpp's (EOG tokens banned, as llama.cpp's
//!   `ignore_eos` does); a divergence is accepted only where named below, and
//!   only at a recorded near-tie: llama.cpp's top-2 probabilities within 0.02,
//!   or a small-margin step of the fp32 oracle itself (margin under 0.5, where
//!   8-bit activations legitimately flip the choice — the oracle README's
//!   rule): tern picks the oracle's own greedy token there, or the oracle's
//!   top-2 are exactly tern's and llama.cpp's tokens;
//! - cached decode bit-identical to a full-prefix recompute.

use tern_core::SamplerConfig;
use tern_core::{GenerateConfig, Generator};
use tern_tests::*;

const STEPS: usize = 4;
const MARGIN: f64 = 0.5;
const NEAR_TIE: f64 = 0.02;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Why {
    /// llama.cpp's own top-2 probabilities are within `NEAR_TIE`.
    LlamaCppNearTie,
    /// tern picks what the fp32 oracle picks, at a small oracle margin.
    OracleAgrees,
    /// The oracle's top-2 are tern's and llama.cpp's tokens, at a small
    /// margin (checked on the oracle's full logits of that step; past the
    /// recorded steps, on the exact path's — see `oracle_step`).
    OracleTop2,
}

/// (model, prompt, index of the first token that differs from llama.cpp, why).
const ACCEPTED_DIVERGENCES: &[(&str, &str, usize, Why)] = &[
    // llama.cpp top-2 p 0.1691 / 0.1657
    ("qwen2.5-coder-0.5b", "p3", 6, Why::LlamaCppNearTie),
    // llama.cpp top-2 p 0.0399 / 0.0236; the fp32 oracle picks tern's 2988
    // (margin 0.220) — since attention's online softmax (tiles of 32)
    ("smollm2-135m", "p1", 5, Why::OracleAgrees),
    // llama.cpp top-2 p 0.3327 / 0.3098; the fp32 oracle picks tern's 304
    // (margin 0.139)
    ("smollm2-135m", "p2", 13, Why::OracleAgrees),
    // llama.cpp top-2 p 0.3042 / 0.2739; the fp32 oracle's top-2 are
    // llama.cpp's 3426 and tern's 5065, margin 0.135 — since attention's
    // online softmax (before it, tern followed llama.cpp to token 10, a
    // gap of 0.130 nats where llama.cpp's own builds flip)
    ("smollm2-135m", "p3", 4, Why::OracleTop2),
    // llama.cpp top-2 p 0.2792 / 0.2359; the oracle's top-2 are 28 / 1270,
    // margin 0.154 (with an f32 cache tern agreed here)
    ("smollm2-135m", "p4", 8, Why::OracleTop2),
];

fn check_oracle(model: &str, lm: &tern::Loaded) {
    let e = tern::engine(threads(), false).unwrap();
    let nv = lm.model.config.n_vocab;
    let (mut checked, mut worst_full, mut worst_top) = (0usize, 0.0f64, 0.0f64);
    for p in PROMPTS {
        let case = prompt_case(model, p);
        let n = case.input_ids.len();
        let mut s = lm.model.session(n + STEPS, 512);
        let run = run_cached(lm, &e, &mut s, &case.input_ids, &case.generated[..STEPS]);

        let topk = read_json(&format!("topk/{model}/{p}.json"));
        for pos in topk["positions"].as_array().unwrap() {
            let i = pos["pos"].as_u64().unwrap() as usize;
            let row = &run.prompt_rows[i * nv..(i + 1) * nv];
            let tl = pos["topk_logits"].as_array().unwrap();
            let top = ids(&pos["topk_ids"]);
            for (id, l) in top.iter().zip(tl) {
                worst_top = worst_top.max((row[*id as usize] as f64 - l.as_f64().unwrap()).abs());
            }
            if tl[0].as_f64().unwrap() - tl[1].as_f64().unwrap() > MARGIN {
                assert_eq!(argmax(row), top[0], "{model} {p} pos {i}: top-1 differs at margin > {MARGIN}");
                checked += 1;
            }
        }
        let mut rows = vec![("last".to_string(), &run.prompt_rows[(n - 1) * nv..], case.margins[0])];
        for (k, r) in run.steps.iter().enumerate() {
            rows.push((format!("gen{}", k + 1), &r[..], case.margins[k + 1]));
        }
        for (kind, got, margin) in rows {
            let want = oracle_logits(model, p, &kind);
            worst_full = worst_full.max(max_abs_diff(got, &want));
            if margin > MARGIN {
                assert_eq!(argmax(got), argmax(&want), "{model} {p} {kind}: top-1 differs at margin {margin}");
                checked += 1;
            }
        }

        let mut seq = case.input_ids.clone();
        seq.extend_from_slice(&case.generated[..STEPS]);
        let full = run_full(lm, &e, &seq);
        assert!(bits_equal(&run.prompt_rows, &full[..n * nv]), "{model} {p}: prompt rows differ from recompute");
        for (k, r) in run.steps.iter().enumerate() {
            assert!(
                bits_equal(r, &full[(n + k) * nv..(n + k + 1) * nv]),
                "{model} {p}: cached step {} != recompute",
                k + 1
            );
        }
    }
    println!(
        "{model}: quantized path: top-1 equal at {checked} positions with margin > {MARGIN}; \
         worst |Δ| full-vocab rows {worst_full:.4}, top-20 logits {worst_top:.4}"
    );
}

fn check_llamacpp(model: &str, lm: &tern::Loaded) {
    let e = tern::engine(threads(), false).unwrap();
    let greedy = read_json("llamacpp_greedy.json");
    for p in PROMPTS {
        let rec = &greedy[model][p];
        let prompt = ids(&rec["prompt_ids"]);
        let want = ids(&rec["generated_ids"]);
        let mut s = lm.model.session(prompt.len() + want.len(), 512);
        let ban = lm.tokenizer().unwrap().eog.iter().map(|&t| (t, f32::NEG_INFINITY)).collect();
        let cfg = GenerateConfig {
            max_tokens: want.len(),
            sampler: SamplerConfig { logit_bias: ban, ..SamplerConfig::greedy() },
            ignore_eos: true,
            ..Default::default()
        };
        let got =
            Generator::new(&lm.model, e, lm.tokenizer().unwrap(), &mut s, &prompt, cfg).run(|_, _| {}).unwrap().tokens;
        let first_diff = got.iter().zip(&want).position(|(a, b)| a != b);
        let accepted = ACCEPTED_DIVERGENCES.iter().find(|a| a.0 == model && a.1 == p).map(|a| (a.2, a.3));
        match first_diff {
            None => {
                assert!(accepted.is_none(), "{model} {p}: listed divergence did not happen");
                println!("{model} {p}: 32/32 greedy tokens equal llama.cpp's");
            }
            Some(i) => {
                let top2 = &rec["top2"][i];
                let (p1, p2) = (top2[0][0].as_f64().unwrap(), top2[1][0].as_f64().unwrap());
                println!(
                    "{model} {p}: first divergence at token {i}: tern {} vs llama.cpp {}; llama.cpp top-2 p {p1:.4} / {p2:.4}",
                    got[i], want[i]
                );
                assert!(
                    [top2[0][1].as_u64(), top2[1][1].as_u64()].contains(&Some(got[i] as u64)),
                    "{model} {p}: token {} at {i} is not one of llama.cpp's top-2",
                    got[i]
                );
                let why = match accepted {
                    Some((at, why)) if at == i => why,
                    _ => panic!("{model} {p}: divergence at {i} is not in ACCEPTED_DIVERGENCES"),
                };
                match why {
                    Why::LlamaCppNearTie => {
                        assert!((p1 - p2).abs() <= NEAR_TIE, "{model} {p}: divergence at {i} is not a near-tie")
                    }
                    Why::OracleAgrees => {
                        let case = prompt_case(model, p);
                        assert_eq!(case.input_ids, prompt, "{model} {p}: oracle prompt differs");
                        assert_eq!(got[..=i], case.generated[..=i], "{model} {p}: tern differs from the fp32 oracle");
                        assert!(case.margins[i] < MARGIN, "{model} {p}: oracle margin {} at {i}", case.margins[i]);
                    }
                    Why::OracleTop2 => {
                        let case = prompt_case(model, p);
                        assert_eq!(case.input_ids, prompt, "{model} {p}: oracle prompt differs");
                        assert_eq!(got[..i], case.generated[..i], "{model} {p}: prefix differs from the fp32 oracle");
                        let o = oracle_step(model, lm, &case, i);
                        let mut order: Vec<u32> = (0..o.len() as u32).collect();
                        order.sort_by(|&a, &b| o[b as usize].total_cmp(&o[a as usize]));
                        let mut top2 = [order[0], order[1]];
                        top2.sort();
                        let mut pair = [got[i], want[i]];
                        pair.sort();
                        assert_eq!(top2, pair, "{model} {p}: oracle top-2 at {i}");
                        let margin = (o[order[0] as usize] - o[order[1] as usize]) as f64;
                        assert!(margin < MARGIN, "{model} {p}: oracle margin {margin} at {i}");
                    }
                }
            }
        }
    }
}

/// The oracle's logits at generated step `i` of its own greedy run: the
/// recorded file for steps 0–4; beyond, tern's exact path on the oracle's
/// prefix (parity_exact holds it to 1e-3 · max|logit| of the oracle; here it
/// must also reproduce the oracle's recorded choice and top-1/top-2 margin).
fn oracle_step(model: &str, lm: &tern::Loaded, case: &PromptCase, i: usize) -> Vec<f32> {
    if i <= STEPS {
        return oracle_logits(model, case.name, &if i == 0 { "last".to_string() } else { format!("gen{i}") });
    }
    let e = tern::engine(threads(), true).unwrap();
    let seq: Vec<u32> = case.input_ids.iter().chain(&case.generated[..i]).copied().collect();
    let mut s = lm.model.session_kv(seq.len(), 512, e.kv_type());
    let o = s.forward(&lm.model, &e, &seq, tern_core::Logits::Last).unwrap().to_vec();
    let mut order: Vec<usize> = (0..o.len()).collect();
    order.sort_by(|&a, &b| o[b].total_cmp(&o[a]));
    assert_eq!(
        order[0] as u32, case.generated[i],
        "{model} {}: exact path's choice at {i} is not the oracle's",
        case.name
    );
    let margin = (o[order[0]] - o[order[1]]) as f64;
    assert!(
        (margin - case.margins[i]).abs() < 1e-2,
        "{model} {}: exact margin {margin} vs oracle's {}",
        case.name,
        case.margins[i]
    );
    o
}

#[test]
fn quantized_qwen() {
    let lm = load(MODELS[0].1);
    check_llamacpp(MODELS[0].0, &lm);
    check_oracle(MODELS[0].0, &lm);
}

#[test]
fn quantized_smollm2() {
    let lm = load(MODELS[1].1);
    check_llamacpp(MODELS[1].0, &lm);
    check_oracle(MODELS[1].0, &lm);
}
