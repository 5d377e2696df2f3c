//! `tern::Model`, the front door, on SmolLM2: generate, stream (with its
//! cancel flag), chat across turns; shareable across threads.

mod common;

use std::sync::atomic::Ordering;

use tern::{Event, Model, Options};

fn smollm2() -> Model {
    let p = common::smollm2();
    assert!(p.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", p.display());
    Model::load(p).unwrap()
}

#[test]
fn generate_stream_and_chat() {
    fn shareable<T: Send + Sync>(_: &T) {}
    let model = smollm2();
    shareable(&model);
    // greedy: llama.cpp's (and the oracle's) tokens for this prompt
    let out = model.generate("The capital of France is", &Options::greedy().max_tokens(4)).unwrap();
    assert_eq!(out.text, " Paris.\n\n");
    assert!(out.timings.tokens_per_s > 0.0, "timings are measured");

    let mut stream = model.stream("Once upon a time", &Options::greedy().max_tokens(50)).unwrap();
    let cancel = stream.cancel_flag();
    let mut tokens = 0;
    let done = loop {
        match stream.next().unwrap().unwrap() {
            Event::Token { .. } => {
                tokens += 1;
                if tokens == 3 {
                    cancel.store(true, Ordering::Relaxed);
                }
            }
            Event::Done(r) => break r,
        }
    };
    assert_eq!((tokens, done.finish_reason.as_str()), (3, "cancelled"));
    assert!(stream.next().is_none());

    let mut chat = model.chat(Some("You are terse.")).unwrap();
    chat.options(Options::greedy().max_tokens(8));
    let first: Vec<Event> = chat.send("What is the capital of France?").unwrap().map(Result::unwrap).collect();
    assert!(matches!(first.last(), Some(Event::Done(_))));
    let second = chat.send("And of Spain?").unwrap().last().unwrap().unwrap();
    let Event::Done(r) = second else { panic!("no Done") };
    assert!(r.usage.cached_tokens > 20, "the second turn reused the cache: {:?}", r.usage);
    assert_eq!(chat.messages().len(), 5, "system, two user turns, two replies");
}

/// Every example runs to success on the small model (cargo test builds
/// them beside the tests).
#[test]
fn examples_run() {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().join("examples");
    let model = common::smollm2();
    for (name, extra) in [("generate", &[][..]), ("stream", &[][..]), ("chat", &[][..]), ("batch", &["1", "2"][..])] {
        let out = std::process::Command::new(dir.join(name)).arg(&model).args(extra).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
        assert!(!stdout.trim().is_empty(), "{name} printed nothing");
    }
    // without a model the examples say how to run them
    let out = std::process::Command::new(dir.join("generate")).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("usage: generate MODEL.gguf"));
}

/// A batch gives each prompt what it gets alone.
#[test]
fn batch_equals_single_runs() {
    let model = smollm2();
    let o = Options::greedy().max_tokens(12);
    let prompts = ["The capital of France is", "Here is a list of fruits:\n1."];
    let jobs: Vec<(&str, Options)> = prompts.iter().map(|p| (*p, o.clone())).collect();
    let batch = model.generate_batch(&jobs).unwrap();
    for (p, b) in prompts.iter().zip(&batch) {
        assert_eq!(model.generate(p, &o).unwrap().tokens, b.tokens, "{p:?}");
    }
}

/// The crate README's program is `examples/generate.rs`, which
/// `examples_run` runs.
#[test]
fn readme_program_is_the_generate_example() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let readme = std::fs::read_to_string(format!("{dir}/README.md")).unwrap();
    let example = std::fs::read_to_string(format!("{dir}/examples/generate.rs")).unwrap();
    let code: String =
        example.lines().skip_while(|l| l.starts_with("//!") || l.is_empty()).map(|l| format!("{l}\n")).collect();
    assert!(readme.contains(&code), "README.md's program differs from examples/generate.rs");
}

/// `tern::Model`'s chat on a directory whose template thinks (SmolLM2's
/// HF directory with Qwen3's template, llama.cpp's copy): a reply held to
/// a thinking block and an answer splits as the server's does, and
/// `template_kwargs` reaches the template.
#[test]
fn chat_replies_say_where_they_think() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-models");
    let dir = std::env::temp_dir().join(format!("tern-facade-think-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::fs::read_dir(root.join("smollm2-hf-f32")).unwrap().flatten() {
        std::fs::copy(f.path(), dir.join(f.file_name())).unwrap();
    }
    std::fs::copy(root.join("templates/Qwen-Qwen3-0.6B.jinja"), dir.join("chat_template.jinja")).unwrap();
    let model = Model::load(&dir).unwrap();
    let shape = r#"root ::= "<think>\n" [a-z ]{3,24} "\n</think>\n\n" [A-Z] [a-z]{2,8} ".""#;
    let o = tern::Options::greedy().max_tokens(48).grammar(tern::Grammar::gbnf_or_lark(shape).unwrap());
    let mut chat = model.chat(None).unwrap();
    chat.options(o.clone());
    let reply = chat.send("What is two and two?").unwrap();
    let reasoning = reply.reasoning().expect("Qwen3's template thinks");
    let Some(Ok(tern::Event::Done(r))) = reply.last() else { panic!("no result") };
    let parts = reasoning.split(&r.text);
    assert!(
        !parts.reasoning.is_empty() && parts.content.ends_with('.') && !parts.content.contains("think"),
        "{parts:?}"
    );
    // enable_thinking false: the template's empty block, a longer prompt
    let mut k = tern::TemplateKwargs::new();
    k.insert("enable_thinking".into(), false.into());
    let mut off = model.chat(None).unwrap();
    off.options(tern::Options::greedy().max_tokens(1).template_kwargs(k));
    let Some(Ok(tern::Event::Done(o))) = off.send("What is two and two?").unwrap().last() else { panic!() };
    assert!(o.usage.prompt_tokens > r.usage.prompt_tokens);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn speculative_options_give_plain_greedy_output() {
    let prompt = "Repeat after me: the cat sat on the mat, the cat sat on the mat, the cat sat on the mat,";
    let greedy = Options::greedy().max_tokens(24);
    let plain = smollm2().generate(prompt, &greedy).unwrap();
    let spec = greedy.clone().speculative(tern::Speculative { n_max: Some(4), ..Default::default() });
    let ngram = smollm2().generate(prompt, &spec).unwrap();
    assert_eq!(ngram.tokens, plain.tokens);
    assert!(ngram.usage.draft_tokens > 0, "{:?}", ngram.usage);
    let drafted = smollm2().with_draft(common::smollm2()).unwrap().generate(prompt, &spec).unwrap();
    assert_eq!(drafted.tokens, plain.tokens);
    assert_eq!(drafted.usage.accepted_draft_tokens, drafted.usage.draft_tokens, "the model drafting for itself");
    let e = smollm2().with_draft(common::qwen()).err().unwrap();
    assert!(e.to_string().contains("differs from the target's at token"), "{e}");
}

/// LoRA through the front door: `Model::load_adapter` (default scale 0:
/// applied only when named), `Options::lora` on generate and on a chat's
/// turns; the tiny Qwen3 with a vocabulary and its fixture adapters.
#[test]
fn lora_options_reach_generate_and_chat() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let model = root.join("target/test-models/tiny-qwen3-yarn-vocab.gguf");
    assert!(model.exists(), "{} is missing: run scripts/make-test-models.sh", model.display());
    let a = root.join("tests/fixtures/lora/tiny-qwen3-yarn-a");
    let mut m = Model::load(&model).unwrap();
    assert_eq!(m.load_adapter(&a, 0.0).unwrap(), 0);
    let o = Options::greedy().max_tokens(12);
    let plain = m.generate("Hello world", &o).unwrap().tokens;
    let with_a = m.generate("Hello world", &o.clone().lora(0, 1.0)).unwrap().tokens;
    assert_ne!(plain, with_a);
    // the same adapter at default scale 1 on another model object: the same tokens unasked
    let mut d = Model::load(&model).unwrap();
    d.load_adapter(&a, 1.0).unwrap();
    assert_eq!(d.generate("Hello world", &o).unwrap().tokens, with_a);
    assert_eq!(d.generate("Hello world", &o.clone().lora(0, 0.0)).unwrap().tokens, plain);
    let e = m.generate("Hello world", &o.clone().lora(3, 1.0)).unwrap_err().to_string();
    assert!(e.contains("no adapter with id 3"), "{e}");
    let e = m.load_adapter(root.join("tests/fixtures/lora/tiny-mistral-a"), 1.0).unwrap_err().to_string();
    assert!(e.contains("tiny-mistral-a"), "{e}");
    // a chat: each turn with the adapter, or without it
    let reply = |o: Options| {
        let mut chat = m.chat(None).unwrap();
        chat.options(o);
        let mut ids = Vec::new();
        for ev in chat.send("Hi").unwrap() {
            if let Event::Token { id, .. } = ev.unwrap() {
                ids.push(id);
            }
        }
        ids
    };
    assert_ne!(reply(o.clone()), reply(o.clone().lora(0, 1.0)));
}
