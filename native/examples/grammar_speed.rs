//! What a JSON Schema costs per token: generate a constrained document,
//! then replay its tokens through a fresh constraint, timing each step's
//! mask (llguidance) and the masked copy of the logits, against the model's
//! own decode time per token; and the schema's compile time.
//!   cargo run --release --example grammar_speed MODEL SCHEMA.json [TOKENS (default 128)]

use std::time::Instant;

use tern::{Event, Grammar, Model, Options};
use tern_core::{runtime::allows, runtime::Allowed};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> tern::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(model), Some(schema)) = (args.first(), args.get(1)) else {
        eprintln!("usage: grammar_speed MODEL SCHEMA.json [TOKENS]");
        std::process::exit(2);
    };
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(128);
    let source = std::fs::read_to_string(schema).map_err(|source| tern::Error::Io { path: schema.into(), source })?;
    let g = Grammar::json_schema(&source)?;
    let m = Model::load(model)?;
    let t = Instant::now();
    let compiler = m.loaded().grammar()?;
    println!("vocabulary trie and parser factory: {:.0} ms (once per model)", t.elapsed().as_secs_f64() * 1e3);
    let mut compile: Vec<f64> = (0..20)
        .map(|_| {
            let t = Instant::now();
            let _ = compiler.compile(&g);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    println!("schema compile: median {:.2} ms of 20", median(&mut compile));

    let o = Options::default().temperature(0.8).seed(1).max_tokens(n).grammar(g.clone());
    let mut chat = m.chat(None)?;
    chat.options(o);
    let mut result = None;
    for ev in chat.send(&format!("Write an example document for this JSON Schema:\n{source}"))? {
        if let Event::Done(r) = ev? {
            result = Some(r);
        }
    }
    let r = result.expect("a reply ends with Done");
    let decode_ms = r.timings.per_token_p50_ms;

    let n_vocab = m.loaded().model.config.n_vocab;
    let logits: Vec<f32> = (0..n_vocab).map(|i| (i % 97) as f32 * 0.01).collect();
    let mut masked = Vec::with_capacity(n_vocab);
    let mut steps = Vec::new();
    for _ in 0..10 {
        let mut c = compiler.compile(&g)?;
        for &id in &r.tokens {
            let t = Instant::now();
            if let Allowed::Mask(bits) = c.allowed()? {
                masked.clear();
                masked.extend(
                    logits.iter().enumerate().map(|(i, &l)| if allows(bits, i) { l } else { f32::NEG_INFINITY }),
                );
            }
            c.accept(id)?;
            steps.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    let mean = steps.iter().sum::<f64>() / steps.len() as f64;
    let med = median(&mut steps);
    println!(
        "{} tokens ({}): mask + masked copy per token median {:.3} ms, mean {:.3} ms; decode {:.2} ms/token: +{:.1} % (mean)",
        r.tokens.len(),
        r.finish_reason.as_str(),
        med,
        mean,
        decode_ms,
        mean / decode_ms * 100.0
    );
    Ok(())
}
