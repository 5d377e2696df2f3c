//! `tern rerank`: a cross-encoder's relevance score of each document for a
//! query, best first, like llama.cpp's `--reranking` endpoint.

use std::io::Write as _;
use std::path::PathBuf;

use tern::Result;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// The query
    query: String,
    /// Documents to score against it
    documents: Vec<String>,
    /// Score each non-empty line of this file as a document
    #[arg(short, long, conflicts_with = "documents")]
    file: Option<PathBuf>,
    /// Print only the best N
    #[arg(long)]
    top_n: Option<usize>,
    /// One JSON object: the results (index, relevance_score), best first
    #[arg(long)]
    json: bool,
    /// Threads (0: all cores)
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
}

pub fn run(a: Args) -> Result<()> {
    let (path, model) = super::encoder_input::load(&a.load, a.threads, "rerank", None)?;
    let docs = super::encoder_input::texts(a.file.as_deref(), &a.documents)?;
    let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let scores = model.rerank(&a.query, &refs)?;
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]));
    order.truncate(a.top_n.unwrap_or(order.len()));
    let mut out = std::io::stdout().lock();
    if a.json {
        let results: Vec<_> =
            order.iter().map(|&i| serde_json::json!({"index": i, "relevance_score": scores[i]})).collect();
        let _ = writeln!(out, "{}", serde_json::json!({"model": path.display().to_string(), "results": results}));
    } else {
        for &i in &order {
            let _ = writeln!(out, "{:>10.6}  {i:>4}  {}", scores[i], docs[i]);
        }
    }
    Ok(())
}
