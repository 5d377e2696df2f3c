//! A scripted multi-turn chat: the model's template, one live session, the
//! second turn prefilling only its new tokens; then save and restore.
//!
//!     cargo run --release -p tern-llm --example chat MODEL.gguf

use tern::{Event, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = tern::Model::load(std::env::args().nth(1).ok_or("usage: chat MODEL.gguf")?)?;
    let mut chat = model.chat(Some("You are a concise assistant."))?;
    chat.options(Options::greedy().max_tokens(60));
    for question in ["What is the largest planet?", "And the smallest?"] {
        println!("> {question}");
        for event in chat.send(question)? {
            match event? {
                Event::Token { text, .. } => print!("{text}"),
                Event::Done(r) => {
                    println!("\n  ({} prompt tokens, {} from the cache)", r.usage.prompt_tokens, r.usage.cached_tokens)
                }
            }
        }
    }
    let saved = chat.save();
    let mut again = model.chat(None)?;
    again.restore(&saved)?;
    println!(
        "restored {} messages, {} cached tokens ({} bytes)",
        again.messages().len(),
        again.n_cached(),
        saved.len()
    );
    Ok(())
}
