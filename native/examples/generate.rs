//! One-shot generation with the front door, `tern::Model`.
//!
//!     cargo run --release -p tern-llm --example generate MODEL.gguf [PROMPT]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = tern::Model::load(args.next().ok_or("usage: generate MODEL.gguf [PROMPT]")?)?;
    let prompt = args.next().unwrap_or_else(|| "The capital of France is".into());
    let out = model.generate(&prompt, &tern::Options::greedy().max_tokens(32))?;
    println!("{prompt}{}", out.text);
    eprintln!("{:?}, {} tokens, {:.1} tok/s", out.finish_reason, out.usage.completion_tokens, out.timings.tokens_per_s);
    Ok(())
}
