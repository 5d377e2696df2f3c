//! `tern run`: one prompt in, streamed text out.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use tern::{limits, Error, Result, Threads};
use tern_core::Message;
use tern_core::{Event, Generator, Vocab};
use tern_core::{Prompt, Request};

use super::sampling::SamplingArgs;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// Prompt text (with --fim-suffix: the code before the gap)
    #[arg(short, long, visible_alias = "fim-prefix", required_unless_present_any = ["prompt_ids", "file"], conflicts_with_all = ["prompt_ids", "file"])]
    prompt: Option<String>,
    /// Fill in the middle: the code after the gap, the prompt the code
    /// before it (the model's FIM tokens: Qwen2.5-Coder, StarCoder,
    /// CodeLlama, DeepSeek-Coder…)
    #[arg(long, visible_alias = "suffix", value_name = "TEXT", conflicts_with_all = ["prompt_ids", "chat"])]
    fim_suffix: Option<String>,
    /// Prompt text from a file (as llama.cpp's -f)
    #[arg(short, long, conflicts_with = "prompt_ids")]
    file: Option<PathBuf>,
    /// Prompt as comma-separated token ids, instead of text
    #[arg(long, value_delimiter = ',')]
    prompt_ids: Option<Vec<u32>>,
    /// Apply the model's chat template, the prompt as one user turn
    #[arg(long)]
    chat: bool,
    /// System message for --chat (llama.cpp's -sys)
    #[arg(long, visible_alias = "system-prompt", requires = "chat")]
    system: Option<String>,
    #[command(flatten)]
    template: super::TemplateArgs,
    /// With --chat and a model that thinks: its thinking block on stderr
    /// (show) or not at all (hide); the answer alone on stdout
    #[arg(long, value_enum, default_value_t = super::template_args::Show::Show)]
    reasoning: super::template_args::Show,
    /// With --chat: control-token strings typed into the messages
    /// (`<|im_end|>`…) become control tokens [default: they are text]
    #[arg(long, requires = "chat")]
    content_specials: bool,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    spec: super::speculative::SpecArgs,
    /// f32 activations, weights dequantized on the fly (the oracle path)
    #[arg(long)]
    exact: bool,
    /// KV cache element type: f16, f16-wide (f16 values stored as f32), f32 or q8_0 (Q8_0 blocks, half of f16's memory) [default: f16, f32 with --exact]
    #[arg(long, value_parser = super::parse_kv_type)]
    kv_type: Option<tern_core::KvType>,
    /// Print one JSON object instead of streaming text
    #[arg(long)]
    json: bool,
    /// With --json: each token's log-probability and its N most likely
    /// alternatives (log-softmax of the model's logits, before sampling)
    #[arg(long, value_name = "N", requires = "json")]
    logprobs: Option<usize>,
    /// Write raw little-endian f32 logits of the last prompt position and
    /// of every generated step to this file
    #[arg(long)]
    logits_out: Option<PathBuf>,
    /// Threads [default: all cores]
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
    /// Context size [default: prompt + n_predict]
    #[arg(short, long, visible_alias = "ctx-size")]
    ctx: Option<usize>,
}

pub fn run(a: Args) -> Result<()> {
    let path = a.load.model_path()?;
    let mut lm = super::load(&path, &a.load)?;
    a.template.apply(&mut lm)?;
    let from_file = match &a.file {
        Some(f) => Some(read_prompt(f, &lm, a.ctx)?),
        None => None,
    };
    let prompt = match (&a.prompt_ids, a.prompt.as_ref().or(from_file.as_ref())) {
        (Some(ids), _) => Prompt::Ids(ids.clone()),
        (None, Some(text)) if a.chat => {
            let mut msgs: Vec<Message> = a.system.iter().map(|s| Message::new("system", s)).collect();
            msgs.push(Message::new("user", text));
            Prompt::Messages(msgs)
        }
        (None, Some(text)) => match &a.fim_suffix {
            Some(suffix) => {
                Prompt::Infill(tern_core::Infill { prefix: text.clone(), suffix: suffix.clone(), ..Default::default() })
            }
            None => Prompt::Text(text.clone()),
        },
        (None, None) => unreachable!("clap requires one"),
    };
    if a.ctx == Some(0) {
        return Err(super::files::invalid("-c 0: a context holds at least one position".into()));
    }
    let seed = a.sampling.seed();
    let req = Request {
        logprobs: a.logprobs,
        content_specials: a.content_specials,
        chat_template_kwargs: a.template.kwargs(),
        reasoning_format: a.template.reasoning_format(),
        speculative: a.spec.speculative()?,
        ..a.sampling.request(prompt, seed)?
    };
    let draft = a.spec.draft(&a.load, &lm)?;
    let n = a.sampling.n_predict;
    let prepared = lm.prepare(&req, a.ctx)?;
    let prompt = prepared.prompt.clone();
    let prepared_reasoning = prepared.reasoning;
    let needed = prompt.len().checked_add(n.max(1) - 1).filter(|&x| x <= tern_core::MAX_CTX);
    let needed = needed.ok_or_else(|| {
        let max = tern_core::MAX_CTX;
        super::files::invalid(format!(
            "-n {n} after a prompt of {} tokens passes the longest context, {max}",
            prompt.len()
        ))
    })?;
    let n_ctx = a.ctx.unwrap_or(needed + 1);
    let threads = Threads::new(limits::check_threads(a.threads)?);
    let engine = tern::engine(&threads, a.exact)?;
    let kv = a.kv_type.unwrap_or(engine.kv_type());
    limits::check_sessions(&lm, 1, n_ctx, 512.min(n_ctx), kv)?;
    let mut session = lm.model.session_kv(n_ctx, 512, kv);
    let mut logits_file = match &a.logits_out {
        Some(p) => Some(BufWriter::new(File::create(p).map_err(|source| Error::Io { path: p.clone(), source })?)),
        None => None,
    };
    let vocab = lm.vocab();
    let generation = prepared.generation_drafted(tern::clock, a.spec.drafter(draft.as_ref(), n_ctx));
    let mut gen = Generator::over(&lm.model, engine, &vocab, &mut session, generation);
    let reasoning = prepared_reasoning;
    let mut printer = super::template_args::Printer::new(reasoning, a.reasoning);
    let result = loop {
        let ev = gen.next().expect("a generator ends with Done")?;
        match ev {
            Event::Token { text, .. } => {
                if !a.json {
                    printer.print(&text);
                }
            }
            Event::Done(r) => break r,
        }
        if let Some(f) = logits_file.as_mut() {
            let io = |source| Error::Io { path: a.logits_out.clone().unwrap_or_default(), source };
            let bytes: Vec<u8> = gen.last_logits().iter().flat_map(|v| v.to_le_bytes()).collect();
            f.write_all(&bytes).map_err(io)?;
        }
    };
    if let Some(mut f) = logits_file {
        f.flush().map_err(|source| Error::Io { path: a.logits_out.clone().unwrap_or_default(), source })?;
    }
    let t = &result.timings;
    if a.json {
        let mut j = serde_json::json!({
            "model": path.display().to_string(),
            "prompt_ids": prompt,
            "ids": result.tokens,
            "text": result.text,
            "finish_reason": result.finish_reason.as_str(),
            "seed": seed,
            "exact": a.exact,
            "usage": {
                "prompt_tokens": result.usage.prompt_tokens,
                "cached_tokens": result.usage.cached_tokens,
                "completion_tokens": result.usage.completion_tokens,
                "draft_tokens": result.usage.draft_tokens,
                "accepted_draft_tokens": result.usage.accepted_draft_tokens,
            },
            "timings": {
                "load_ms": lm.load_time.as_secs_f64() * 1e3,
                "prefill_ms": t.prefill_ms,
                "first_token_ms": t.first_token_ms,
                "per_token_p50_ms": t.per_token_p50_ms,
                "per_token_p90_ms": t.per_token_p90_ms,
                "per_token_p99_ms": t.per_token_p99_ms,
                "total_ms": t.total_ms,
                "prompt_tokens_per_s": t.prompt_tokens_per_s,
                "tokens_per_s": t.tokens_per_s,
                "draft_n": result.usage.draft_tokens,
                "draft_n_accepted": result.usage.accepted_draft_tokens,
            },
        });
        if a.logprobs.is_some() {
            j["logprobs"] = logprobs_json(&result.logprobs, &vocab);
        }
        if let Some(r) = reasoning {
            let parts = r.split(&result.text);
            j["reasoning_content"] = parts.reasoning.into();
            j["content"] = parts.content.into();
        }
        println!("{j}");
    } else {
        printer.finish();
        println!();
        eprintln!(
            "tern: {} prompt tokens in {:.0} ms ({:.1} tok/s), {} tokens at {:.1} tok/s, finish: {}",
            prompt.len(),
            t.prefill_ms,
            t.prompt_tokens_per_s,
            result.tokens.len(),
            t.tokens_per_s,
            result.finish_reason.as_str()
        );
    }
    Ok(())
}

/// Each token's id, text and log-probability, with its alternatives.
fn logprobs_json(lps: &[tern::TokenLogprob], vocab: &dyn Vocab) -> serde_json::Value {
    let entry = |id: u32, lp: f32| serde_json::json!({ "id": id, "token": String::from_utf8_lossy(vocab.token_bytes(id)), "logprob": lp });
    lps.iter()
        .map(|t| {
            let mut e = entry(t.id, t.logprob);
            e["top_logprobs"] = t.top.iter().map(|&(id, lp)| entry(id, lp)).collect();
            e
        })
        .collect()
}

/// The prompt in `f`, read up to what the context can hold: `-c`
/// positions (else the model's trained context) of its longest token
/// each, twice over (a normaliser may drop bytes); tokenizing takes ~100
/// bytes of memory per byte of text, so a 100 MB file would have taken
/// 10 GB before its tokens could be counted.
fn read_prompt(f: &std::path::Path, lm: &tern::Loaded, ctx: Option<usize>) -> Result<String> {
    let n_ctx = ctx.unwrap_or(lm.model.config.n_ctx_train).clamp(1, tern_core::MAX_CTX);
    let longest = lm.tokenizer.as_ref().map_or(1, |t| t.longest_token());
    let max = (n_ctx as u64).saturating_mul(longest as u64).saturating_mul(2);
    let why = format!("{n_ctx} positions of at most {longest} bytes, twice over: a context of {n_ctx} (-c) holds less");
    super::files::read_text(f, max, "prompt file", &why)
}
