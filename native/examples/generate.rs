//! One-shot generation: load a model, generate greedily, print the result.
//!
//!     cargo run --release -p tern --example generate [MODEL.gguf] [PROMPT]

use tern::{models, Threads};
use tern_core::generate::{GenerateConfig, Generator};
use tern_core::sampler::SamplerConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = models::path_or(args.next(), models::SMOLLM2)?;
    let prompt = args.next().unwrap_or_else(|| "The capital of France is".into());

    let lm = tern::load(&path)?;
    let threads = Threads::new(0);
    let engine = tern::engine(&threads, false);
    let ids = lm.tokenizer()?.encode(&prompt, true)?;
    let mut session = lm.model.session(ids.len() + 32, 512);
    let cfg = GenerateConfig { max_tokens: 32, sampler: SamplerConfig::greedy(), ..Default::default() };
    let r = Generator::new(&lm.model, engine, lm.tokenizer()?, &mut session, &ids, cfg)
        .with_clock(tern::clock)
        .run(|_, _| {})?;
    println!("{prompt}{}", r.text);
    eprintln!("{:?}, {} tokens, {:.1} tok/s", r.finish_reason, r.usage.completion_tokens, r.timings.tokens_per_s);
    Ok(())
}
