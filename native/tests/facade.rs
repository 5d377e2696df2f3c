//! `tern::Model`, the front door, on SmolLM2: generate, stream (with its
//! cancel flag), chat across turns; shareable across threads.

use std::sync::atomic::Ordering;

use tern::{Event, Model, Options};

fn smollm2() -> Model {
    let p = tern::models::cache_dir().join(tern::models::SMOLLM2);
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
