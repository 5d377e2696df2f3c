//! Batched generation: N prompts decoded together, one forward pass a step
//! for all of them, each with its own sampler; prints aggregate tokens/s
//! for N = 1, 4 and 8 (or the sizes given).
//!
//!     cargo run --release -p tern-llm --example batch MODEL.gguf [N...]

use tern::Options;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = tern::Model::load(args.next().ok_or("usage: batch MODEL.gguf [N...]")?)?;
    let sizes: Vec<usize> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() { vec![1, 4, 8] } else { sizes };
    let topics = ["the sea", "a city", "winter", "a robot", "the moon", "coffee", "a library", "rain"];
    let mut base = 0.0;
    for n in sizes {
        let prompts: Vec<String> =
            (0..n).map(|i| format!("A short poem about {}:", topics[i % topics.len()])).collect();
        let jobs: Vec<(&str, Options)> = (0..n)
            .map(|i| {
                (prompts[i].as_str(), Options::default().max_tokens(32).temperature(0.8).seed(i as u64).ignore_eos())
            })
            .collect();
        let t0 = std::time::Instant::now();
        let results = model.generate_batch(&jobs)?;
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
