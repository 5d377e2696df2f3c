//! Mixture of experts: the configuration (how many experts, how many a
//! token uses, how wide each is), the router's rule a family declares, and
//! the routing itself (`super::experts` runs the layer).

/// A mixture-of-experts feed-forward layer's shape and routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moe {
    /// Experts per layer.
    pub n_expert: usize,
    /// Experts each token runs (top-k).
    pub n_expert_used: usize,
    /// Width of each expert's feed-forward layer.
    pub n_ff_exp: usize,
    /// Whether the chosen experts' probabilities are renormalised to sum
    /// to 1 (transformers' `norm_topk_prob`, GGUF `expert_weights_norm`).
    pub norm_topk: bool,
    /// Width of the shared expert every token also runs, gated by a
    /// sigmoid (Qwen2-MoE), if the model has one.
    pub n_ff_shared: Option<usize>,
}

/// Most experts a layer may declare (the largest published models have
/// 256; a file past this is refused before anything is sized by it).
pub(crate) const MAX_EXPERTS: usize = 1024;

/// How a family routes: softmax over every expert's logit, the top k
/// kept, renormalised or not. The families differ only in that rule's
/// default and where a file says it.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "std"), allow(dead_code))] // the HF side needs std
pub(crate) struct Router {
    /// Renormalise, for a GGUF file without `expert_weights_norm`
    /// (llama.cpp's rule for the architecture).
    pub gguf_norm: bool,
    /// config.json's key for it and transformers' default; None: always
    /// `gguf_norm` (Mixtral renormalises, whatever the config says).
    pub hf_norm: Option<(&'static str, bool)>,
    /// The family has a shared expert beside the routed ones.
    pub shared_expert: bool,
    /// The family has dense models too (Llama: a GGUF with experts is
    /// Mixtral, converted), which a file without experts is.
    pub dense_too: bool,
}

impl Moe {
    /// Parameters one layer's experts hold (router, experts, shared).
    pub fn layer_params(&self, n_embd: usize) -> (u64, u64) {
        let (e, f) = (n_embd as u64, self.n_ff_exp as u64);
        let shared = self.n_ff_shared.map_or(0, |s| 3 * e * s as u64 + e);
        let router = e * self.n_expert as u64;
        let total = router + self.n_expert as u64 * 3 * e * f + shared;
        let active = router + self.n_expert_used as u64 * 3 * e * f + shared;
        (active, total)
    }
}

/// Softmax over `logits` into `probs`, then the `k` largest (the lower
/// expert first on a tie), renormalised with `norm`: `ids` and `weights`
/// in ascending expert order (the order their outputs are summed in).
pub(crate) fn route(logits: &[f32], k: usize, norm: bool, probs: &mut [f32], ids: &mut [u32], weights: &mut [f32]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for (p, &l) in probs.iter_mut().zip(logits) {
        *p = libm::expf(l - max);
        sum += *p;
    }
    probs.iter_mut().for_each(|p| *p /= sum);
    // top k by selection: k is small (≤ 8 in every released model)
    let mut n = 0;
    for (i, &p) in probs.iter().enumerate() {
        // position among the kept, which stay sorted by descending p
        let mut at = n;
        while at > 0 && p > weights[at - 1] {
            at -= 1;
        }
        if at == k {
            continue;
        }
        let end = (n + 1).min(k);
        for j in (at + 1..end).rev() {
            (weights[j], ids[j]) = (weights[j - 1], ids[j - 1]);
        }
        (weights[at], ids[at]) = (p, i as u32);
        n = end;
    }
    if norm {
        let total: f32 = weights[..k].iter().sum();
        weights[..k].iter_mut().for_each(|w| *w /= total);
    }
    // ascending expert order
    for i in 1..k {
        let mut j = i;
        while j > 0 && ids[j - 1] > ids[j] {
            ids.swap(j - 1, j);
            weights.swap(j - 1, j);
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(logits: &[f32], k: usize, norm: bool) -> (alloc::vec::Vec<u32>, alloc::vec::Vec<f32>) {
        let mut probs = alloc::vec![0.0; logits.len()];
        let (mut ids, mut w) = (alloc::vec![0; k], alloc::vec![0.0; k]);
        route(logits, k, norm, &mut probs, &mut ids, &mut w);
        (ids, w)
    }

    #[test]
    fn the_top_k_of_the_softmax_in_expert_order() {
        let logits = [0.5, 2.0, -1.0, 1.5, 3.0, 0.0];
        let (ids, w) = routed(&logits, 3, false);
        assert_eq!(ids, [1, 3, 4]);
        let z: f32 = logits.iter().map(|&l| libm::expf(l - 3.0)).sum();
        for (&i, &w) in ids.iter().zip(&w) {
            assert!((w - libm::expf(logits[i as usize] - 3.0) / z).abs() < 1e-7);
        }
        let (ids_n, wn) = routed(&logits, 3, true);
        assert_eq!(ids_n, ids);
        assert!((wn.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((wn[2] / wn[0] - w[2] / w[0]).abs() < 1e-5);
        // one expert, and all of them
        assert_eq!(routed(&logits, 1, true), (alloc::vec![4], alloc::vec![1.0]));
        assert_eq!(routed(&logits, 6, false).0, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_tie_keeps_the_lower_expert() {
        assert_eq!(routed(&[1.0, 2.0, 2.0, 2.0], 2, false).0, [1, 2]);
    }
}
