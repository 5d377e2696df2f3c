//! `tern perplexity`: llama-perplexity's measure on a text file.

use std::path::PathBuf;
use std::time::Instant;

use tern::{Result, Threads};
use tern_core::{perplexity, runtime::tokenize};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// Text file to score
    #[arg(short, long)]
    file: PathBuf,
    /// Window size in tokens
    #[arg(long, default_value_t = 512)]
    ctx: usize,
    /// Score only the first N windows
    #[arg(long)]
    chunks: Option<usize>,
    #[arg(long)]
    exact: bool,
    /// KV cache element type: f16, f16-wide, f32 or q8_0 [default: f16, f32 with --exact]
    #[arg(long, value_parser = super::parse_kv_type)]
    kv_type: Option<tern_core::KvType>,
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> Result<()> {
    let path = a.load.model_path()?;
    let lm = super::load(&path, &a.load)?;
    // (wikitext-2's test split is 1.3 MB; tokenizing takes ~100 bytes a byte)
    let text = super::files::read_text(&a.file, 64 << 20, "text file", "")?;
    let (tokens, bos) = tokenize(lm.tokenizer()?, &text)?;
    let threads = Threads::new(tern::limits::check_threads(a.threads)?);
    let engine = tern::engine(&threads, a.exact)?;
    let kv = a.kv_type.unwrap_or(engine.kv_type());
    tern::limits::check_sessions(&lm, 1, a.ctx, a.ctx, kv)?;
    let t0 = Instant::now();
    let r = perplexity(&lm.model, &engine, kv, &tokens, a.ctx, bos, a.chunks, |c, p| {
        if !a.json {
            eprint!("[{}]{p:.4} ", c + 1);
        }
    })?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({"ppl": r.ppl, "stderr": r.stderr, "ctx": a.ctx, "kv_type": kv.name(), "n_chunks": r.n_chunks,
                "n_tokens": tokens.len(), "n_scored": r.n_scored, "seconds": t0.elapsed().as_secs_f64()})
        );
    } else {
        eprintln!();
        println!(
            "Final estimate: PPL = {:.4} +/- {:.5} ({} chunks of {}, {} tokens)",
            r.ppl,
            r.stderr,
            r.n_chunks,
            a.ctx,
            tokens.len()
        );
    }
    Ok(())
}
