//! Log-probabilities of sampled tokens, as OpenAI reports them: the
//! log-softmax of the model's logits (before logit bias, penalties,
//! temperature, truncation and any grammar mask: the model's distribution).

use alloc::vec::Vec;

/// The most alternatives a token may report (OpenAI's `top_logprobs` limit).
pub const MAX_TOP_LOGPROBS: usize = 20;

/// A sampled token's log-probability, and the most likely tokens at its step.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    /// The token taken.
    pub id: u32,
    /// Its log-probability.
    pub logprob: f32,
    /// The `n` most likely tokens with theirs, most likely first (ties: lower id first).
    pub top: Vec<(u32, f32)>,
}

/// The log-probability of `id` under softmax(`logits`), and the `n` most
/// likely tokens (`n` at most [`MAX_TOP_LOGPROBS`]). Sums in f64.
pub(crate) fn token_logprob(logits: &[f32], id: u32, n: usize) -> TokenLogprob {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = logits.iter().map(|&l| libm::exp((l - max) as f64)).sum();
    let log_z = max as f64 + libm::log(sum);
    let lp = |l: f32| (l as f64 - log_z) as f32;
    let n = n.min(MAX_TOP_LOGPROBS).min(logits.len());
    // the n largest by one pass keeping a small sorted list
    let mut top: Vec<(u32, f32)> = Vec::with_capacity(n + 1);
    if n > 0 {
        for (i, &l) in logits.iter().enumerate() {
            if top.len() == n && l <= top[n - 1].1 {
                continue;
            }
            let at = top.partition_point(|&(_, t)| t >= l);
            top.insert(at, (i as u32, l));
            top.truncate(n);
        }
    }
    TokenLogprob {
        id,
        logprob: logits.get(id as usize).map_or(f32::NEG_INFINITY, |&l| lp(l)),
        top: top.into_iter().map(|(i, l)| (i, lp(l))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_softmax_by_hand() {
        let t = token_logprob(&[1.0, 3.0, 2.0, 3.0], 2, 3);
        let z = (1f64.exp() + 2.0 * 3f64.exp() + 2f64.exp()).ln();
        assert!((t.logprob as f64 - (2.0 - z)).abs() < 1e-6);
        // most likely first, equal logits by id
        assert_eq!(t.top.iter().map(|x| x.0).collect::<Vec<_>>(), [1, 3, 2]);
        assert!((t.top[0].1 as f64 - (3.0 - z)).abs() < 1e-6);
        let total: f64 = [1.0f64, 3.0, 2.0, 3.0].iter().map(|l| (l - z).exp()).sum();
        assert!((total - 1.0).abs() < 1e-9);
        assert!(token_logprob(&[0.0; 4], 1, 0).top.is_empty());
        assert_eq!(token_logprob(&[0.0; 4], 1, 99).top.len(), 4);
    }
}
