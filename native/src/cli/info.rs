//! `tern info`: what a GGUF file or an HF directory holds.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;

use tern::Result;
use tern_core::Source as Format;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// The model, as -m takes it (a path, a URL, owner/repo[:QUANT], ...)
    reference: Option<String>,
}

/// One line of the report (written at the end: a closed pipe, as with
/// `tern info | head`, is not an error).
macro_rules! line {
    ($out:ident, $($t:tt)*) => {{
        let _ = writeln!($out, $($t)*);
    }};
}

pub fn run(a: Args) -> Result<()> {
    let mut out = String::new();
    let path = a.load.clone().with_model(a.reference).model_path()?;
    let lm = super::load(&path, &a.load)?;
    let (c, w) = (&lm.model.config, &lm.model.weights);
    let n_bytes = lm.model.n_bytes() - lm.requantized.map_or(0, |r| r.bytes);
    match &lm.source {
        Format::Gguf { version } => line!(out, "file        {} ({n_bytes} bytes, GGUF v{version})", path.display()),
        Format::Hf(h) => {
            line!(out, "directory   {} ({n_bytes} bytes of safetensors, {})", path.display(), h.architecture);
            let dtypes: Vec<String> = h.dtypes.iter().map(|(k, n)| format!("{k}: {n}")).collect();
            line!(out, "shards      {} — {}; saved as {}", h.shards.len(), h.shards.join(", "), dtypes.join(", "));
            if !h.not_loaded.is_empty() {
                line!(out, "not loaded  {} (tern runs the text stack)", h.not_loaded.join(", "));
            }
        }
    }
    line!(out, "name        {}", c.name);
    line!(out, "arch        {}", c.arch.name());
    line!(
        out,
        "dims        n_vocab {} n_embd {} n_layer {} n_head {} n_head_kv {} head_dim {} n_ff {}",
        c.n_vocab,
        c.n_embd,
        c.n_layer,
        c.n_head,
        c.n_head_kv,
        c.head_dim,
        c.n_ff
    );
    line!(out, "context     trained {}", c.n_ctx_train);
    let ctx = c.n_ctx_train.clamp(1, 4096);
    let kv = lm.model.sessions_bytes(1, ctx, 512.min(ctx), tern_core::KvType::F16).unwrap_or(u64::MAX);
    line!(
        out,
        "memory      weights {:.2} GB mapped; KV cache and scratch at ctx {ctx} {:.2} GB; {:.2} GB available",
        tern::limits::mapped_bytes(&lm) as f64 / 1e9,
        kv as f64 / 1e9,
        tern::limits::available_memory() as f64 / 1e9
    );
    line!(
        out,
        "rope        {:?}, base {}, n_rot {}, position scale {}",
        c.rope_style,
        c.rope_base,
        c.n_rot,
        c.rope_pos_scale
    );
    line!(out, "norm eps    {:e}", c.norm_eps);
    let l0 = &w.layers[0];
    line!(
        out,
        "attention   qkv bias {}, q/k norm {}, score scale {}, post-norms {}",
        l0.bq.is_some(),
        l0.q_norm.is_some(),
        c.attn_scale,
        c.post_norms
    );
    if let Some(win) = &c.window {
        let n = win.layers.iter().filter(|&&l| l).count();
        let own = if win.rope_inv_freq.is_some() { ", their own RoPE" } else { "" };
        line!(out, "window      {} positions on {n} of {} layers{own}", win.size, c.n_layer);
    }
    if c.attn_softcap.is_some() || c.final_softcap.is_some() {
        let cap = |c: Option<f32>| c.map_or("none".to_string(), |c| c.to_string());
        line!(out, "softcaps    scores {}, logits {}", cap(c.attn_softcap), cap(c.final_softcap));
    }
    line!(out, "ffn         {:?} gate, embeddings scaled by {}", c.act, c.embd_scale.unwrap_or(1.0));
    if let Some(m) = &c.moe {
        let shared = m.n_ff_shared.map_or(String::new(), |s| format!(", and a shared expert of width {s}"));
        line!(
            out,
            "experts     {} of width {} in each layer, {} a token (softmax, top {}{}){shared}",
            m.n_expert,
            m.n_ff_exp,
            m.n_expert_used,
            m.n_expert_used,
            if m.norm_topk { " renormalised" } else { "" }
        );
    }
    if let Some(g) = &c.gemma3n {
        let (lo, hi) = (g.n_ff.iter().min().unwrap_or(&0), g.n_ff.iter().max().unwrap_or(&0));
        line!(
            out,
            "gemma 3n    AltUp {} streams (active {}), LAuReL rank {}, per-layer inputs {} wide ({} ids), ffn widths {lo}..{hi}",
            g.n_altup,
            g.active,
            g.laurel_rank,
            g.n_embd_per_layer,
            g.n_vocab_per_layer
        );
        let shared: Vec<String> =
            g.kv_source.iter().enumerate().filter(|(l, s)| l != *s).map(|(l, s)| format!("{l}→{s}")).collect();
        let sparse = g.sparsity.iter().filter(|s| s.is_some()).count();
        line!(out, "            K/V read from earlier layers: {}; Gaussian top-k on {sparse} layers", shared.join(" "));
    }
    line!(
        out,
        "output      {}",
        if w.tied_output { "tied to the token embedding (one tensor)" } else { "separate head" }
    );
    let mut counts: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for t in w.matrices() {
        let e = counts.entry(t.ty.name()).or_default();
        e.0 += 1;
        e.1 += t.len as u64;
    }
    let types: Vec<String> =
        counts.iter().map(|(k, (n, b))| format!("{k}: {n} ({:.1} MiB)", *b as f64 / 1048576.0)).collect();
    line!(out, "matrices    {} — {}", w.matrices().count(), types.join(", "));
    let f = w.footprint(c.moe.as_ref().map_or(1, |m| m.n_expert_used));
    let n = |p: u64| {
        if p >= 1_000_000_000 {
            format!("{:.2} B", p as f64 / 1e9)
        } else {
            format!("{:.1} M", p as f64 / 1e6)
        }
    };
    match c.moe {
        None => line!(out, "params      {}", n(f.params)),
        Some(_) => line!(
            out,
            "params      {} in all, {} active a token ({:.2} of {:.2} GB read a token)",
            n(f.params),
            n(f.active_params),
            f.active_bytes as f64 / 1e9,
            f.bytes as f64 / 1e9
        ),
    }
    if let Some(r) = lm.requantized {
        line!(
            out,
            "quantized   at load to {}: {} matrices ({:.1} MiB in memory), {} kept as they were",
            r.to.name(),
            r.converted,
            r.bytes as f64 / 1048576.0,
            r.kept
        );
    }
    if lm.repacked > 0 {
        let kernels = tern::kernels::select()?;
        let mut n = std::collections::BTreeMap::<&str, usize>::new();
        for t in w.matrices().filter(|t| !t.rows8.is_empty()) {
            *n.entry(t.ty.name()).or_default() += 1;
        }
        let types: Vec<String> = n.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        line!(
            out,
            "repacked    at load for the {} kernels, 8 rows interleaved: {} ({:.1} MiB in memory; --no-repack: none)",
            kernels.name(),
            types.join(", "),
            lm.repacked as f64 / 1048576.0
        );
    }
    match &lm.tokenizer {
        Some(tok) => {
            line!(
                out,
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
                Some(t) => line!(
                    out,
                    "template    {} chars: {}",
                    t.len(),
                    t.chars().take(120).collect::<String>().replace('\n', "\\n")
                ),
                None => line!(out, "template    none"),
            }
        }
        None => line!(out, "tokenizer   none (run with --prompt-ids); end ids {:?}", lm.eog()),
    }
    let d = &lm.defaults.sampling;
    let sampling = [d.temperature, d.top_p, d.min_p, d.repeat_penalty].iter().any(Option::is_some);
    if sampling || d.top_k.is_some() {
        line!(
            out,
            "generation  temperature {:?} top_k {:?} top_p {:?} min_p {:?} repetition_penalty {:?} (generation_config.json)",
            d.temperature, d.top_k, d.top_p, d.min_p, d.repeat_penalty
        );
    }
    let loaded_ms = lm.load_time.as_secs_f64() * 1e3;
    let how = match (lm.requantized.is_some(), lm.repacked > 0) {
        (true, _) => "mmap, float weights quantized",
        (false, true) => "mmap, a copy of some weights repacked",
        (false, false) => "mmap, no copy of weights",
    };
    line!(out, "load        {loaded_ms:.1} ms ({how})");
    line!(out, "kernels     {}", tern::kernels::report()?);
    let _ = std::io::stdout().write_all(out.as_bytes());
    Ok(())
}
