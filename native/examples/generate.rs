//! One-shot generation with the front door, `tern::Model`.
//!
//!     cargo run --release -p tern --example generate [MODEL.gguf] [PROMPT]

fn main() -> tern::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = tern::models::path_or(args.next(), tern::models::SMOLLM2)?;
    let prompt = args.next().unwrap_or_else(|| "The capital of France is".into());
    let model = tern::Model::load(path)?;
    let out = model.generate(&prompt, &tern::Options::greedy().max_tokens(32))?;
    println!("{prompt}{}", out.text);
    eprintln!("{:?}, {} tokens, {:.1} tok/s", out.finish_reason, out.usage.completion_tokens, out.timings.tokens_per_s);
    Ok(())
}
