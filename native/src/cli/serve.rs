//! `tern serve`: the OpenAI-compatible server (built with `--features serve`).

use tern::Result;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    #[command(flatten)]
    template: super::TemplateArgs,
    #[command(flatten)]
    spec: super::speculative::SpecArgs,
    /// Address to listen on (loopback unless --allow-remote)
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Sequences decoded together, each with its own KV cache (llama.cpp's -np)
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// Context positions per sequence (llama-server's -c is shared by all
    /// its slots: its -c 16384 -np 4 is -c 4096 --parallel 4 here)
    #[arg(short, long, visible_alias = "ctx-size", default_value_t = 4096)]
    ctx: usize,
    /// Memory for the KV cache of all sequences and the prefix cache
    /// together, in 256-position blocks shared between sequences (e.g.
    /// 2GiB, 512MiB, 1e9) [default: what --parallel sequences of --ctx
    /// positions need or, if more, half the free memory up to 8 GiB]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    kv_memory: Option<u64>,
    /// KV cache element type: f16, or q8_0 (Q8_0 blocks: 53% of f16's
    /// memory, so about twice the cached tokens in a --kv-memory)
    #[arg(long, value_parser = super::parse_kv_type, default_value = "f16")]
    kv_type: tern_core::KvType,
    /// Requests that may wait for a free sequence; beyond: 429
    #[arg(long, default_value_t = 64)]
    queue: usize,
    /// Require `Authorization: Bearer KEY` (also read from TERN_API_KEY)
    #[arg(long, env = "TERN_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Largest request body, bytes; beyond: 413
    #[arg(long, default_value_t = 4 << 20)]
    max_body: usize,
    /// Tokens per forward pass (running decodes first, then prefill chunks)
    #[arg(long, default_value_t = 512)]
    batch: usize,
    /// Threads [default: all cores]
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
    /// Open connections at most; beyond, new ones are closed at once
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Seconds a client has to send a request's headers (also how long an
    /// idle keep-alive connection stays open) and, separately, its body
    #[arg(long, default_value_t = 10)]
    read_timeout: u64,
    /// Control-token strings typed into messages (`<|im_end|>`…) become
    /// control tokens [default: they are text]
    #[arg(long)]
    content_specials: bool,
    /// Prefill every prompt whole: no reuse of cached prefixes, the slot's
    /// own or another's (for measuring what the reuse gives)
    #[arg(long)]
    no_prefix_cache: bool,
    /// Allow a non-loopback --host (a warning is logged)
    #[arg(long)]
    allow_remote: bool,
    /// Seconds running requests get to finish on SIGINT/SIGTERM
    #[arg(long, default_value_t = 30)]
    drain: u64,
    /// Also serve POST /v1/embeddings with this embedding model (a
    /// sentence-transformers directory or a GGUF)
    #[arg(long, value_name = "DIR|GGUF")]
    embedding_model: Option<std::path::PathBuf>,
    /// Pool the embedding model's token vectors so (normalised), not as its
    /// files say: mean, cls or last (a decoder: Qwen3-Embedding's last)
    #[arg(long, value_parser = super::encoder_input::parse_pooling, requires = "embedding_model")]
    embedding_pooling: Option<tern_core::Pooling>,
    /// Also serve POST /v1/rerank with this cross-encoder (a directory
    /// holding a BertForSequenceClassification)
    #[arg(long, value_name = "DIR")]
    rerank_model: Option<std::path::PathBuf>,
}

#[cfg(feature = "serve")]
pub fn run(a: Args) -> Result<()> {
    // the port first: 503 "Loading model" while the model is fetched and loaded
    let loading = tern::serve::bind_loading(a.host, a.port, a.allow_remote)?;
    eprintln!("tern serve: loading the model; http://{} answers 503 until it is ready", loading.addr());
    let port = loading.addr().port();
    let path = a.load.model_path()?;
    let mut lm = super::load(&path, &a.load)?;
    a.template.apply(&mut lm)?;
    let speculative = a.spec.speculative()?;
    let draft = a.spec.draft(&a.load, &lm)?;
    // (their forward passes run on the engine thread's workers)
    let load = |dir: &Option<std::path::PathBuf>, pooling| -> Result<Option<tern::Embedder>> {
        dir.as_ref().map(|d| Ok(tern::Embedder::load_with(d, pooling)?.with_threads(1))).transpose()
    };
    let (embedder, reranker) = (load(&a.embedding_model, a.embedding_pooling)?, load(&a.rerank_model, None)?);
    let name = |d: &Option<std::path::PathBuf>| d.as_ref()?.file_name().map(|n| n.to_string_lossy().into_owned());
    let (embedding_model_id, rerank_model_id) = (name(&a.embedding_model), name(&a.rerank_model));
    let model_id = path.file_name().map_or_else(|| "tern".into(), |n| n.to_string_lossy().into_owned());
    let o = tern::serve::ServeOptions {
        model_id,
        host: a.host,
        port,
        parallel: a.parallel,
        ctx: a.ctx,
        kv_memory: a.kv_memory,
        kv_type: a.kv_type,
        queue: a.queue,
        api_key: a.api_key,
        max_body: a.max_body,
        n_batch: a.batch,
        threads: a.threads,
        allow_remote: a.allow_remote,
        drain: std::time::Duration::from_secs(a.drain),
        max_connections: a.max_connections,
        read_timeout: std::time::Duration::from_secs(a.read_timeout),
        content_specials: a.content_specials,
        prefix_cache: !a.no_prefix_cache,
        embedding_model_id,
        rerank_model_id,
        reasoning_format: a.template.reasoning_format(),
        chat_template_kwargs: a.template.kwargs(),
        speculative,
        draft,
    };
    tern::serve::serve_on(Some(loading), lm, embedder, reranker, o)
}

#[cfg(not(feature = "serve"))]
pub fn run(_: Args) -> Result<()> {
    Err(tern::Error::Serve {
        detail: "this tern was built without the server: cargo build --release -p tern-llm --features serve".into(),
    })
}

/// Bytes from `2GiB`, `512MiB`, `64KiB`, `3GB`, `1TB`, `1e9` or `4096`.
fn parse_size(s: &str) -> std::result::Result<u64, String> {
    const UNITS: [(&str, u64); 9] = [
        ("KiB", 1 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("TiB", 1 << 40),
        ("KB", 1_000),
        ("MB", 1_000_000),
        ("GB", 1_000_000_000),
        ("TB", 1_000_000_000_000),
        ("B", 1),
    ];
    let t = s.trim();
    let (num, unit) = UNITS.into_iter().find_map(|(u, m)| Some((t.strip_suffix(u)?, m))).unwrap_or((t, 1));
    let x: f64 = num.trim().parse().map_err(|_| format!("{s:?} is not a size (e.g. 2GiB, 512MiB, 1e9)"))?;
    let bytes = x * unit as f64;
    if !(1.0..=1e18).contains(&bytes) {
        return Err(format!("{s:?}: a size from 1 byte to 1 EB"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(super::parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(super::parse_size("1e9"), Ok(1_000_000_000));
        assert_eq!(super::parse_size("3GB"), Ok(3_000_000_000));
        assert_eq!(super::parse_size("4096"), Ok(4096));
        for bad in ["", "x", "-1GiB", "0", "1e30", "NaN", "2 GiBs"] {
            assert!(super::parse_size(bad).is_err(), "{bad}");
        }
    }
}
