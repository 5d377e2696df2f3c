//! Constrained decoding on the real models: JSON Schemas (every output
//! parses and validates, checked by the independent `jsonschema` crate),
//! regexes and GBNF grammars; bad grammars refused before any token; a
//! step with one allowed token takes no sampling draw; logprobs equal the
//! log-softmax of the logits.

use std::time::Instant;

use serde_json::Value;
use tern::{Event, Grammar, Options};
use tern_core::generate::{GenerateConfig, Generator};
use tern_core::sampler::{Rng, SamplerConfig};
use tern_core::Error;
use tern_tests::*;

fn facade(file: &str) -> tern::Model {
    tern::Model::load(model_path(file)).unwrap()
}

/// A chat reply to `prompt` under `o`.
fn reply(m: &tern::Model, prompt: &str, o: Options) -> tern::Result<tern::GenerationResult> {
    let mut chat = m.chat(None)?;
    chat.options(o);
    for ev in chat.send(prompt)? {
        if let Event::Done(r) = ev? {
            return Ok(r);
        }
    }
    unreachable!("a reply ends with Done")
}

fn schemas() -> Vec<(String, Value)> {
    let dir = fixtures().join("schemas");
    let mut v: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v.iter()
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn schema_outputs_parse_and_validate() {
    let (mut valid, mut length) = (0, 0);
    for (model, file) in MODELS {
        let m = facade(file);
        for (name, case) in schemas() {
            let schema = &case["schema"];
            let check = jsonschema::validator_for(schema).unwrap();
            let g = Grammar::json_schema(&schema.to_string()).unwrap();
            for seed in [1, 2] {
                let o = Options::default().temperature(0.8).seed(seed).max_tokens(120).grammar(g.clone());
                let prompt = format!("{} Answer in JSON.", case["prompt"].as_str().unwrap());
                let r = reply(&m, &prompt, o).unwrap();
                if r.finish_reason == tern_core::generate::FinishReason::Length {
                    length += 1;
                    continue;
                }
                let v: Value = serde_json::from_str(&r.text)
                    .unwrap_or_else(|e| panic!("{model} {name} seed {seed}: not JSON ({e}): {}", r.text));
                let errors: Vec<String> = check.iter_errors(&v).map(|e| e.to_string()).collect();
                assert!(errors.is_empty(), "{model} {name} seed {seed}: {} fails its schema: {errors:?}", r.text);
                valid += 1;
            }
        }
    }
    println!("{valid} outputs valid, {length} ended by length");
    assert!(valid >= length * 4, "most outputs should complete: {valid} valid, {length} at the length limit");
}

#[test]
fn regex_and_gbnf_outputs_match() {
    let m = facade(MODELS[0].1);
    let date = regex::Regex::new(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$").unwrap();
    for seed in 1..=3 {
        let o = Options::default().temperature(0.8).seed(seed).max_tokens(20);
        let r = reply(
            &m,
            "When did the Berlin wall fall?",
            o.clone().grammar(Grammar::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}").unwrap()),
        )
        .unwrap();
        assert!(date.is_match(&r.text), "{:?}", r.text);
        let gbnf = "root ::= answer \".\"\nanswer ::= \"yes\" | \"no\"  # one word\n";
        let r = reply(&m, "Is the sky blue?", o.grammar(Grammar::gbnf_or_lark(gbnf).unwrap())).unwrap();
        assert!(r.text == "yes." || r.text == "no.", "{:?}", r.text);
        assert_eq!(r.finish_reason, tern_core::generate::FinishReason::Stop);
    }
}

#[test]
fn bad_grammars_are_refused_before_any_token() {
    let m = facade(MODELS[1].1);
    let refused = |g: tern_core::Result<Grammar>| -> String {
        let g = match g {
            Err(e) => return e.to_string(),
            Ok(g) => g,
        };
        match reply(&m, "hi", Options::greedy().max_tokens(4).grammar(g)) {
            Err(tern::Error::Core(e @ Error::Grammar { .. })) => e.to_string(),
            other => panic!("not refused: {other:?}"),
        }
    };
    let cases: [(tern_core::Result<Grammar>, &str); 6] = [
        (Grammar::json_schema("{\"type\": "), "not JSON"),
        (Grammar::json_schema(r#"{"type": "strnig"}"#), "strnig"),
        (Grammar::json_schema(r#"{"type": "object", "if": {"required": ["a"]}}"#), "if"),
        (Grammar::regex("[a-"), "unclosed"),
        (Grammar::gbnf_or_lark("root ::= \"a\" | ("), "GBNF line 1"),
        (Grammar::gbnf_or_lark("root ::= other"), "other"),
    ];
    for (g, want) in cases {
        let e = refused(g);
        assert!(e.contains(want), "{e:?} should name {want:?}");
    }
    assert!(refused(Grammar::regex(&"a".repeat(2 << 20))).contains("more than"));
    // inputs whose automata or grammars would be exponential or huge if
    // built eagerly: llguidance builds lexer states lazily under fuel and
    // size limits, so each runs (or is refused naming a limit) in bounded
    // time
    let big_enum: Vec<String> = (0..50_000).map(|i| format!("item{i:06}-xxxxx")).collect();
    let hard = [
        Grammar::regex("(a|b)*a(a|b){60}").unwrap(),
        Grammar::regex("([a-z]{1,1000}[0-9]{1,1000}){1,1000}").unwrap(),
        Grammar::json_schema(r#"{"type": "string", "pattern": "^((((a{1,50}){1,50}){1,50}){1,50})$"}"#).unwrap(),
        Grammar::json_schema(r#"{"type": "array", "items": {"type": "integer"}, "minItems": 1000000}"#).unwrap(),
        Grammar::json_schema(&serde_json::json!({ "enum": big_enum }).to_string()).unwrap(),
    ];
    for g in hard {
        let t = Instant::now();
        let r = reply(&m, "hi", Options::greedy().max_tokens(3).grammar(g));
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match r {
            Ok(r) => println!("ran: {:?} in {ms:.0} ms", r.text),
            Err(e) => println!("refused: {e} in {ms:.0} ms"),
        }
        assert!(ms < 10_000.0, "{ms} ms");
    }
}

#[test]
fn one_allowed_token_takes_no_draw_and_logprobs_are_the_log_softmax() {
    let lm = load(MODELS[0].1);
    let tok = lm.tokenizer().unwrap();
    let e = tern::engine(threads(), false).unwrap();
    let prompt = tok.encode("The answer is", true).unwrap();
    // "7" is one token; then the grammar is done and EOS is forced: no draw
    let cfg = GenerateConfig {
        max_tokens: 8,
        sampler: SamplerConfig { temperature: 0.8, seed: Some(9), ..Default::default() },
        ..Default::default()
    };
    let c = lm.grammar().unwrap().compile(&Grammar::regex("7").unwrap()).unwrap();
    let mut s = lm.model.session(64, 64);
    let r = Generator::new(&lm.model, e, tok, &mut s, &prompt, cfg).with_constraint(c).run(|_, _| {}).unwrap();
    assert_eq!(r.text, "7");
    assert_eq!(s.rng.state(), Rng::new(9).state(), "a forced token drew from the RNG");

    // logprobs: the log-softmax of the model's logits, recomputed here in f64
    let cfg =
        GenerateConfig { max_tokens: 6, sampler: SamplerConfig::greedy(), logprobs: Some(3), ..Default::default() };
    let mut s = lm.model.session(64, 64);
    let mut g = Generator::new(&lm.model, e, tok, &mut s, &prompt, cfg);
    let mut n = 0;
    while let Some(ev) = g.next() {
        let Event::Token { id, logprob: Some(lp), .. } = ev.unwrap() else { continue };
        let l = g.last_logits();
        let m = l.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let z = m + l.iter().map(|&x| (x as f64 - m).exp()).sum::<f64>().ln();
        assert_eq!(lp.id, id);
        assert!((lp.logprob as f64 - (l[id as usize] as f64 - z)).abs() < 1e-5);
        assert_eq!(lp.top.len(), 3);
        assert_eq!(lp.top[0].0, id, "greedy takes the most likely token");
        for &(t, p) in &lp.top {
            assert!((p as f64 - (l[t as usize] as f64 - z)).abs() < 1e-5);
        }
        n += 1;
    }
    assert_eq!(n, 6);
}
