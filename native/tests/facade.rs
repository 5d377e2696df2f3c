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
