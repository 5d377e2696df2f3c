//! Core's one request (`tern_core::request`): its JSON form and the one
//! path (`Bundle::prepare`) every front end turns it into a generation
//! with — the context rule, the field each error names, the sampler over
//! the model's defaults, and the same tokens as the hand-built generation.

use serde_json::json;
use tern_core::Error;
use tern_core::Grammar;
use tern_core::Message;
use tern_core::SamplerConfig;
use tern_core::{GenerateConfig, Generator};
use tern_core::{Prompt, Request, Sampling, MAX_STOPS};
use tern_tests::*;

fn field_of(e: Error) -> String {
    match e {
        Error::InvalidField { field, .. } => field,
        e => panic!("not a field error: {e}"),
    }
}

#[test]
fn the_json_form_round_trips_and_its_errors_name_the_field() {
    let r = Request {
        sampling: Sampling {
            temperature: Some(0.5),
            seed: Some(7),
            logit_bias: vec![(3, -1.5)],
            ..Sampling::default()
        },
        max_tokens: Some(9),
        stop: vec!["\n\n".into()],
        grammar: Some(Grammar::JsonSchema(json!({"type": "object"}))),
        tools: Some(json!([{"type": "function", "function": {"name": "f"}}])),
        tool_choice: Some(json!("auto")),
        logprobs: Some(2),
        ..Request::new(Prompt::Messages(vec![Message::new("system", "S."), Message::new("user", "Hi")]))
    };
    let text = serde_json::to_string(&r).unwrap();
    assert_eq!(Request::from_json(text.as_bytes()).unwrap(), r, "{text}");
    // a prompt is text, ids or messages
    let ids = Request::from_json(br#"{"prompt": [1, 2, 3]}"#).unwrap();
    assert_eq!(ids.prompt, Prompt::Ids(vec![1, 2, 3]));
    let g = Request::from_json(br#"{"prompt": "x", "grammar": {"regex": "[a-z]+"}}"#).unwrap();
    assert_eq!(g.grammar, Some(Grammar::Regex("[a-z]+".into())));
    for (body, field) in [
        (r#"{"prompt": "x", "sampling": {"top_p": "high"}}"#, "sampling.top_p"),
        (r#"{"prompt": "x", "sampling": {"warmth": 1}}"#, "sampling.warmth"),
        (r#"{"prompt": "x", "max_tokens": -1}"#, "max_tokens"),
        (r#"{"prompt": "x", "stop": [1]}"#, "stop[0]"),
        (r#"{"prompt": "x", "grammar": {"yaml": "a"}}"#, "grammar"),
        (r#"{"prompt": {"text": "x"}}"#, "prompt"),
    ] {
        let e = Request::from_json(body.as_bytes()).unwrap_err();
        assert_eq!(field_of(e), field, "{body}");
    }
    assert!(Request::from_json(br#"{"max_tokens": 3}"#).is_err(), "a prompt is required");
    assert!(Request::from_json(br#"{"prompt": "x"} trailing"#).is_err());
}

#[test]
fn prepare_is_the_one_rule_for_context_fields_and_defaults() {
    let lm = load(MODELS[1].1);
    let tok = lm.tokenizer().unwrap();
    let text = "The capital of France is";
    let n = tok.encode(text, true).unwrap().len();
    let req = |max: Option<usize>| Request { max_tokens: max, ..Request::new(Prompt::Text(text.into())) };
    // prompt + max_tokens − 1 positions must fit: the last token is never fed back
    let p = lm.prepare(&req(Some(5)), Some(n + 4)).unwrap();
    assert_eq!((p.prompt.len(), p.cfg.max_tokens), (n, 5));
    let e = lm.prepare(&req(Some(6)), Some(n + 4)).err().unwrap();
    assert_eq!(e, Error::ContextFull { n_ctx: n + 4, needed: n + 5 });
    // no max_tokens: all the context has room for
    assert_eq!(lm.prepare(&req(None), Some(n + 4)).unwrap().cfg.max_tokens, 5);
    assert!(matches!(lm.prepare(&req(None), Some(n - 1)), Err(Error::ContextFull { .. })));
    assert_eq!(field_of(lm.prepare(&req(None), None).err().unwrap()), "max_tokens");
    // each refusal names its field
    let nv = lm.model.config.n_vocab as u32;
    let bad = [
        (Request { prompt: Prompt::Ids(vec![1, nv]), ..req(Some(2)) }, "prompt"),
        (Request { prompt: Prompt::Ids(vec![]), ..req(Some(2)) }, "prompt"),
        (Request { prompt: Prompt::Messages(vec![]), ..req(Some(2)) }, "messages"),
        (Request { stop_tokens: vec![nv], ..req(Some(2)) }, "stop_tokens"),
        (Request { stop: vec!["x".into(); MAX_STOPS + 1], ..req(Some(2)) }, "stop"),
        (Request { logprobs: Some(21), ..req(Some(2)) }, "logprobs"),
        (
            Request { sampling: Sampling { repeat_penalty: Some(0.0), ..Sampling::default() }, ..req(Some(2)) },
            "repeat_penalty",
        ),
        (
            Request { sampling: Sampling { temperature: Some(100.5), ..Sampling::default() }, ..req(Some(2)) },
            "temperature",
        ),
        (
            Request { sampling: Sampling { logit_bias: vec![(nv, 1.0)], ..Sampling::default() }, ..req(Some(2)) },
            "logit_bias",
        ),
        (Request { tool_choice: Some(json!("required")), ..req(Some(2)) }, "tool_choice"),
        (Request { tools: Some(json!("f")), ..req(Some(2)) }, "tools"),
    ];
    for (r, field) in bad {
        let e = lm.prepare(&r, Some(4096)).err().unwrap_or_else(|| panic!("{field}: accepted"));
        assert_eq!(field_of(e), field);
    }
    // the sampler: llama.cpp's defaults, the model's, then the request's
    let s = lm.prepare(&Request { sampling: Sampling { top_k: Some(7), ..Sampling::default() }, ..req(Some(2)) }, None);
    let s = s.unwrap().cfg.sampler;
    let mut want = SamplerConfig::default();
    lm.defaults.apply(&mut want);
    want.top_k = 7;
    assert_eq!(s, want);
    // ignore_eos bans the end tokens
    let p = lm.prepare(&Request { ignore_eos: true, ..req(Some(2)) }, None).unwrap();
    for t in lm.eog() {
        assert!(p.cfg.sampler.logit_bias.contains(&(t, f32::NEG_INFINITY)));
    }
    // messages render with the template, as the conversation does
    let msgs = vec![Message::new("user", "Hi")];
    let p = lm.prepare(&Request { prompt: Prompt::Messages(msgs.clone()), ..req(Some(2)) }, None).unwrap();
    assert_eq!(p.prompt, lm.template().unwrap().encode(tok, &msgs, true, false).unwrap());
}

#[test]
fn a_prepared_request_generates_what_the_hand_built_generation_does() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let ids = lm.tokenizer().unwrap().encode("Once upon a time", true).unwrap();
    let greedy = Sampling::all(&SamplerConfig::greedy());
    let r = Request { sampling: greedy, max_tokens: Some(12), ..Request::new(Prompt::Ids(ids.clone())) };
    let vocab = lm.vocab();
    let mut s = lm.model.session(64, 64);
    let got = Generator::over(&lm.model, e, &vocab, &mut s, lm.prepare(&r, Some(64)).unwrap().generation(tern::clock));
    let got = got.run(|_, _| {}).unwrap();
    let cfg = GenerateConfig { max_tokens: 12, sampler: SamplerConfig::greedy(), ..Default::default() };
    let mut s = lm.model.session(64, 64);
    let want = Generator::new(&lm.model, e, &vocab, &mut s, &ids, cfg).run(|_, _| {}).unwrap();
    assert_eq!(got.tokens, want.tokens);
    assert_eq!(got.tokens.len(), 12);
}
