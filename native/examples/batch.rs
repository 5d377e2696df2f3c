//! Batched generation: N prompts decoded together, one forward per step,
//! each sequence with its own sampler; prints aggregate tokens/s for
//! N = 1, 4 and 8 (or the sizes given).
//!
//!     cargo run --release -p tern --example batch [MODEL.gguf] [N...]

use tern::{models, Threads};
use tern_core::generate::{generate_batch, BatchItem, GenerateConfig};
use tern_core::sampler::SamplerConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let path = match args.next_if(|a| a.parse::<usize>().is_err()) {
        Some(p) => p.into(),
        None => models::ensure(models::SMOLLM2)?,
    };
    let sizes: Vec<usize> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() { vec![1, 4, 8] } else { sizes };
    let lm = tern::load(&path)?;
    let threads = Threads::new(0);
    let engine = tern::engine(&threads, false);
    let topics = ["the sea", "a city", "winter", "a robot", "the moon", "coffee", "a library", "rain"];
    let mut base = 0.0;
    let tok = lm.tokenizer()?;
    for n in sizes {
        let items: Vec<BatchItem> = (0..n)
            .map(|i| BatchItem {
                prompt: tok.encode(&format!("A short poem about {}:", topics[i % topics.len()]), true).unwrap(),
                cfg: GenerateConfig {
                    max_tokens: 32,
                    sampler: SamplerConfig { temperature: 0.8, seed: Some(i as u64), ..Default::default() },
                    ignore_eos: true,
                    ..Default::default()
                },
            })
            .collect();
        let mut sessions: Vec<_> = items.iter().map(|_| lm.model.session(128, 64)).collect();
        let t0 = std::time::Instant::now();
        let results = generate_batch(&lm.model, &engine, tok, &mut sessions, &items, tern::clock)?;
        let decode_s: f64 =
            results.iter().map(|r| (r.timings.total_ms - r.timings.first_token_ms) / 1e3).fold(0.0, f64::max);
        let tokens: usize = results.iter().map(|r| r.tokens.len() - 1).sum();
        let tps = tokens as f64 / decode_s;
        if base == 0.0 {
            base = tps / n as f64;
        }
        println!(
            "N={n}: {tokens} decoded tokens in {decode_s:.2} s = {tps:.1} tok/s ({:.2}× N=1), wall {:.2} s",
            tps / base,
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
