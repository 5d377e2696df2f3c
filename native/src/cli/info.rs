//! `tern info`: what a GGUF file holds.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tern::Result;
use tern_core::gguf::Gguf;

#[derive(clap::Args)]
pub struct Args {
    /// GGUF model file [default: the Qwen2.5-Coder-0.5B model in the cache]
    model: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    let path = super::model_path(a.model)?;
    let lm = tern::load(&path)?;
    let (c, w, tok) = (&lm.model.config, &lm.model.weights, &lm.tokenizer);
    let g = Gguf::parse(lm.model.bytes())?;
    println!("file        {} ({} bytes, GGUF v{})", path.display(), lm.model.bytes().len(), g.version);
    println!("name        {}", c.name);
    println!("arch        {}", c.arch.name());
    println!(
        "dims        n_vocab {} n_embd {} n_layer {} n_head {} n_head_kv {} head_dim {} n_ff {}",
        c.n_vocab, c.n_embd, c.n_layer, c.n_head, c.n_head_kv, c.head_dim, c.n_ff
    );
    println!("context     trained {}", c.n_ctx_train);
    println!(
        "rope        {:?}, base {}, n_rot {}, position scale {}",
        c.rope_style, c.rope_base, c.n_rot, c.rope_pos_scale
    );
    println!("norm eps    {:e}", c.norm_eps);
    let l0 = &w.layers[0];
    println!("attention   qkv bias {}, q/k norm {}", l0.bq.is_some(), l0.q_norm.is_some());
    println!("output      {}", if w.tied_output { "tied to token_embd" } else { "separate output.weight" });
    let mut counts: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for t in &g.tensors {
        let e = counts.entry(t.ty.name()).or_default();
        e.0 += 1;
        e.1 += t.data.len() as u64;
    }
    let types: Vec<String> =
        counts.iter().map(|(k, (n, b))| format!("{k}: {n} ({:.1} MiB)", *b as f64 / 1048576.0)).collect();
    println!("tensors     {} — {}", g.tensors.len(), types.join(", "));
    println!(
        "tokenizer   {} / {}, {} tokens, bos {:?}, eos {:?}, end-of-generation {:?}, add_bos {}",
        tok.model,
        tok.pre,
        tok.n_vocab(),
        tok.bos,
        tok.eos,
        tok.eog,
        tok.add_bos
    );
    match &tok.chat_template {
        Some(t) => {
            println!("template    {} chars: {}", t.len(), t.chars().take(120).collect::<String>().replace('\n', "\\n"))
        }
        None => println!("template    none"),
    }
    let loaded_ms = lm.load_time.as_secs_f64() * 1e3;
    println!("load        {loaded_ms:.1} ms (mmap, no copy of weights)");
    Ok(())
}
