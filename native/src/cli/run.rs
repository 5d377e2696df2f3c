//! `tern run`: one prompt in, streamed text out.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use tern::{Error, Result, Threads};
use tern_core::generate::{generate, Step};
use tern_core::sampler::{Sampler, SamplerConfig};
use tern_core::utf8::Utf8Stream;

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model file [default: the Qwen2.5-Coder-0.5B model in the cache]
    #[arg(short, long)]
    model: Option<PathBuf>,
    /// Prompt text
    #[arg(short, long, required_unless_present = "prompt_ids", conflicts_with = "prompt_ids")]
    prompt: Option<String>,
    /// Prompt as comma-separated token ids, instead of text
    #[arg(long, value_delimiter = ',')]
    prompt_ids: Option<Vec<u32>>,
    /// Tokens to generate
    #[arg(short = 'n', long, default_value_t = 128)]
    n_predict: usize,
    /// Temperature (0 = greedy)
    #[arg(long, default_value_t = 0.8)]
    temp: f32,
    #[arg(long, default_value_t = 40)]
    top_k: usize,
    #[arg(long, default_value_t = 0.95)]
    top_p: f32,
    #[arg(long, default_value_t = 0.05)]
    min_p: f32,
    #[arg(long, default_value_t = 1.0)]
    repeat_penalty: f32,
    #[arg(long, default_value_t = 64)]
    repeat_last_n: usize,
    /// RNG seed [default: from the clock; printed with --json]
    #[arg(long)]
    seed: Option<u64>,
    /// f32 activations, weights dequantized on the fly (the oracle path)
    #[arg(long)]
    exact: bool,
    /// Print one JSON object instead of streaming text
    #[arg(long)]
    json: bool,
    /// Write raw little-endian f32 logits of the last prompt position and
    /// of every generated step to this file
    #[arg(long)]
    logits_out: Option<PathBuf>,
    /// Never sample end-of-generation tokens (their logits are set to -inf,
    /// as llama.cpp's --ignore-eos does)
    #[arg(long)]
    ignore_eos: bool,
    /// Threads [default: all cores]
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
    /// Context size [default: prompt + n_predict]
    #[arg(short, long)]
    ctx: Option<usize>,
}

pub fn run(a: Args) -> Result<()> {
    let path = super::model_path(a.model)?;
    let lm = tern::load(&path)?;
    let tok = &lm.tokenizer;
    let prompt = match (&a.prompt_ids, &a.prompt) {
        (Some(ids), _) => ids.clone(),
        (None, Some(text)) => tok.encode(text, true)?,
        (None, None) => unreachable!("clap requires one"),
    };
    if prompt.is_empty() {
        return Err(tern_core::Error::InvalidArgument { what: "the prompt has no tokens".into() }.into());
    }
    let n_ctx = a.ctx.unwrap_or(prompt.len() + a.n_predict).max(prompt.len() + a.n_predict.max(1) - 1);
    let seed = a.seed.unwrap_or_else(|| std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos() as u64));
    let mut sampler = Sampler::new(SamplerConfig {
        temperature: a.temp,
        top_k: a.top_k,
        top_p: a.top_p,
        min_p: a.min_p,
        repeat_penalty: a.repeat_penalty,
        repeat_last_n: a.repeat_last_n,
        seed,
        logit_bias: if a.ignore_eos { tok.eog.iter().map(|&t| (t, f32::NEG_INFINITY)).collect() } else { Vec::new() },
    });
    let threads = Threads::new(a.threads);
    let engine = tern::engine(&threads, a.exact);
    let mut session = lm.model.session(n_ctx, 512);
    let mut logits_file = match &a.logits_out {
        Some(p) => Some(BufWriter::new(File::create(p).map_err(|source| Error::Io { path: p.clone(), source })?)),
        None => None,
    };

    let mut utf8 = Utf8Stream::new();
    let mut stdout = std::io::stdout().lock();
    let t0 = Instant::now();
    let mut t_first = None;
    let (ids, finish) = generate(
        &lm.model,
        &engine,
        &mut session,
        &mut sampler,
        &prompt,
        a.n_predict,
        |t| tok.is_eog(t),
        |step: Step| {
            t_first.get_or_insert_with(|| t0.elapsed());
            if let Some(f) = logits_file.as_mut() {
                let bytes: Vec<u8> = step.logits.iter().flat_map(|v| v.to_le_bytes()).collect();
                f.write_all(&bytes).map_err(io_err)?;
            }
            if !a.json && !tok.is_eog(step.token) {
                let _ = stdout.write_all(utf8.push(tok.token_bytes(step.token)).as_bytes());
                let _ = stdout.flush();
            }
            Ok(())
        },
    )?;
    let total = t0.elapsed();
    if let Some(mut f) = logits_file {
        f.flush().map_err(|source| Error::Io { path: a.logits_out.clone().unwrap_or_default(), source })?;
    }
    let prefill = t_first.unwrap_or(total);
    let n_decode = ids.len().saturating_sub(1);
    let decode_s = (total - prefill).as_secs_f64();
    let shown: Vec<u32> = ids.iter().copied().filter(|&t| !tok.is_eog(t)).collect();
    if a.json {
        let j = serde_json::json!({
            "model": path.display().to_string(),
            "prompt_ids": prompt,
            "ids": ids,
            "text": tok.decode(&shown),
            "finish_reason": finish.as_str(),
            "seed": seed,
            "exact": a.exact,
            "timings": {
                "load_ms": lm.load_time.as_secs_f64() * 1e3,
                "prefill_ms": prefill.as_secs_f64() * 1e3,
                "decode_ms": decode_s * 1e3,
                "prompt_tokens_per_s": prompt.len() as f64 / prefill.as_secs_f64(),
                "tokens_per_s": if n_decode > 0 { n_decode as f64 / decode_s } else { 0.0 },
            },
        });
        println!("{j}");
    } else {
        let _ = write!(stdout, "{}", utf8.finish());
        let _ = writeln!(stdout);
        eprintln!(
            "tern: {} prompt tokens in {:.0} ms, {} tokens at {:.1} tok/s, finish: {}",
            prompt.len(),
            prefill.as_secs_f64() * 1e3,
            ids.len(),
            if n_decode > 0 { n_decode as f64 / decode_s } else { 0.0 },
            finish.as_str()
        );
    }
    Ok(())
}

fn io_err(e: std::io::Error) -> tern_core::Error {
    tern_core::Error::InvalidArgument { what: format!("writing logits: {e}") }
}
