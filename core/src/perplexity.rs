//! Perplexity the way llama.cpp's llama-perplexity computes it:
//! non-overlapping windows of `n_ctx` tokens, each evaluated from an empty
//! cache, the second half of each window scored.

use crate::error::{Error, Result};
use crate::model::{Engine, KvType, Logits, Model};
#[cfg(feature = "std")]
use crate::tokenizer::Tokenizer;

/// A perplexity measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perplexity {
    /// exp(mean negative log-likelihood).
    pub ppl: f64,
    /// Standard error of the perplexity estimate (as llama.cpp reports).
    pub stderr: f64,
    /// Windows scored.
    pub n_chunks: usize,
    /// Tokens scored.
    pub n_scored: usize,
}

/// `-log p(target)` from one row of logits, as llama-perplexity computes
/// it: each `expf(l - max)` in f32, summed and logged in f64.
pub fn nll(logits: &[f32], target: u32) -> f64 {
    let max = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let sum: f64 = logits.iter().map(|&l| libm::expf(l - max) as f64).sum();
    libm::log(sum) - (logits[target as usize] - max) as f64
}

/// A text's ids as llama-perplexity tokenizes it, special tokens added (BOS
/// first where the model adds one), so that the windows are llama.cpp's;
/// and the BOS that starts each window, if the model adds one.
#[cfg(feature = "std")]
pub fn tokenize(tok: &Tokenizer, text: &str) -> Result<(alloc::vec::Vec<u32>, Option<u32>)> {
    Ok((tok.encode(text, true)?, tok.add_bos.then_some(tok.bos).flatten()))
}

/// `tokens`, `bos`: from [`tokenize`].
/// `kv`: the cache's element type (`e.kv_type()` by default).
/// `max_chunks`: evaluate only the first windows (None = all).
#[allow(clippy::too_many_arguments)]
pub fn perplexity<B: AsRef<[u8]>>(
    model: &Model<B>,
    e: &Engine,
    kv: KvType,
    tokens: &[u32],
    n_ctx: usize,
    bos: Option<u32>,
    max_chunks: Option<usize>,
    mut progress: impl FnMut(usize, f64),
) -> Result<Perplexity> {
    let mut n_chunks = tokens.len() / n_ctx.max(1);
    if n_ctx < 4 || n_chunks == 0 {
        return Err(Error::InvalidArgument {
            what: alloc::format!("{} tokens make no window of {n_ctx} (need 2 × n_ctx ≥ 8)", tokens.len()),
        });
    }
    if let Some(m) = max_chunks {
        n_chunks = n_chunks.min(m);
    }
    let first = n_ctx / 2;
    let mut session = model.session_kv(n_ctx, n_ctx, kv);
    let (mut sum, mut sum2, mut count) = (0.0f64, 0.0f64, 0usize);
    let mut window = alloc::vec![0u32; n_ctx];
    for c in 0..n_chunks {
        window.copy_from_slice(&tokens[c * n_ctx..(c + 1) * n_ctx]);
        if let Some(b) = bos {
            window[0] = b;
        }
        session.truncate(0);
        // logits for the scored positions only (the output head is the
        // largest matrix of a small model)
        let logits = session.forward(model, e, &window, Logits::From(first))?;
        let nv = model.config.n_vocab;
        for j in first..n_ctx - 1 {
            // score against the original text's next token
            let row = j - first;
            let v = nll(&logits[row * nv..(row + 1) * nv], tokens[c * n_ctx + j + 1]);
            sum += v;
            sum2 += v * v;
            count += 1;
        }
        progress(c, libm::exp(sum / count as f64));
    }
    let mean = sum / count as f64;
    let var = (sum2 / count as f64 - mean * mean).max(0.0);
    let ppl = libm::exp(mean);
    Ok(Perplexity { ppl, stderr: ppl * libm::sqrt(var / (count as f64 - 1.0).max(1.0)), n_chunks, n_scored: count })
}
