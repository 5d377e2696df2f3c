//! Subcommands of the `tern` CLI.

mod bench;
mod bench_spec;
mod chat;
mod embed;
mod encoder_input;
mod files;
mod info;
pub mod llama_flags;
mod models;
mod perplexity;
mod pull;
mod rerank;
mod run;
mod sampling;
mod serve;
mod speculative;
mod template_args;

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use tern::Result;

#[derive(Parser)]
#[command(name = "tern", version, about = "Run local LLMs (GGUF files, HF safetensors directories) on the CPU")]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate text from a prompt, streamed as it is produced.
    Run(run::Args),
    /// Measure prompt processing and generation speed (like llama-bench).
    Bench(bench::Args),
    /// Chat with a model in the terminal (multi-turn, streamed).
    Chat(chat::Args),
    /// Print a model's architecture, dimensions, tensor types, tokenizer.
    Info(info::Args),
    /// Perplexity of a text file, computed as llama.cpp's llama-perplexity does.
    Perplexity(perplexity::Args),
    /// OpenAI-compatible HTTP server with continuous batching.
    Serve(serve::Args),
    /// Fetch a model into the cache without running it (like ollama pull).
    Pull(pull::Args),
    /// Embed texts with an embedding model (like llama-embedding).
    Embed(embed::Args),
    /// Score documents against a query with a cross-encoder, best first.
    Rerank(rerank::Args),
    /// The models in the cache: name, size, path (like ollama list).
    #[command(alias = "ls")]
    List(models::ListArgs),
    /// Remove models from the cache (like ollama rm).
    Rm(models::RmArgs),
}

pub fn dispatch(cli: Cli) -> Result<()> {
    tern::kernels::select()?; // a TERN_KERNELS this CPU cannot run is an error
    match cli.cmd {
        Cmd::Run(a) => run::run(a),
        Cmd::Bench(a) => bench::run(a),
        Cmd::Chat(a) => chat::run(a),
        Cmd::Info(a) => info::run(a),
        Cmd::Perplexity(a) => perplexity::run(a),
        Cmd::Serve(a) => serve::run(a),
        Cmd::Pull(a) => pull::run(a),
        Cmd::Embed(a) => embed::run(a),
        Cmd::Rerank(a) => rerank::run(a),
        Cmd::List(a) => models::list(a),
        Cmd::Rm(a) => models::rm(a),
    }
}

/// `--kv-type` values.
fn parse_kv_type(s: &str) -> std::result::Result<tern_core::KvType, String> {
    tern_core::KvType::parse(s).ok_or_else(|| format!("unknown KV cache type {s:?} (f16, f16-wide, f32 or q8_0)"))
}

/// Which model and how to load it (shared by every subcommand).
#[derive(clap::Args, Clone, Default)]
pub struct LoadArgs {
    /// The model: a GGUF file or HF directory, an http(s) URL of a GGUF
    /// file, a hub reference (owner/repo:Q4_K_M, owner/repo/file.gguf,
    /// owner/repo), or a built-in name (qwen2.5-coder-0.5b, smollm2-135m, gemma3-270m)
    /// [default: qwen2.5-coder-0.5b]
    #[arg(short, long, global = true)]
    model: Option<String>,
    /// Use only models already in the cache (TERN_OFFLINE=1 does the same)
    #[arg(long, global = true)]
    offline: bool,
    /// No download progress
    #[arg(long, global = true)]
    quiet: bool,
    /// Quantize float (f32/f16/bf16) weights at load: q8_0
    #[arg(long, value_parser = parse_quant)]
    quantize: Option<tern_core::backend::quant::GgmlType>,
    /// A hub repository, owner/repo[:QUANT] (llama.cpp's -hf; the same as -m)
    #[arg(long, global = true, value_name = "REPO", conflicts_with = "model")]
    hf_repo: Option<String>,
    /// With --hf-repo: this file of the repository (llama.cpp's -hff)
    #[arg(long, global = true, value_name = "FILE", requires = "hf_repo")]
    hf_file: Option<String>,
    /// Accepted for llama.cpp's command lines (-ngl): this build has no GPU
    /// offload, every layer runs on the CPU
    #[arg(long, global = true, value_name = "N", allow_negative_numbers = true)]
    n_gpu_layers: Option<i64>,
    /// Accepted for llama.cpp's command lines (-fa [on|off|auto]): tern's
    /// attention is always the fused, tiled kind; nothing to switch
    #[arg(long, global = true, value_name = "on|off|auto", num_args = 0..=1, default_missing_value = "on")]
    flash_attn: Option<String>,
    /// Keep the weights as the file lays them out only: no copy in the
    /// kernels' own layout (Q4_0/Q5_0/Q8_0/Q4_K/Q6_K, 8 rows interleaved for the
    /// AVX-512 kernels), as llama.cpp's --no-repack (-nr)
    #[arg(long, global = true)]
    no_repack: bool,
    /// A LoRA adapter to apply (a PEFT directory or a GGUF LoRA file) at
    /// scale 1; repeatable (ids: the --lora ones first, in order, then the
    /// --lora-scaled ones)
    #[arg(long, value_name = "PATH")]
    lora: Vec<std::path::PathBuf>,
    /// A LoRA adapter at a scale (llama.cpp's --lora-scaled); repeatable
    #[arg(long, num_args = 2, value_names = ["PATH", "SCALE"], allow_negative_numbers = true)]
    lora_scaled: Vec<String>,
}

impl LoadArgs {
    /// The same, with the model named by `reference` if given.
    fn with_model(mut self, reference: Option<String>) -> Self {
        self.model = reference.or(self.model);
        self
    }

    /// The model's local path: fetched into the cache first if it is a
    /// URL or hub reference not there yet (the default model too).
    fn model_path(&self) -> Result<PathBuf> {
        self.notes();
        let fetcher = tern::fetch::Fetcher::new().offline(self.offline).quiet(self.quiet);
        let hub = self.hf_repo.as_ref().map(|r| match &self.hf_file {
            Some(f) => format!("{}/{f}", r.split(':').next().unwrap_or(r)),
            None => r.clone(),
        });
        fetcher.get(hub.as_deref().or(self.model.as_deref()).unwrap_or(tern::fetch::known::QWEN.names[0]))
    }

    /// One line for each llama.cpp flag that means nothing here.
    fn notes(&self) {
        if let Some(n) = self.n_gpu_layers {
            eprintln!("tern: --n-gpu-layers {n}: this build has no GPU offload; every layer runs on the CPU");
        }
        if let Some(v) = &self.flash_attn {
            eprintln!("tern: --flash-attn {v}: tern's attention is always the fused, tiled kind; nothing to switch");
        }
    }
}

pub use template_args::TemplateArgs;

fn parse_quant(s: &str) -> std::result::Result<tern_core::backend::quant::GgmlType, String> {
    match s.to_ascii_lowercase().as_str() {
        "q8_0" => Ok(tern_core::backend::quant::GgmlType::Q8_0),
        _ => Err(format!("{s:?}: tern quantizes at load to q8_0")),
    }
}

/// Load a GGUF file or an HF directory as `l` asks; on a terminal, a
/// progress line says what is loading and how long it took.
/// The adapters `--lora` and `--lora-scaled` name, loaded beside the
/// model at their scales (ids in that order).
fn with_adapters(mut lm: tern::Loaded, l: &LoadArgs) -> Result<tern::Loaded> {
    let scaled = l.lora_scaled.chunks(2).map(|p| {
        let scale = p[1].parse::<f32>().map_err(|_| tern_core::Error::InvalidArgument {
            what: format!("--lora-scaled {} {}: the scale is not a number", p[0], p[1]),
        })?;
        Ok::<_, tern::Error>((std::path::PathBuf::from(&p[0]), scale))
    });
    let all = l.lora.iter().map(|p| Ok((p.clone(), 1.0))).chain(scaled);
    for a in all {
        let (path, scale) = a?;
        let adapter = tern::load_adapter(&path, &lm.model)?;
        lm.bundle.add_adapter(adapter, scale)?;
    }
    Ok(lm)
}

fn load(path: &std::path::Path, l: &LoadArgs) -> Result<tern::Loaded> {
    use std::io::IsTerminal;
    let tty = std::io::stderr().is_terminal();
    if tty {
        eprint!("tern: loading {} ...", path.display());
    }
    let lm = tern::load_with(path, &tern::LoadOptions { quantize: l.quantize, no_repack: l.no_repack })
        .and_then(|lm| with_adapters(lm, l));
    if tty {
        match &lm {
            Ok(lm) => {
                eprintln!(" {:.2} s, {:.0} MiB", lm.load_time.as_secs_f64(), lm.model.n_bytes() as f64 / 1048576.0)
            }
            Err(_) => eprintln!(),
        }
    }
    lm
}
