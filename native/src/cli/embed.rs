//! `tern embed`: vectors of texts from an embedding model (a
//! sentence-transformers directory or a GGUF; a decoder pooled as
//! `--pooling` says), like llama.cpp's llama-embedding.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use tern::Result;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// Texts to embed, one vector each
    texts: Vec<String>,
    /// Embed each non-empty line of this file
    #[arg(short, long, conflicts_with = "texts")]
    file: Option<PathBuf>,
    /// One JSON object: the vectors, the model, token counts, timing
    #[arg(long)]
    json: bool,
    /// Threads (0: all cores)
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
    /// Pool the token vectors so (normalised), not as the model's files
    /// say: mean, cls or last (a decoder embedder: Qwen3-Embedding's last)
    #[arg(long, value_parser = super::encoder_input::parse_pooling)]
    pooling: Option<tern_core::Pooling>,
}

pub fn run(a: Args) -> Result<()> {
    let (path, model) = super::encoder_input::load(&a.load, a.threads, "embed", a.pooling)?;
    let texts = super::encoder_input::texts(a.file.as_deref(), &a.texts)?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t0 = Instant::now();
    let vectors = model.embed(&refs)?;
    let secs = t0.elapsed().as_secs_f64();
    let tokens: usize = refs.iter().map(|t| model.core().input(t).map_or(0, |ids| ids.len())).sum();
    let mut out = std::io::stdout().lock();
    if a.json {
        let data: Vec<_> =
            vectors.iter().enumerate().map(|(i, v)| serde_json::json!({"index": i, "embedding": v})).collect();
        let j = serde_json::json!({"model": path.display().to_string(), "dim": model.dim(), "data": data,
            "tokens": tokens, "seconds": secs});
        let _ = writeln!(out, "{j}");
    } else {
        for (i, v) in vectors.iter().enumerate() {
            let nums: Vec<String> = v.iter().map(|x| format!("{x:.6}")).collect();
            let _ = writeln!(out, "embedding {i}: {}", nums.join(" "));
        }
        eprintln!(
            "tern: {} inputs, {tokens} tokens in {:.0} ms ({:.1} inputs/s)",
            vectors.len(),
            secs * 1e3,
            vectors.len() as f64 / secs
        );
    }
    Ok(())
}
