//! The tokenizer built from each GGUF against HF's on all 195 oracle cases:
//! the same ids, and decoding gives back the recorded text. Also the
//! streaming detokenizer: token by token it yields the same text, never a
//! partial UTF-8 sequence.

use tern_core::runtime::Utf8Stream;
use tern_core::GenerationDefaults;
use tern_core::Tokenizer;
use tern_tests::*;

fn check(model: &str, tok: &Tokenizer) {
    let cases = read_json("tokenizer_cases.json");
    let cases = cases["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 195);
    let mut failures = Vec::new();
    for c in cases {
        let text = c["text"].as_str().unwrap();
        let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, c["utf8_hex"].as_str().unwrap(), "case {} text decoded wrongly from JSON", c["index"]);
        let want = &c["models"][model];
        let got = tok.encode(text, true).unwrap();
        if got != ids(&want["ids"]) {
            failures.push(format!("case {} {text:?}: ids {got:?} != {:?}", c["index"], ids(&want["ids"])));
            continue;
        }
        let decoded = tok.decode(&got);
        if decoded != want["decoded"].as_str().unwrap() {
            failures.push(format!("case {} {text:?}: decoded {decoded:?}", c["index"]));
        }
        let mut stream = Utf8Stream::new();
        let mut streamed = String::new();
        for &id in &got {
            streamed += &stream.push(tok.token_bytes(id));
        }
        streamed += &stream.finish();
        assert_eq!(streamed, decoded, "case {}: streamed text differs", c["index"]);
    }
    assert!(failures.is_empty(), "{model}: {} of 195 cases fail:\n{}", failures.len(), failures.join("\n"));
    println!("{model}: 195/195 tokenizer cases equal HF (ids and decoded text)");
}

/// The tokenizer of an HF directory: the oracle's tokenizer files.
fn from_hf_files(model: &str) -> Tokenizer {
    let dir = oracle_dir().join("hf").join(model);
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let gen = GenerationDefaults::parse(&read("generation_config.json")).unwrap();
    let template = String::from_utf8(read("chat_template.jinja")).unwrap();
    Tokenizer::from_hf(
        &read("tokenizer.json"),
        Some(&read("tokenizer_config.json")),
        Some(&template),
        &gen.eos_token_ids,
    )
    .unwrap()
}

#[test]
fn gguf_tokenizers_match_hf() {
    for (model, file) in MODELS {
        check(model, load(file).tokenizer().unwrap());
    }
}

#[test]
fn tokenizer_json_tokenizers_match_hf_and_the_gguf_ones() {
    for (model, file) in MODELS {
        let tok = from_hf_files(model);
        check(model, &tok);
        let lm = load(file);
        let g = lm.tokenizer().unwrap();
        assert_eq!(tok.n_vocab(), g.n_vocab(), "{model}");
        assert!((0..g.n_vocab() as u32).all(|i| tok.token_bytes(i) == g.token_bytes(i)), "{model}: token bytes");
        assert!((0..g.n_vocab() as u32).all(|i| tok.is_control(i) == g.is_control(i)), "{model}: special tokens");
        assert_eq!(tok.chat_template, g.chat_template, "{model}: chat template");
        assert_eq!(tok.add_bos, g.add_bos, "{model}");
        assert!(g.eog.iter().all(|id| tok.is_eog(*id)), "{model}: end ids {:?} vs {:?}", tok.eog, g.eog);
    }
}

/// Conversations with tools, tool calls and tool answers render as HF
/// transformers' `apply_chat_template` renders them with Qwen2.5's template
/// (oracle/chat_tools, made by make_chat_tools.py): tool definitions in
/// their own key order, arguments as JSON objects, non-ASCII unescaped.
#[test]
fn chat_with_tools_renders_as_hf() {
    let dir = oracle_dir().join("hf/qwen2.5-coder-0.5b");
    let src = std::fs::read_to_string(dir.join("chat_template.jinja")).unwrap();
    let t = tern_core::ChatTemplate::new(&src, "", "<|im_end|>").unwrap();
    let cases = read_json("chat_tools/chat_tools.json");
    let cases = cases["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for c in cases {
        let msgs = tern_core::runtime::messages_from_json(&c["messages"]).unwrap();
        let got = t.render(&msgs, true, Some(&c["tools"])).unwrap();
        assert_eq!(got, c["rendered"].as_str().unwrap(), "case {}", c["name"]);
    }
    // OpenAI's shape, arguments as a JSON string, renders the same
    let mut openai = cases[2]["messages"].clone();
    for call in openai[1]["tool_calls"].as_array_mut().unwrap() {
        let args = call["function"]["arguments"].to_string();
        call["function"]["arguments"] = args.into();
    }
    let msgs = tern_core::runtime::messages_from_json(&openai).unwrap();
    assert_eq!(t.render(&msgs, true, Some(&cases[2]["tools"])).unwrap(), cases[2]["rendered"].as_str().unwrap());
    println!("{} renderings with tools equal HF's apply_chat_template", cases.len());
}
