//! Constrained decoding on the real models: JSON Schemas (every output
//! parses and validates, checked by the independent `jsonschema` crate),
//! regexes and GBNF grammars; bad grammars refused before any token; a
//! step with one allowed token takes no sampling draw; logprobs equal the
//! log-softmax of the logits.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;
use tern::{Event, Grammar, Options};
use tern_core::Error;
use tern_core::Message;
use tern_core::{generate_batch_constrained, BatchItem, FinishReason, GenerateConfig, Generator};
use tern_core::{runtime::Rng, SamplerConfig};
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

/// `def` of `doc`'s definitions, with every definition it refers to.
fn definition(doc: &Value, def: &str) -> Value {
    fn refs(v: &Value, defs: &Value, seen: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x.as_str().and_then(|r| r.strip_prefix("#/definitions/"))) {
                        ("$ref", Some(name)) if !seen.iter().any(|s| s == name) => {
                            seen.push(name.to_string());
                            refs(&defs[name], defs, seen);
                        }
                        _ => refs(x, defs, seen),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, defs, seen)),
            _ => {}
        }
    }
    let defs = &doc["definitions"];
    let mut schema = defs[def].clone();
    let mut seen = Vec::new();
    refs(&schema, defs, &mut seen);
    if !seen.is_empty() {
        schema["definitions"] = seen.iter().map(|n| (n.clone(), defs[n].clone())).collect();
    }
    schema
}

/// (name, prompt, schema): the real-world suite (tests/fixtures/schemas/suite.json,
/// files from scripts/fetch-schemas.sh) and the hand-written basic-*.json.
fn schemas() -> Vec<(String, String, Value)> {
    let dir = fixtures().join("schemas");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/schemas");
    let suite: Value = serde_json::from_slice(&std::fs::read(dir.join("suite.json")).unwrap()).unwrap();
    let mut out = Vec::new();
    for c in suite["cases"].as_array().unwrap() {
        let path = root.join(c["file"].as_str().unwrap());
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e}: run scripts/fetch-schemas.sh (scripts/test.sh does)", path.display()));
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        let schema = match c["definition"].as_str() {
            Some(d) => definition(&doc, d),
            None => doc,
        };
        out.push((c["name"].as_str().unwrap().to_string(), c["prompt"].as_str().unwrap().to_string(), schema));
    }
    let mut basic: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    basic.retain(|p| p.file_name().unwrap().to_string_lossy().starts_with("basic-"));
    basic.sort();
    for p in basic {
        let c: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        out.push((name, format!("{} Answer in JSON.", c["prompt"].as_str().unwrap()), c["schema"].clone()));
    }
    out
}

/// Every schema × both models at temperature 0.8 (a seed each), all of a
/// model's runs decoded as one batch: each output parses and
/// validates against its schema (the independent `jsonschema` crate), or
/// ends by length.
#[test]
fn schema_suite_outputs_parse_and_validate() {
    let cases = schemas();
    assert!(cases.len() >= 50 + 8, "{} schemas", cases.len());
    let checks: Vec<_> =
        cases.iter().map(|(n, _, s)| jsonschema::validator_for(s).unwrap_or_else(|e| panic!("{n}: {e}"))).collect();
    let grammars: Vec<Grammar> = cases.iter().map(|(_, _, s)| Grammar::JsonSchema(s.clone())).collect();
    for (seed, (model, file)) in (1..).zip(MODELS) {
        let lm = load(file);
        let tok = lm.tokenizer().unwrap();
        let compiler = lm.grammar().unwrap();
        let mut compile_ms: Vec<f64> = grammars
            .iter()
            .map(|g| {
                let t = Instant::now();
                compiler.compile(g).unwrap();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        compile_ms.sort_by(f64::total_cmp);
        let median = compile_ms[compile_ms.len() / 2];
        println!("{model}: schema compile median {median:.2} ms, max {:.2} ms", compile_ms[compile_ms.len() - 1]);
        assert!(median < 50.0, "the median schema compiles in {median} ms");
        let e = tern::engine(threads(), false).unwrap();
        let prompts: Vec<Vec<u32>> = cases
            .iter()
            .map(|(_, p, _)| lm.template().unwrap().encode(tok, &[Message::new("user", p)], true, false).unwrap())
            .collect();
        let t = Instant::now();
        let cfg = GenerateConfig {
            max_tokens: 96,
            sampler: SamplerConfig { temperature: 0.8, seed: Some(seed), ..Default::default() },
            ..Default::default()
        };
        let items: Vec<BatchItem> = prompts.iter().map(|p| BatchItem { prompt: p.clone(), cfg: cfg.clone() }).collect();
        let constraints = grammars.iter().map(|g| Some(compiler.compile(g).unwrap())).collect();
        let mut sessions: Vec<_> = items.iter().map(|it| lm.model.session(it.prompt.len() + 96, 64)).collect();
        let results =
            generate_batch_constrained(&lm.model, &e, tok, &mut sessions, &items, constraints, tern::clock).unwrap();
        let (mut valid, mut length) = (0, 0);
        for ((r, (name, _, _)), check) in results.iter().zip(&cases).zip(&checks) {
            if r.finish_reason == FinishReason::Length {
                length += 1;
                continue;
            }
            let v: Value = serde_json::from_str(&r.text)
                .unwrap_or_else(|e| panic!("{model} {name} seed {seed}: not JSON ({e}): {}", r.text));
            let errors: Vec<String> = check.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{model} {name} seed {seed}: {} fails its schema: {errors:?}", r.text);
            valid += 1;
        }
        println!(
            "{model} seed {seed}: {valid} valid, {length} at the 96-token limit, of {} ({:.1} s)",
            cases.len(),
            t.elapsed().as_secs_f64()
        );
        assert!(valid * 3 >= cases.len(), "a third of the outputs at least should complete");
    }
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
        assert_eq!(r.finish_reason, FinishReason::Stop);
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

/// `strict: false` ([`Grammar::lenient`]): the real schemas of
/// target/schemas that llguidance refuses strictly (uniqueItems, not,
/// if/then/else, unknown formats, ...) compile with those keywords ignored;
/// every finished output is still JSON, and how many also validate against
/// the whole schema is reported (the ignored keywords are not enforced).
#[test]
fn lenient_schemas_compile_what_strict_refuses_and_still_give_json() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/schemas");
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().path()) {
            match (e.is_dir(), e.extension().and_then(|x| x.to_str())) {
                (true, _) if !e.ends_with("dl") => stack.push(e),
                (false, Some("json")) if e.metadata().unwrap().len() < 256 << 10 => files.push(e),
                _ => {}
            }
        }
    }
    files.sort();
    let lm = load(MODELS[0].1);
    let (tok, compiler) = (lm.tokenizer().unwrap(), lm.grammar().unwrap());
    let mut refused = Vec::new();
    for f in &files {
        let Ok(schema) = serde_json::from_slice::<Value>(&std::fs::read(f).unwrap()) else { continue };
        let (Some(_), Ok(check)) = (schema.get("properties"), jsonschema::validator_for(&schema)) else { continue };
        if let Err(e) = compiler.compile(&Grammar::JsonSchema(schema.clone())) {
            refused.push((f.strip_prefix(&root).unwrap().display().to_string(), schema, check, e.to_string()));
        }
    }
    let mut lenient = Vec::new();
    for (name, schema, check, why) in refused.iter() {
        match compiler.compile(&Grammar::JsonSchema(schema.clone()).lenient()) {
            Ok(c) => lenient.push((name, c, check)),
            Err(e) => println!("{name}: refused strictly ({why}) and leniently ({e})"),
        }
    }
    println!("{} object schemas refused strictly, {} of them compile leniently", refused.len(), lenient.len());
    assert!(refused.len() >= 10 && lenient.len() * 2 >= refused.len(), "{} / {}", lenient.len(), refused.len());
    lenient.truncate(16);
    let e = tern::engine(threads(), false).unwrap();
    let prompt = |name: &str| {
        let p = format!("Write a short, realistic example of a {name} document as JSON.");
        lm.template().unwrap().encode(tok, &[Message::new("user", &p)], true, false).unwrap()
    };
    let cfg = GenerateConfig {
        max_tokens: 96,
        sampler: SamplerConfig { temperature: 0.8, seed: Some(1), ..Default::default() },
        ..Default::default()
    };
    let items: Vec<BatchItem> =
        lenient.iter().map(|(n, _, _)| BatchItem { prompt: prompt(n), cfg: cfg.clone() }).collect();
    let checks: Vec<_> = lenient.iter().map(|l| l.2).collect();
    let constraints = lenient.into_iter().map(|(_, c, _)| Some(c)).collect();
    let mut sessions: Vec<_> = items.iter().map(|it| lm.model.session(it.prompt.len() + 96, 64)).collect();
    let results =
        generate_batch_constrained(&lm.model, &e, tok, &mut sessions, &items, constraints, tern::clock).unwrap();
    let (mut json, mut valid, mut length) = (0, 0, 0);
    for (r, check) in results.iter().zip(checks) {
        if r.finish_reason == FinishReason::Length {
            length += 1;
            continue;
        }
        let v: Value = serde_json::from_str(&r.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.text));
        json += 1;
        valid += check.is_valid(&v) as usize;
    }
    println!(
        "lenient, {}: {json} finished as JSON ({valid} also valid against the whole schema), {length} at the limit",
        MODELS[0].0
    );
}

/// Grammars nested past `MAX_GRAMMAR_DEPTH` — a chain of `$ref`s, of Lark
/// or GBNF rules, groups in groups — are refused before llguidance sees
/// them (its compiler recurses once per level: a 1000-long chain
/// overflowed the stack of the server's thread and aborted the process);
/// the deepest accepted compile in 512 KiB of stack, a quarter of a tokio
/// thread's.
#[test]
fn grammars_nested_past_the_limit_are_refused_and_the_deepest_accepted_fit_a_small_stack() {
    use tern_core::MAX_GRAMMAR_DEPTH;
    let lm = std::sync::Arc::new(load(MODELS[1].1));
    let ref_chain = |n: usize| {
        let mut defs = serde_json::Map::new();
        for i in 0..n {
            defs.insert(format!("d{i}"), serde_json::json!({"$ref": format!("#/$defs/d{}", i + 1)}));
        }
        defs.insert(format!("d{n}"), serde_json::json!({"type": "integer"}));
        Grammar::JsonSchema(serde_json::json!({"$ref": "#/$defs/d0", "$defs": defs}))
    };
    let nested = |n: usize| {
        let mut v = serde_json::json!({"type": "integer"});
        for _ in 0..n {
            v = serde_json::json!({"type": "object", "properties": {"a": v}, "required": ["a"]});
        }
        Grammar::JsonSchema(v)
    };
    let gbnf_chain = |n: usize| {
        let mut g = String::from("root ::= r0\n");
        for i in 0..n {
            g += &format!("r{i} ::= \"x\" r{}\n", i + 1);
        }
        g += &format!("r{n} ::= \"y\"\n");
        Grammar::gbnf(&g).unwrap()
    };
    let groups = |n: usize| Grammar::Lark(format!("start: {}\"a\"{}\n", "(".repeat(n), ")".repeat(n)));
    let families: [(&str, &dyn Fn(usize) -> Grammar); 4] = [
        ("$ref chain", &ref_chain),
        ("nested objects", &nested),
        ("GBNF rule chain", &gbnf_chain),
        ("Lark groups", &groups),
    ];
    for (name, make) in families {
        for n in [MAX_GRAMMAR_DEPTH + 1, 1000] {
            let e = lm.grammar().unwrap().compile(&make(n)).err().unwrap_or_else(|| panic!("{name} {n}: accepted"));
            assert!(e.to_string().contains(&format!("deeper than {MAX_GRAMMAR_DEPTH}")), "{name} {n}: {e}");
        }
        // the longest accepted: compiled on a thread with a small stack
        let n = (1..=MAX_GRAMMAR_DEPTH)
            .rev()
            .find(|&n| !matches!(lm.grammar().unwrap().compile(&make(n)), Err(e) if e.to_string().contains("deeper than")))
            .unwrap();
        let g = make(n);
        let lm2 = lm.clone();
        let r = std::thread::Builder::new()
            .stack_size(512 << 10)
            .spawn(move || lm2.grammar().unwrap().compile(&g).map(drop))
            .unwrap()
            .join()
            .unwrap();
        println!("{name}: deepest accepted {n}: {:?}", r.as_ref().map_err(|e| e.to_string()));
        assert!(n >= MAX_GRAMMAR_DEPTH / 4, "{name}: only {n} levels accepted");
        // (llguidance refuses groups nested this deep with an error of its own)
        assert!(r.is_ok() || name == "Lark groups", "{name}: {r:?}");
    }
}

/// Limits llguidance meets only when a mask is computed are checked when
/// compiling, so a server answers 400 before any token: a rule of 3000
/// alternatives (its parser holds 2000 items in a row), and a schema
/// pattern whose regex is past its size limit (built only once the string
/// is reached), in a schema or in a Lark `%json` block. Each failed at the
/// first token or two before.
#[test]
fn grammar_limits_met_late_are_compile_errors() {
    let lm = load(MODELS[1].1);
    let alts: Vec<String> = (0..3000).map(|i| format!("\"w{i}\"")).collect();
    let cases = [
        (Grammar::Lark(format!("start: {}\n", alts.join(" | "))), "3000 alternatives"),
        (
            Grammar::json_schema(r#"{"type":"string","pattern":"^(.{0,1000}){0,1000}$"}"#).unwrap(),
            "past llguidance's limits",
        ),
        (
            Grammar::json_schema(r#"{"type":"object","patternProperties":{"(.{0,100}){0,100}":{"type":"integer"}}}"#)
                .unwrap(),
            "past llguidance's limits",
        ),
        (
            Grammar::Lark(
                "start: \"id=\" x\nx: %json {\"type\":\"string\",\"pattern\":\"^(.{0,1000}){0,1000}$\"}\n".into(),
            ),
            "past llguidance's limits",
        ),
    ];
    for (g, want) in cases {
        let e = lm.grammar().unwrap().compile(&g).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(want), "{g:?}: {e}");
    }
    // patterns within limits, anchored or not, still compile
    for p in [r#"^[a-z]{0,20}$"#, r#"(ab)+c?"#, r#"^\d{3}-\d{4}$"#] {
        let g = Grammar::JsonSchema(serde_json::json!({"type": "string", "pattern": p}));
        assert!(lm.grammar().unwrap().compile(&g).is_ok(), "{p}");
    }
}

/// A lazy grammar (tool calls with `tool_choice: auto`) leaves the output
/// free until a trigger shows, holds it from the trigger's first byte —
/// a trigger inside a token, or spelled over several, included — and
/// lets it go free again if what follows the trigger is not its grammar.
#[test]
fn a_lazy_grammar_engages_at_its_trigger() {
    use tern_core::runtime::{allows as mask_allows, Allowed, Trigger};
    use tern_core::Constraint;
    let lm = load(MODELS[0].1);
    let tok = lm.tokenizer().unwrap();
    let g = Grammar::regex(r#"<tool_call>\n\{"a": [0-9]\}\n</tool_call>"#).unwrap();
    let lazy = || lm.grammar().unwrap().compile_lazy(&g, vec![Trigger::Word("<tool_call>".into())], None).unwrap();
    let feed = |c: &mut Box<dyn Constraint>, text: &str| {
        for id in tok.encode(text, false).unwrap() {
            c.accept(id).unwrap();
        }
    };
    let allows = |c: &mut Box<dyn Constraint>, text: &str| {
        let ids = tok.encode(text, false).unwrap();
        match c.allowed().unwrap() {
            Allowed::Any => true,
            Allowed::Only(id) => ids[0] == id,
            Allowed::Mask(m) => mask_allows(m, ids[0] as usize),
            Allowed::End(_) => false,
        }
    };
    // free text, then the trigger (one token in Qwen's vocabulary)
    let mut c = lazy();
    feed(&mut c, "Let me look that up. ");
    assert!(matches!(c.allowed().unwrap(), Allowed::Any));
    feed(&mut c, "<tool_call>");
    assert!(allows(&mut c, "\n") && !allows(&mut c, "Hello"), "held from the trigger on");
    feed(&mut c, "\n{\"a\": 7}\n</tool_call>");
    assert!(matches!(c.allowed().unwrap(), Allowed::End(_)), "the grammar is done: the reply ends");
    // the trigger spelled over several tokens, the first with text before it
    let mut c = lazy();
    for piece in ["x<", "tool", "_call", ">"] {
        feed(&mut c, piece);
    }
    assert!(allows(&mut c, "\n") && !allows(&mut c, "Hello"), "engaged mid-token");
    // a call mused about in a thinking block is not a call; one after it is
    let think = tern_core::runtime::Thinking { open: "<think>".into(), close: "</think>".into(), inside: false };
    let g = Grammar::regex(r#"<tool_call>\n\{"a": [0-9]\}\n</tool_call>"#).unwrap();
    let mut c = lm.grammar().unwrap().compile_lazy(&g, vec![Trigger::Word("<tool_call>".into())], Some(think)).unwrap();
    feed(&mut c, "<think>\nI could write <tool_call>");
    assert!(matches!(c.allowed().unwrap(), Allowed::Any), "not engaged in thinking");
    feed(&mut c, " here.\n</think>\n\n<tool_call>");
    assert!(allows(&mut c, "\n") && !allows(&mut c, "Hello"), "engaged after it");
    // what the trigger's token holds past it is not the grammar's: the
    // output stays free (a reply that only looked like a call is text)
    let g = Grammar::regex(r#"\{"a": [0-9]\}"#).unwrap();
    let mut c = lm.grammar().unwrap().compile_lazy(&g, vec![Trigger::Start("{".into())], None).unwrap();
    let brace_newline = tok.encode("{\n", false).unwrap();
    assert_eq!(brace_newline.len(), 1, "one token in Qwen's vocabulary");
    feed(&mut c, "  ");
    assert!(matches!(c.allowed().unwrap(), Allowed::Any));
    c.accept(brace_newline[0]).unwrap();
    assert!(matches!(c.allowed().unwrap(), Allowed::Any), "free, not an error");
}
