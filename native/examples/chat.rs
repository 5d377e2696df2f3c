//! A scripted multi-turn chat: the model's template, one live session, the
//! second turn prefilling only its new tokens; then save and restore.
//!
//!     cargo run --release -p tern --example chat [MODEL.gguf]

use tern::{models, Threads};
use tern_core::conversation::Conversation;
use tern_core::generate::GenerateConfig;
use tern_core::sampler::SamplerConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = models::path_or(std::env::args().nth(1), models::SMOLLM2)?;
    let lm = tern::load(&path)?;
    let threads = Threads::new(0);
    let engine = tern::engine(&threads, false);
    let mut conv = Conversation::new(&lm.model, lm.tokenizer()?, 2048, Some("You are a concise assistant."))?;
    let cfg = || GenerateConfig { max_tokens: 60, sampler: SamplerConfig::greedy(), ..Default::default() };
    for question in ["What is the largest planet?", "And the smallest?"] {
        println!("> {question}");
        let r = conv.reply(&lm.model, engine, lm.tokenizer()?, question, cfg(), tern::clock, |_, t| print!("{t}"))?;
        println!("\n  ({} prompt tokens, {} from the cache)", r.usage.prompt_tokens, r.usage.cached_tokens);
    }
    let saved = conv.save(&lm.model);
    let mut again = Conversation::new(&lm.model, lm.tokenizer()?, 2048, None)?;
    again.load(&lm.model, &saved)?;
    println!(
        "restored {} messages, {} cached tokens ({} bytes)",
        again.messages.len(),
        again.session.n_past(),
        saved.len()
    );
    Ok(())
}
