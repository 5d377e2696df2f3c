//! `tern pull REF`: fetch a model into the cache, print its path.

use tern::fetch::Fetcher;
use tern::Result;

#[derive(clap::Args)]
pub struct Args {
    /// What to fetch: a URL, owner/repo:QUANT, owner/repo/file.gguf,
    /// owner/repo, or a built-in name (qwen2.5-coder-0.5b, smollm2-135m, gemma3-270m)
    reference: String,
    /// Check the cache only: an error if the model is not there
    #[arg(long)]
    offline: bool,
    /// No progress bar
    #[arg(long, short)]
    quiet: bool,
}

pub fn run(a: Args) -> Result<()> {
    let path = Fetcher::new().offline(a.offline).quiet(a.quiet).get(&a.reference)?;
    println!("{}", path.display());
    Ok(())
}
