//! `tern bench`: what llama-bench measures — prompt processing (pp) and
//! generation (tg) in tokens/s at an optional context depth — plus time to
//! first token, inter-token latency percentiles, peak RSS and weight bytes.
//! Like llama-bench it feeds random token ids and times only the forward
//! passes (no tokenization, no sampling). `-o json` uses llama-bench's
//! field names so one script reads both tools.

use std::time::Instant;

use tern::{Result, Threads};
use tern_core::Logits;
use tern_core::{runtime::Rng, runtime::Sampler, SamplerConfig};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// Prompt tokens for the pp test (0 = skip)
    #[arg(short = 'p', long, default_value_t = 512)]
    n_prompt: usize,
    /// Generated tokens for the tg test (0 = skip)
    #[arg(short = 'n', long, default_value_t = 128)]
    n_gen: usize,
    /// Tokens already in the cache before each test
    #[arg(short = 'd', long, default_value_t = 0)]
    n_depth: usize,
    /// Threads (comma-separated list to sweep)
    #[arg(short, long, value_delimiter = ',', default_value = "0")]
    threads: Vec<usize>,
    /// Repetitions
    #[arg(short, long, default_value_t = 5)]
    reps: usize,
    /// Output: md, json (llama-bench's fields), jsonl (one object a line) or csv
    #[arg(short, long, value_enum, default_value_t = Output::Md)]
    output: Output,
    /// KV cache element type: f16, f16-wide (f16 values stored as f32) or f32
    #[arg(long, value_parser = super::parse_kv_type, default_value = "f16")]
    kv_type: tern_core::KvType,
    /// Tokens per forward step during prefill
    #[arg(short = 'b', long, default_value_t = 512)]
    n_batch: usize,
    /// tg as speculative verify steps of this many tokens: each step feeds
    /// them with every row's logits and takes all but the first back, so
    /// tg's t/s counts steps (the cost curve `bench/spec/simulate.py` prices)
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    verify: u16,
    #[command(flatten)]
    spec: super::speculative::SpecArgs,
    /// With --spec or --model-draft: the chat prompts to decode (JSONL of
    /// {"name", "kind", "prompt"}), each plainly and speculatively
    #[arg(long, value_name = "FILE", default_value = "bench/spec/prompts.jsonl")]
    spec_prompts: std::path::PathBuf,
}

struct Sample {
    n_prompt: usize,
    n_gen: usize,
    n_threads: usize,
    ns: Vec<u64>,
    /// tg only: per-token latencies of all reps
    itl_ns: Vec<u64>,
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = if v.len() > 1 { v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64 } else { 0.0 };
    (m, var.sqrt())
}

fn peak_rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

pub fn run(a: Args) -> Result<()> {
    let path = a.load.model_path()?;
    let t_load = Instant::now();
    let lm = super::load(&path, &a.load)?;
    let load_ms = t_load.elapsed().as_secs_f64() * 1e3;
    if a.spec.on() {
        for &t in &a.threads {
            tern::limits::check_threads(t)?;
        }
        let draft = a.spec.draft(&a.load, &lm)?;
        let rows =
            super::bench_spec::bench(&lm, &a.spec_prompts, &a.spec, draft.as_ref(), &a.threads, a.n_gen, a.reps)?;
        if a.output == Output::Md {
            println!("| threads | prompts | plain tok/s | spec tok/s | ratio | accepted/drafted | same outputs |");
            println!("|---|---|---|---|---|---|---|");
            for r in &rows {
                println!(
                    "| {} | {} ({}) | {:.1} | {:.1} | {:.2}x | {}/{} ({:.0} %) | {} |",
                    r["n_threads"],
                    r["kind"].as_str().unwrap_or(""),
                    r["prompts"],
                    r["plain_tps"].as_f64().unwrap_or(0.0),
                    r["spec_tps"].as_f64().unwrap_or(0.0),
                    r["ratio"].as_f64().unwrap_or(0.0),
                    r["accepted"],
                    r["drafted"],
                    r["acceptance"].as_f64().unwrap_or(0.0) * 100.0,
                    r["same_outputs"]
                );
            }
        }
        print_rows(a.output, &rows);
        return Ok(());
    }
    let m = &lm.model;
    let nv = m.config.n_vocab as u64;
    let weight_bytes: usize = m.weights.matrices().map(|t| t.len).sum();
    let mut rng = Rng::new(42);
    let mut rand_tokens = |n: usize| (0..n).map(|_| (rng.next_u64() % nv) as u32).collect::<Vec<u32>>();
    let verify = a.verify as usize;
    let n_ctx = a.n_depth.saturating_add(a.n_prompt.max(a.n_gen)).saturating_add(verify);
    tern::limits::check_sessions(&lm, 1, n_ctx, a.n_batch, a.kv_type)?;
    for &t in &a.threads {
        tern::limits::check_threads(t)?;
    }
    let mut samples = Vec::new();
    let mut ttft_ms = Vec::new();
    // One session for every test: the depth tokens are run once (untimed, on
    // all cores), and each test starts from the cache cut back to them — as
    // llama-bench restores its saved depth state instead of refilling it.
    let depth = rand_tokens(a.n_depth);
    let mut session = m.session_kv(n_ctx, a.n_batch, a.kv_type);
    // the adapters of --lora / --lora-scaled, at their scales
    let adapters = lm.adapter_set(None)?;
    session.set_adapters(&adapters);
    // (a sliding-window ring may have overwritten rows the depth needs: then
    // it runs again)
    let to_depth = |s: &mut tern_core::Session, e: &tern_core::Engine| -> Result<()> {
        if s.truncate(depth.len()) < depth.len() {
            s.forward(m, e, &depth, Logits::None)?;
        }
        Ok(())
    };
    to_depth(&mut session, &tern::engine(&Threads::new(0), false)?)?;
    for &t in &a.threads {
        let threads = Threads::new(t);
        let e = tern::engine(&threads, false)?;
        // warm-up: one short run on a scratch session (pages the weights in;
        // a mixture's experts interleaved, as a long generation's first
        // uses of them would: the steady state is timed)
        m.repack_experts_now(&threads);
        let mut scratch = m.session(16, 16);
        scratch.set_adapters(&adapters);
        scratch.forward(m, &e, &rand_tokens(a.n_prompt.clamp(1, 16)), Logits::Last)?;
        if a.n_prompt > 0 {
            let mut s =
                Sample { n_prompt: a.n_prompt, n_gen: 0, n_threads: threads_n(&threads), ns: vec![], itl_ns: vec![] };
            for _ in 0..a.reps {
                to_depth(&mut session, &e)?;
                let toks = rand_tokens(a.n_prompt);
                let t0 = Instant::now();
                session.forward(m, &e, &toks, Logits::Last)?;
                let ns = t0.elapsed().as_nanos() as u64;
                s.ns.push(ns);
                ttft_ms.push(ns as f64 / 1e6);
            }
            samples.push(s);
        }
        if a.n_gen > 0 {
            let mut s =
                Sample { n_prompt: 0, n_gen: a.n_gen, n_threads: threads_n(&threads), ns: vec![], itl_ns: vec![] };
            for _ in 0..a.reps {
                to_depth(&mut session, &e)?;
                let toks = rand_tokens(a.n_gen + verify - 1);
                let t0 = Instant::now();
                for i in 0..a.n_gen {
                    let ts = Instant::now();
                    if verify == 1 {
                        session.forward(m, &e, &toks[i..=i], Logits::Last)?;
                    } else {
                        let kept = session.tokens().len() + 1;
                        session.forward(m, &e, &toks[i..i + verify], Logits::All)?;
                        session.truncate(kept);
                    }
                    s.itl_ns.push(ts.elapsed().as_nanos() as u64);
                }
                s.ns.push(t0.elapsed().as_nanos() as u64);
            }
            samples.push(s);
        }
    }
    let rss = peak_rss_bytes();
    let file = path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let kernels = tern::kernels::select()?.name();
    let side = side_costs(&lm, a.n_prompt.max(1))?;
    if a.output != Output::Md {
        let rows: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let n = (s.n_prompt + s.n_gen) as f64;
                let ts: Vec<f64> = s.ns.iter().map(|&ns| n / (ns as f64 / 1e9)).collect();
                let (avg_ts, stddev_ts) = mean_sd(&ts);
                let nsf: Vec<f64> = s.ns.iter().map(|&v| v as f64).collect();
                let (avg_ns, stddev_ns) = mean_sd(&nsf);
                let mut itl = s.itl_ns.clone();
                itl.sort_unstable();
                let pct = |p: usize| {
                    itl.get((itl.len() * p / 100).min(itl.len().saturating_sub(1))).map_or(0.0, |&v| v as f64 / 1e6)
                };
                serde_json::json!({
                    "engine": "tern", "backends": format!("CPU/{kernels}"), "model_filename": file,
                    "model_type": format!("{} {}", m.config.arch.name(), m.config.name),
                    "model_size": weight_bytes, "n_batch": a.n_batch, "n_ubatch": a.n_batch,
                    "n_threads": s.n_threads, "type_k": a.kv_type.name(), "type_v": a.kv_type.name(),
                    "n_prompt": s.n_prompt, "n_gen": s.n_gen, "n_depth": a.n_depth, "verify": verify,
                    "avg_ns": avg_ns as u64, "stddev_ns": stddev_ns as u64, "avg_ts": avg_ts, "stddev_ts": stddev_ts,
                    "samples_ns": s.ns, "samples_ts": ts,
                    "itl_p50_ms": pct(50), "itl_p90_ms": pct(90), "itl_p99_ms": pct(99),
                    "peak_rss_bytes": rss, "weight_bytes": weight_bytes, "repacked_bytes": lm.repacked, "load_ms": load_ms,
                    "experts_repacked_bytes": m.experts_repacked_bytes(),
                    "tokenize_tokens": side.n_tokens, "tokenize_ms": side.tokenize_ms,
                    "sample_greedy_us": side.greedy_us, "sample_chain_us": side.chain_us,
                })
            })
            .collect();
        print_rows(a.output, &rows);
        return Ok(());
    }
    println!("| model | size | backend | threads | test | t/s | ITL p50/p90/p99 ms |");
    println!("| --- | ---: | --- | ---: | ---: | ---: | ---: |");
    for s in &samples {
        let n = (s.n_prompt + s.n_gen) as f64;
        let ts: Vec<f64> = s.ns.iter().map(|&ns| n / (ns as f64 / 1e9)).collect();
        let (avg, sd) = mean_sd(&ts);
        let test = match (s.n_prompt, verify) {
            (0, 1) => format!("tg{}", s.n_gen),
            (0, v) => format!("tg{} verify {v}", s.n_gen),
            (p, _) => format!("pp{p}"),
        };
        let test = if a.n_depth > 0 { format!("{test} @ d{}", a.n_depth) } else { test };
        let mut itl = s.itl_ns.clone();
        itl.sort_unstable();
        let pct =
            |p: usize| itl.get((itl.len() * p / 100).min(itl.len().saturating_sub(1))).map_or(0.0, |&v| v as f64 / 1e6);
        let lat = if itl.is_empty() { "-".into() } else { format!("{:.2}/{:.2}/{:.2}", pct(50), pct(90), pct(99)) };
        println!(
            "| {file} | {:.1} MiB | CPU/{kernels} | {} | {test} | {avg:.2} ± {sd:.2} | {lat} |",
            weight_bytes as f64 / 1048576.0,
            s.n_threads
        );
    }
    println!(
        "\nnot in pp/tg (as llama-bench): tokenizing {} tokens {:.2} ms ({:.0} tokens/s); sampling per token: greedy {:.1} µs, default chain {:.1} µs",
        side.n_tokens, side.tokenize_ms, side.n_tokens as f64 / (side.tokenize_ms / 1e3), side.greedy_us, side.chain_us
    );
    let (ttft, _) = if ttft_ms.is_empty() { (0.0, 0.0) } else { mean_sd(&ttft_ms) };
    println!(
        "load {load_ms:.0} ms (mmap), time to first token (pp{}) {ttft:.1} ms, peak RSS {:.1} MiB, weights {:.1} MiB, repacked {:.1} MiB{}",
        a.n_prompt,
        rss as f64 / 1048576.0,
        weight_bytes as f64 / 1048576.0,
        lm.repacked as f64 / 1048576.0,
        match m.experts_repacked_bytes() {
            0 => String::new(),
            n => format!(" (and {:.1} MiB of experts, in the warm-up)", n as f64 / 1048576.0),
        }
    );
    Ok(())
}

/// What pp/tg leave out, measured on their own: tokenizing a prompt of
/// about `n` tokens of English text, and sampling one token from real
/// logits (greedy, and the default top-k/top-p/min-p/temperature chain).
struct SideCosts {
    n_tokens: usize,
    tokenize_ms: f64,
    greedy_us: f64,
    chain_us: f64,
}

const TEXT: &str = "The quick brown fox jumps over the lazy dog. A journey of a thousand miles begins \
with a single step; measure twice, cut once, and keep the numbers honest. ";

fn side_costs(lm: &tern::Loaded, n: usize) -> Result<SideCosts> {
    let mut text = String::from(TEXT);
    while lm.tokenizer()?.encode(&text, false)?.len() < n {
        text.push_str(TEXT);
    }
    let reps = 20;
    let t0 = Instant::now();
    let mut n_tokens = 0;
    for _ in 0..reps {
        n_tokens = lm.tokenizer()?.encode(&text, false)?.len();
    }
    let tokenize_ms = t0.elapsed().as_secs_f64() * 1e3 / reps as f64;

    let threads = Threads::new(1);
    let e = tern::engine(&threads, false)?;
    let m = &lm.model;
    let mut session = m.session(16, 16);
    let prompt = lm.tokenizer()?.encode(TEXT, false)?;
    let prompt = &prompt[..prompt.len().min(16)];
    let logits = session.forward(m, &e, prompt, Logits::Last)?.to_vec();
    let time = |cfg: SamplerConfig| {
        let mut sampler = Sampler::new(cfg);
        let mut rng = Rng::new(7);
        let t0 = Instant::now();
        for _ in 0..200 {
            std::hint::black_box(sampler.sample(&logits, prompt, &mut rng));
        }
        t0.elapsed().as_secs_f64() * 1e6 / 200.0
    };
    let greedy_us = time(SamplerConfig::greedy());
    let chain_us = time(SamplerConfig::default());
    Ok(SideCosts { n_tokens, tokenize_ms, greedy_us, chain_us })
}

fn threads_n(t: &Threads) -> usize {
    use tern_core::backend::Parallel;
    t.n_workers()
}

/// `-o`: how the results are printed (llama-bench's choices but `sql`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A Markdown table
    Md,
    /// A JSON array of llama-bench's fields
    Json,
    /// One JSON object a line
    Jsonl,
    /// A header line of llama-bench's fields, then a line a test
    Csv,
}

/// The rows as JSON, JSON lines or CSV (arrays as JSON text in one field).
fn print_rows(output: Output, rows: &[serde_json::Value]) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(rows).unwrap_or_default()),
        Output::Jsonl => rows.iter().for_each(|r| println!("{r}")),
        Output::Csv => {
            let Some(first) = rows.first().and_then(|r| r.as_object()) else { return };
            let keys: Vec<&String> = first.keys().collect();
            println!("{}", keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(","));
            for r in rows {
                let field = |k: &String| match &r[k.as_str()] {
                    serde_json::Value::String(s) => csv_quote(s),
                    v => csv_quote(&v.to_string()),
                };
                println!("{}", keys.iter().map(|k| field(k)).collect::<Vec<_>>().join(","));
            }
        }
        Output::Md => {}
    }
}

/// A CSV field: quoted (quotes doubled) when it holds a comma, quote or line break.
fn csv_quote(s: &str) -> String {
    match s.contains([',', '"', '\n', '\r']) {
        true => format!("\"{}\"", s.replace('"', "\"\"")),
        false => s.to_string(),
    }
}
