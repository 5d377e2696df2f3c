//! `tern bench --spec ngram` / `--model-draft`: speculative decoding
//! against plain decoding on real prompts (a JSONL file of chat prompts,
//! `{"name", "kind", "prompt"}`), greedy, the two alternating on each
//! prompt. Reports, for each kind of prompt and thread count, decode
//! tokens/s of both (all the kind's decode tokens over all its decode
//! time, medians over the repetitions), their ratio, the acceptance rate,
//! and whether every speculative output equalled the plain one.

use std::path::Path;

use serde_json::{json, Value};
use tern::{Draft, Loaded, Result, Threads};
use tern_core::{runtime::Generation, Generator, Message, Prompt, Request, Sampling};

use super::speculative::SpecArgs;

/// One chat prompt of the set.
#[derive(serde::Deserialize)]
struct Item {
    name: String,
    kind: String,
    prompt: String,
}

/// Decode tokens and time of one run, its drafts, its tokens.
struct Run {
    tokens: Vec<u32>,
    decoded: f64,
    decode_ms: f64,
    drafted: usize,
    accepted: usize,
}

fn run_one(
    lm: &Loaded,
    e: tern_core::Engine,
    item: &Item,
    n: usize,
    spec: &SpecArgs,
    draft: Option<&Draft>,
) -> Result<Run> {
    let req = Request {
        sampling: Sampling { temperature: Some(0.0), ..Sampling::default() },
        max_tokens: Some(n),
        speculative: spec.speculative()?,
        ..Request::new(Prompt::Messages(vec![Message::new("user", &item.prompt)]))
    };
    let p = lm.prepare(&req, None)?;
    let n_ctx = p.prompt.len() + n + 1;
    let mut session = lm.model.session(n_ctx, 512);
    let vocab = lm.vocab();
    let g: Generation = p.generation_drafted(tern::clock, spec.drafter(draft, n_ctx));
    let r = Generator::over(&lm.model, e, &vocab, &mut session, g).run(|_, _| {})?;
    let t = &r.timings;
    Ok(Run {
        decoded: r.usage.completion_tokens.saturating_sub(1) as f64,
        decode_ms: t.total_ms - t.first_token_ms,
        tokens: r.tokens,
        drafted: r.usage.draft_tokens,
        accepted: r.usage.accepted_draft_tokens,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    v[v.len() / 2]
}

/// Run the set at each thread count; one JSON row per (threads, kind).
pub fn bench(
    lm: &Loaded,
    prompts: &Path,
    spec: &SpecArgs,
    draft: Option<&Draft>,
    threads: &[usize],
    n: usize,
    reps: usize,
) -> Result<Vec<Value>> {
    let text = super::files::read_text(prompts, 1 << 20, "prompt set", "")?;
    let items: Vec<Item> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| super::files::invalid(format!("{}: {e}", prompts.display())))?;
    let plain = SpecArgs::default();
    let mut rows = Vec::new();
    for &t in threads {
        let threads = Threads::new(t);
        let e = tern::engine(&threads, false)?;
        let mut kinds: Vec<&str> = items.iter().map(|i| i.kind.as_str()).collect();
        kinds.dedup();
        for kind in kinds {
            let set: Vec<&Item> = items.iter().filter(|i| i.kind == kind).collect();
            let (mut tps_plain, mut tps_spec) = (Vec::new(), Vec::new());
            let (mut drafted, mut accepted, mut same) = (0, 0, true);
            for rep in 0..reps {
                let (mut a, mut b) = ((0.0, 0.0), (0.0, 0.0));
                for item in &set {
                    // alternate which goes first
                    let (x, y) = if rep % 2 == 0 {
                        let x = run_one(lm, e, item, n, &plain, None)?;
                        (x, run_one(lm, e, item, n, spec, draft)?)
                    } else {
                        let y = run_one(lm, e, item, n, spec, draft)?;
                        (run_one(lm, e, item, n, &plain, None)?, y)
                    };
                    if x.tokens != y.tokens {
                        eprintln!("tern: {}: the speculative output differs from the plain one", item.name);
                        same = false;
                    }
                    a = (a.0 + x.decoded, a.1 + x.decode_ms);
                    b = (b.0 + y.decoded, b.1 + y.decode_ms);
                    drafted += y.drafted;
                    accepted += y.accepted;
                }
                tps_plain.push(a.0 / a.1 * 1e3);
                tps_spec.push(b.0 / b.1 * 1e3);
            }
            let (p, s) = (median(tps_plain), median(tps_spec));
            rows.push(json!({
                "n_threads": if t == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { t },
                "kind": kind, "prompts": set.len(), "n_gen": n, "reps": reps,
                "plain_tps": p, "spec_tps": s, "ratio": s / p,
                "drafted": drafted, "accepted": accepted,
                "acceptance": if drafted > 0 { accepted as f64 / drafted as f64 } else { 0.0 },
                "same_outputs": same,
            }));
        }
    }
    Ok(rows)
}
