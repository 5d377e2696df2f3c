//! Weights bound by name: views (buffer + offset + type + shape) into the
//! model's bytes, looked up through `crate::tensors::TensorDir`.

use alloc::format;
use alloc::vec::Vec;

use super::binder::Binder;
use super::config::Config;
use super::gemma3n_weights::{self, Gemma3nLayer, Gemma3nWeights};
use super::moe::Moe;
pub use super::tensor_ref::TensorRef;
use crate::error::{Error, Result};
use crate::tensors::TensorDir;

/// One transformer block's weights.
#[derive(Debug, Clone)]
pub struct LayerWeights {
    /// RMSNorm before attention.
    pub attn_norm: Vec<f32>,
    /// Query projection.
    pub wq: TensorRef,
    /// Key projection (none in a layer that attends to another's keys).
    pub wk: Option<TensorRef>,
    /// Value projection (likewise).
    pub wv: Option<TensorRef>,
    /// Attention output projection.
    pub wo: TensorRef,
    /// Query bias (Qwen2).
    pub bq: Option<Vec<f32>>,
    /// Key bias (Qwen2).
    pub bk: Option<Vec<f32>>,
    /// Value bias (Qwen2).
    pub bv: Option<Vec<f32>>,
    /// Qwen3: RMSNorm over each head of Q and K.
    pub q_norm: Option<Vec<f32>>,
    /// Qwen3: RMSNorm over each head of K.
    pub k_norm: Option<Vec<f32>>,
    /// Gemma: RMSNorm of the attention output, before the residual add.
    pub post_attn_norm: Option<Vec<f32>>,
    /// RMSNorm before the feed-forward layer.
    pub ffn_norm: Vec<f32>,
    /// Gemma: RMSNorm of the feed-forward output, before the residual add.
    pub post_ffn_norm: Option<Vec<f32>>,
    /// The feed-forward layer.
    pub ffn: Ffn,
    /// Gemma 3n: AltUp, LAuReL and the per-layer input.
    pub gemma3n: Option<Gemma3nLayer>,
}

/// A feed-forward layer: one MLP, or a mixture of experts.
#[derive(Debug, Clone)]
pub enum Ffn {
    /// One gated MLP every token runs.
    Dense(Mlp),
    /// Experts, of which a router picks each token's few.
    Moe(Experts),
}

/// A gated MLP: `down(act(gate(x)) · up(x))`.
#[derive(Debug, Clone)]
pub struct Mlp {
    /// Gate projection.
    pub gate: TensorRef,
    /// Up projection.
    pub up: TensorRef,
    /// Down projection.
    pub down: TensorRef,
}

/// A mixture-of-experts layer's weights.
#[derive(Debug, Clone)]
pub struct Experts {
    /// The router: one logit per expert (`ffn_gate_inp`).
    pub router: TensorRef,
    /// The experts (GGUF's stacked `ffn_*_exps`: views of their rows).
    pub experts: Vec<Mlp>,
    /// Qwen2-MoE: the shared expert every token runs.
    pub shared: Option<SharedExpert>,
}

/// An expert every token runs, scaled by `sigmoid(x · gate)`.
#[derive(Debug, Clone)]
pub struct SharedExpert {
    /// The expert.
    pub mlp: Mlp,
    /// Its gate (`ffn_gate_inp_shexp`), one weight per input.
    pub gate: Vec<f32>,
}

impl Mlp {
    fn matrices(&self) -> [&TensorRef; 3] {
        [&self.gate, &self.up, &self.down]
    }
    fn matrices_mut(&mut self) -> [&mut TensorRef; 3] {
        [&mut self.gate, &mut self.up, &mut self.down]
    }
}

impl LayerWeights {
    /// The layer's matrices, an expert's with `true`.
    fn matrices(&self) -> Vec<(&TensorRef, bool)> {
        let attn = [Some(&self.wq), self.wk.as_ref(), self.wv.as_ref(), Some(&self.wo)].into_iter().flatten();
        let mut v: Vec<(&TensorRef, bool)> = attn.map(|t| (t, false)).collect();
        v.extend(self.gemma3n.iter().flat_map(|g| g.matrices().map(|t| (t, false))));
        match &self.ffn {
            Ffn::Dense(m) => v.extend(m.matrices().map(|t| (t, false))),
            Ffn::Moe(x) => {
                v.push((&x.router, false));
                v.extend(x.experts.iter().flat_map(|m| m.matrices().map(|t| (t, true))));
                v.extend(x.shared.iter().flat_map(|s| s.mlp.matrices().map(|t| (t, false))));
            }
        }
        v
    }
    fn matrices_mut(&mut self) -> Vec<(&mut TensorRef, bool)> {
        let attn = [Some(&mut self.wq), self.wk.as_mut(), self.wv.as_mut(), Some(&mut self.wo)].into_iter().flatten();
        let mut v: Vec<(&mut TensorRef, bool)> = attn.map(|t| (t, false)).collect();
        v.extend(self.gemma3n.iter_mut().flat_map(|g| g.matrices_mut().map(|t| (t, false))));
        match &mut self.ffn {
            Ffn::Dense(m) => v.extend(m.matrices_mut().map(|t| (t, false))),
            Ffn::Moe(x) => {
                v.push((&mut x.router, false));
                v.extend(x.experts.iter_mut().flat_map(|m| m.matrices_mut().map(|t| (t, true))));
                v.extend(x.shared.iter_mut().flat_map(|s| s.mlp.matrices_mut().map(|t| (t, false))));
            }
        }
        v
    }
}

/// All of a model's weights.
#[derive(Debug, Clone)]
pub struct Weights {
    /// The token embedding.
    pub token_embd: TensorRef,
    /// The final RMSNorm.
    pub output_norm: Vec<f32>,
    /// The output head; `token_embd` itself when the model ties them.
    pub output: TensorRef,
    /// Whether the head is the embedding.
    pub tied_output: bool,
    /// The transformer blocks.
    pub layers: Vec<LayerWeights>,
    /// Gemma 3n: the per-layer embedding and AltUp's projections.
    pub gemma3n: Option<Gemma3nWeights>,
}

/// What the weights hold and what a token reads of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Parameters of every matrix (the embedding and head included).
    pub params: u64,
    /// Of them, those one token runs (a dense model's all).
    pub active_params: u64,
    /// Bytes of every matrix.
    pub bytes: u64,
    /// Of them, those one token reads.
    pub active_bytes: u64,
}

/// Llama-3 style RoPE frequency factors, if the file has them.
pub(crate) fn rope_freq_factors(dir: &dyn TensorDir) -> Result<Option<Vec<f32>>> {
    rope_factors(dir, "rope_freqs.weight")
}

/// A vector of RoPE factors (`rope_freqs`, or LongRoPE's
/// `rope_factors_long`/`_short`), if the file has it.
pub(crate) fn rope_factors(dir: &dyn TensorDir, name: &str) -> Result<Option<Vec<f32>>> {
    let Some(t) = dir.get(name) else {
        return Ok(None);
    };
    if t.n_elements() > crate::backend::scalar::MAX_HEAD_DIM as u64 / 2 {
        let detail = format!("{} factors, more than any head has rotated pairs", t.n_elements());
        return Err(Error::TensorShape { tensor: name.into(), detail });
    }
    let b = Binder::new(dir, "rope", true);
    let v = b.vector(name, t.n_elements() as usize);
    b.finish(false)?;
    Ok(Some(v))
}

/// What binding expects beyond the config's dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expect {
    /// Whether the output head is the embedding: None = when the file has
    /// no head (GGUF); Some = as the config says (HF `tie_word_embeddings`;
    /// a stored head of a tied model is ignored, as transformers does).
    pub tied: Option<bool>,
    /// Q/K/V biases: None = when present; Some = required or absent.
    pub qkv_bias: Option<bool>,
    /// Every tensor of the file must be used (HF checkpoints).
    pub strict: bool,
    /// Norm weights are stored as w for a norm that scales by 1 + w
    /// (transformers' Gemma); binding adds the 1, so they read as GGUF's,
    /// whose converter added it.
    pub norm_plus_one: bool,
}

impl Expect {
    pub const GGUF: Expect = Expect { tied: None, qkv_bias: None, strict: false, norm_plus_one: false };
}

impl Weights {
    /// Check every tensor the config needs (present, shape, type) and, with
    /// `strict`, that the directory holds nothing else; report all problems
    /// together. Reads no tensor data.
    pub(crate) fn check(dir: &dyn TensorDir, c: &Config, x: Expect) -> Result<()> {
        Self::bind_with(dir, c, x, false).map(|_| ())
    }

    /// Check (as `check`), then bind: small vectors are read into memory,
    /// matrices stay views into the buffers.
    pub(crate) fn bind(dir: &dyn TensorDir, c: &Config, x: Expect) -> Result<Weights> {
        Self::check(dir, c, x)?;
        Self::bind_with(dir, c, x, true)
    }

    fn bind_with(dir: &dyn TensorDir, c: &Config, x: Expect, read: bool) -> Result<Weights> {
        let b = Binder::new(dir, c.arch.name(), read);
        let block = c.arch.family().block;
        let (e, q, kv, ff) = (c.n_embd, c.q_dim(), c.kv_dim(), c.n_ff);
        let token_embd = b.matrix("token_embd.weight", e, c.n_vocab);
        let tied = x.tied.unwrap_or_else(|| !b.has("output.weight"));
        let output = if tied { token_embd.clone() } else { b.matrix("output.weight", e, c.n_vocab) };
        if tied {
            b.mark_used("output.weight");
        }
        let mut layers = Vec::with_capacity(c.n_layer);
        for i in 0..c.n_layer {
            let n = |s: &str| format!("blk.{i}.{s}");
            let norm = |s: &str, len: usize| b.norm(&n(s), len, x.norm_plus_one);
            let qk_norm = |s: &str, len: usize| match block.qk_norm {
                true => Some(norm(s, len)),
                false => b.has(&n(s)).then(|| norm(s, len)),
            };
            let post_norm = |s: &str| c.post_norms.then(|| norm(s, e));
            let bias = |s: &str, len: usize| match x.qkv_bias {
                None => b.opt_vector(&n(s), len),
                Some(true) => Some(b.vector(&n(s), len)),
                Some(false) => None,
            };
            // Phi-3 stores Q, K and V as one matrix, gate and up as another:
            // bound as views of their rows
            let (wq, wk, wv, ffn) = if block.fused {
                let qkv = b.matrix(&n("attn_qkv.weight"), e, q + 2 * kv);
                let gate_up = b.matrix(&n("ffn_up.weight"), e, 2 * ff);
                let (rows_qkv, rows_gu) = (|r| qkv.rows(r), |r| gate_up.rows(r));
                let mlp =
                    Mlp { gate: rows_gu(0..ff), up: rows_gu(ff..2 * ff), down: b.matrix(&n("ffn_down.weight"), ff, e) };
                (rows_qkv(0..q), Some(rows_qkv(q..q + kv)), Some(rows_qkv(q + kv..q + 2 * kv)), Ffn::Dense(mlp))
            } else {
                let ffn = match &c.moe {
                    None => Ffn::Dense(mlp(&b, &n(""), "", e, c.n_ff_of(i))),
                    Some(moe) => Ffn::Moe(experts(&b, i, moe, e)),
                };
                let wq = b.matrix(&n("attn_q.weight"), e, q);
                // a layer attending to another's keys has none of its own (a
                // GGUF file may still carry them: unused)
                let (wk, wv) = match c.kv_source(i) == i {
                    true => (Some(b.matrix(&n("attn_k.weight"), e, kv)), Some(b.matrix(&n("attn_v.weight"), e, kv))),
                    false => {
                        for s in ["attn_k.weight", "attn_v.weight", "attn_k_norm.weight"] {
                            b.mark_used(&n(s));
                        }
                        (None, None)
                    }
                };
                (wq, wk, wv, ffn)
            };
            // OLMoE normalises all of Q and K at once, the others each head
            let (q_len, k_len) = if c.qk_norm_whole { (q, kv) } else { (c.head_dim, c.head_dim) };
            layers.push(LayerWeights {
                attn_norm: norm("attn_norm.weight", e),
                wq,
                wk,
                wv,
                wo: b.matrix(&n("attn_output.weight"), q, e),
                bq: bias("attn_q.bias", q),
                bk: bias("attn_k.bias", kv),
                bv: bias("attn_v.bias", kv),
                q_norm: qk_norm("attn_q_norm.weight", q_len),
                k_norm: match c.kv_source(i) == i {
                    true => qk_norm("attn_k_norm.weight", k_len),
                    false => None,
                },
                post_attn_norm: post_norm("post_attention_norm.weight"),
                ffn_norm: norm("ffn_norm.weight", e),
                post_ffn_norm: post_norm("post_ffw_norm.weight"),
                ffn,
                gemma3n: c.gemma3n.as_ref().map(|g| gemma3n_weights::layer(&b, i, g, e)),
            });
        }
        let output_norm = b.norm("output_norm.weight", e, x.norm_plus_one);
        let gemma3n = c.gemma3n.as_ref().map(|g| gemma3n_weights::model(&b, g, e, c.n_layer));
        b.finish(x.strict)?;
        Ok(Weights { token_embd, output_norm, output, tied_output: tied, layers, gemma3n })
    }

    /// Every matrix, for reporting.
    pub fn matrices(&self) -> impl Iterator<Item = &TensorRef> {
        self.matrices_of(true)
    }

    /// Parameters and bytes of the matrices: all of them, and those one
    /// token reads (of a mixture's experts, the `n_expert_used` it runs —
    /// an average expert's bytes).
    pub fn footprint(&self, n_expert_used: usize) -> Footprint {
        let (mut f, mut experts) = (Footprint::default(), (0u64, 0u64, 0u64));
        for l in &self.layers {
            let n_expert = if let Ffn::Moe(x) = &l.ffn { x.experts.len() as u64 } else { 1 };
            for (t, expert) in l.matrices() {
                let (p, b) = ((t.n_rows * t.n_cols) as u64, t.len as u64);
                if expert {
                    experts = (experts.0 + p, experts.1 + b, n_expert);
                } else {
                    (f.active_params, f.active_bytes) = (f.active_params + p, f.active_bytes + b);
                }
                (f.params, f.bytes) = (f.params + p, f.bytes + b);
            }
            if experts.2 > 0 {
                let used = n_expert_used as u64;
                f.active_params += experts.0 / experts.2 * used;
                f.active_bytes += experts.1 / experts.2 * used;
            }
            experts = (0, 0, 0);
        }
        let head = [&self.token_embd].into_iter().chain((!self.tied_output).then_some(&self.output));
        let lookup = self.gemma3n.as_ref().map(|g| &g.per_layer_embd);
        for t in head.chain(self.gemma3n.iter().flat_map(|g| g.matrices())) {
            let (p, b) = ((t.n_rows * t.n_cols) as u64, t.len as u64);
            f.params += p;
            f.bytes += b;
            // a token reads one row of the per-layer embedding
            let lookup = lookup.is_some_and(|l| core::ptr::eq(l, t));
            let (p, b) = if lookup { (t.n_cols as u64, b / t.n_rows.max(1) as u64) } else { (p, b) };
            f.active_params += p;
            f.active_bytes += b;
        }
        f
    }

    /// Every matrix but the experts'.
    pub(crate) fn matrices_of(&self, experts: bool) -> impl Iterator<Item = &TensorRef> {
        let head = [&self.token_embd].into_iter().chain((!self.tied_output).then_some(&self.output));
        let head = head.chain(self.gemma3n.iter().flat_map(|g| g.matrices()));
        let layers = self.layers.iter().flat_map(|l| l.matrices());
        head.chain(layers.filter(move |(_, x)| experts || !*x).map(|(t, _)| t))
    }

    /// `f` on every matrix once (re-pointing them at rewritten copies): a
    /// tensor bound twice — a tied head — gets what `f` made of its first
    /// binding.
    pub fn each_matrix_once(&mut self, mut f: impl FnMut(&mut TensorRef) -> Result<()>) -> Result<()> {
        self.each_once(true, &mut f)
    }

    /// As `each_matrix_once`, the experts' left out (`experts` false):
    /// rewrites that would read every expert at load, which a mapped MoE
    /// model's decode never does.
    pub(crate) fn each_once(&mut self, experts: bool, f: &mut dyn FnMut(&mut TensorRef) -> Result<()>) -> Result<()> {
        let mut done: Vec<((usize, usize), TensorRef)> = Vec::new();
        let head = [&mut self.token_embd].into_iter().chain((!self.tied_output).then_some(&mut self.output));
        let head = head.chain(self.gemma3n.iter_mut().flat_map(|g| g.matrices_mut()));
        let layers = self.layers.iter_mut().flat_map(|l| l.matrices_mut());
        let layers = layers.filter(|(_, x)| experts || !*x).map(|(t, _)| t);
        for t in head.chain(layers) {
            let key = (t.buf, t.start);
            if let Some((_, first)) = done.iter().find(|(k, _)| *k == key) {
                *t = first.clone();
                continue;
            }
            f(t)?;
            done.push((key, t.clone()));
        }
        if self.tied_output {
            self.output = self.token_embd.clone();
        }
        Ok(())
    }
}

/// A gated MLP's three matrices: `ffn_{gate,up,down}{suffix}` of the layer
/// prefix `p` (`blk.N.`).
fn mlp<D: TensorDir + ?Sized>(b: &Binder<D>, p: &str, suffix: &str, e: usize, ff: usize) -> Mlp {
    Mlp {
        gate: b.matrix(&format!("{p}ffn_gate{suffix}.weight"), e, ff),
        up: b.matrix(&format!("{p}ffn_up{suffix}.weight"), e, ff),
        down: b.matrix(&format!("{p}ffn_down{suffix}.weight"), ff, e),
    }
}

/// Layer `i`'s router, experts and shared expert: GGUF's stacked
/// `ffn_*_exps` as views of their rows, or one tensor per expert
/// (`ffn_gate.E.weight`: HF checkpoints, older GGUF files).
fn experts<D: TensorDir + ?Sized>(b: &Binder<D>, i: usize, moe: &Moe, e: usize) -> Experts {
    let p = format!("blk.{i}.");
    let (n, ff) = (moe.n_expert, moe.n_ff_exp);
    let experts = if b.has(&format!("{p}ffn_gate_exps.weight")) {
        let stacked = |w: &str, cols, rows_| b.stacked(&format!("{p}ffn_{w}_exps.weight"), cols, rows_, n);
        let (gate, up, down) = (stacked("gate", e, ff), stacked("up", e, ff), stacked("down", ff, e));
        let rows_of = |t: &TensorRef, r: usize, x: usize| t.rows(x * r..(x + 1) * r);
        (0..n)
            .map(|x| Mlp { gate: rows_of(&gate, ff, x), up: rows_of(&up, ff, x), down: rows_of(&down, e, x) })
            .collect()
    } else {
        (0..n).map(|x| mlp(b, &p, &format!(".{x}"), e, ff)).collect()
    };
    let shared = moe.n_ff_shared.map(|sf| SharedExpert {
        mlp: mlp(b, &p, "_shexp", e, sf),
        gate: b.vector_or_row(&format!("{p}ffn_gate_inp_shexp.weight"), e),
    });
    Experts { router: b.matrix(&format!("{p}ffn_gate_inp.weight"), e, n), experts, shared }
}

impl super::requant::Matrices for Weights {
    fn n_matrices(&self) -> usize {
        self.matrices().count()
    }
    fn each_matrix_once(&mut self, f: &mut dyn FnMut(&mut TensorRef) -> Result<()>) -> Result<()> {
        self.each_once(true, f)
    }
}
