//! Speculative decoding on the tiny synthetic llama: greedy output and
//! logits equal plain decoding's with either drafter, and sampling keeps
//! the target's distribution (a chi-square test that an always-accept
//! rule fails).

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::backend::Scalar;
use crate::gguf::tiny::Tiny;
use crate::parallel::Serial;
use crate::sampler::SamplerConfig;
use crate::speculative::{DraftModel, Drafter, Ngram, SpecConfig, Speculation};

/// Every token is one letter; none ends generation.
struct Letters;
impl Vocab for Letters {
    fn token_bytes(&self, id: u32) -> &[u8] {
        &b"abcdefghijklmnopqrstuvwxyz012345"[id as usize % 32..][..1]
    }
    fn is_eog(&self, _: u32) -> bool {
        false
    }
}

const E: Engine = Engine { kernels: &Scalar, par: &Serial, exact: false };

fn model() -> Arc<Model<Vec<u8>>> {
    Arc::new(Model::load_gguf(Tiny::default().gguf()).unwrap())
}

fn run(
    m: &Model<Vec<u8>>,
    s: &mut Session,
    prompt: &[u32],
    cfg: &GenerateConfig,
    spec: Option<Speculation>,
) -> GenerationResult {
    let mut g = Generation::new(prompt, cfg.clone());
    if let Some(sp) = spec {
        g = g.with_speculation(sp);
    }
    loop {
        let p = Parts { model: m, engine: &E, vocab: &Letters, session: s };
        match g.next(p).unwrap().unwrap() {
            Event::Done(r) => return r,
            Event::Token { .. } => {}
        }
    }
}

fn spec(d: impl Drafter + 'static, n_max: usize) -> Speculation {
    Speculation::new(SpecConfig { n_max, n_min: 0, p_min: 0.0 }, Box::new(d))
}

#[test]
fn greedy_tokens_and_logprobs_equal_plain_decoding() {
    let m = model();
    let cfg =
        GenerateConfig { max_tokens: 40, sampler: SamplerConfig::greedy(), logprobs: Some(3), ..Default::default() };
    // a prompt that repeats (n-gram drafts find it) and one that does not
    for (i, prompt) in
        [vec![1u32, 5, 9, 2, 7, 1, 5, 9, 2, 7, 1, 5], vec![3, 1, 4, 15, 9, 26, 5]].into_iter().enumerate()
    {
        let plain = run(&m, &mut m.session(64, 8), &prompt, &cfg, None);
        let drafters: Vec<Speculation> = vec![
            spec(Ngram, 4),
            spec(DraftModel::new(m.clone(), 64, 8, 0.0), 5),
            // another model as the draft: drafts mostly wrong
            spec(
                DraftModel::new(
                    Arc::new(
                        Model::load_gguf(
                            Tiny::default().with("llama.rope.freq_base", crate::gguf::Value::F32(100.0)).gguf(),
                        )
                        .unwrap(),
                    ),
                    64,
                    8,
                    0.0,
                ),
                3,
            ),
        ];
        for (k, sp) in drafters.into_iter().enumerate() {
            let r = run(&m, &mut m.session(64, 8), &prompt, &cfg, Some(sp));
            assert_eq!(r.tokens, plain.tokens, "drafter {k}");
            // each token's log-probability and alternatives, computed from
            // its logits row: the same bits
            assert_eq!(r.logprobs, plain.logprobs, "drafter {k}");
            assert_eq!(r.text, plain.text);
            assert!(r.usage.draft_tokens > 0 || (k, i) == (0, 1), "drafter {k} drafted nothing");
            assert!(r.usage.accepted_draft_tokens <= r.usage.draft_tokens);
            if k == 1 {
                // the model drafting for itself is always right
                assert_eq!(r.usage.accepted_draft_tokens, r.usage.draft_tokens);
                assert!(r.usage.draft_tokens >= 30, "{:?}", r.usage);
            }
        }
    }
}

/// The first three tokens of `n` runs (seeds 0..n), counted by value.
fn joint(n: u64, mut three: impl FnMut(u64) -> [u32; 3]) -> alloc::collections::BTreeMap<[u32; 3], u64> {
    let mut counts = alloc::collections::BTreeMap::new();
    for seed in 0..n {
        *counts.entry(three(seed)).or_insert(0) += 1;
    }
    counts
}

/// P(χ² ≥ stat) with `df` degrees of freedom: the regularized upper
/// incomplete gamma Q(df/2, stat/2), by its series or continued fraction.
fn chi_square_p(stat: f64, df: f64) -> f64 {
    let (a, x) = (df / 2.0, stat / 2.0);
    let lg = libm::lgamma(a);
    if x < a + 1.0 {
        let (mut sum, mut term, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
        }
        1.0 - sum * libm::exp(-x + a * libm::log(x) - lg)
    } else {
        let tiny = 1e-300;
        let (mut b, mut c, mut d) = (x + 1.0 - a, 1.0 / tiny, 1.0 / (x + 1.0 - a));
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            h *= d * c;
        }
        libm::exp(-x + a * libm::log(x) - lg) * h
    }
}

/// Homogeneity of two samples' counts: the p-value of Pearson's χ².
fn same_distribution_p(
    a: &alloc::collections::BTreeMap<[u32; 3], u64>,
    b: &alloc::collections::BTreeMap<[u32; 3], u64>,
) -> f64 {
    let keys: alloc::collections::BTreeSet<_> = a.keys().chain(b.keys()).collect();
    let (na, nb) = (a.values().sum::<u64>() as f64, b.values().sum::<u64>() as f64);
    let mut stat = 0.0;
    for k in &keys {
        let (oa, ob) = (*a.get(*k).unwrap_or(&0) as f64, *b.get(*k).unwrap_or(&0) as f64);
        let col = oa + ob;
        let (ea, eb) = (col * na / (na + nb), col * nb / (na + nb));
        stat += (oa - ea) * (oa - ea) / ea + (ob - eb) * (ob - eb) / eb;
    }
    chi_square_p(stat, keys.len() as f64 - 1.0)
}

#[test]
fn chi_square_p_values_match_tables() {
    // (statistic, df, p) from standard tables
    for (x, df, p) in
        [(3.841, 1.0, 0.05), (6.635, 1.0, 0.01), (18.307, 10.0, 0.05), (82.529, 63.0, 0.05), (50.0, 63.0, 0.8826)]
    {
        assert!((chi_square_p(x, df) - p).abs() < 2e-3, "{x} {df}: {}", chi_square_p(x, df));
    }
}

#[test]
fn speculative_sampling_keeps_the_targets_distribution() {
    const SEEDS: u64 = 20_000;
    let m = model();
    let sampler = SamplerConfig { temperature: 1.0, top_k: 4, top_p: 1.0, min_p: 0.0, ..SamplerConfig::default() };
    let prompt = [1u32, 5, 9, 2];
    // four tokens, so that the first step after the first token drafts two
    let cfg = |seed| GenerateConfig {
        max_tokens: 4,
        sampler: SamplerConfig { seed: Some(seed), ..sampler.clone() },
        ..Default::default()
    };
    let first3 = |r: GenerationResult| -> [u32; 3] { r.tokens[..3].try_into().unwrap() };
    let mut s = m.session(16, 8);
    let plain = joint(SEEDS, |seed| first3(run(&m, &mut s, &prompt, &cfg(seed), None)));
    // the draft: the target's own greedy choice, which sampling takes
    // about as often as it is likely — drafts both taken and not
    let mut d = m.session(16, 8);
    let (mut drafted, mut accepted) = (0, 0);
    let speculative = joint(SEEDS, |seed| {
        let sp = Speculation::new(
            SpecConfig { n_max: 2, n_min: 0, p_min: 0.0 },
            Box::new(DraftModel::new(m.clone(), 16, 8, 0.0)),
        );
        let r = run(&m, &mut d, &prompt, &cfg(seed), Some(sp));
        drafted += r.usage.draft_tokens;
        accepted += r.usage.accepted_draft_tokens;
        first3(r)
    });
    assert!(drafted as u64 >= 2 * SEEDS, "every run drafts tokens 2 and 3");
    assert!(accepted > drafted / 10 && accepted < drafted * 9 / 10, "{accepted} of {drafted} accepted");
    let p = same_distribution_p(&plain, &speculative);
    assert!(p > 0.01, "speculative sampling changed the distribution: p = {p}");

    // a broken rule — take every draft — fails the same test: the first
    // token sampled, then the draft's two (the greedy ones after it)
    let greedy = GenerateConfig { max_tokens: 2, sampler: SamplerConfig::greedy(), ..Default::default() };
    let broken = joint(SEEDS, |seed| {
        let t1 = run(&m, &mut d, &prompt, &GenerateConfig { max_tokens: 1, ..cfg(seed) }, None).tokens[0];
        let rest = run(&m, &mut d, &[&prompt[..], &[t1]].concat(), &greedy, None).tokens;
        [t1, rest[0], rest[1]]
    });
    let p = same_distribution_p(&plain, &broken);
    assert!(p < 1e-6, "an always-accept rule passed: p = {p}");
}

/// Allows the even tokens only.
struct Even([u32; 1]);
impl Constraint for Even {
    fn allowed(&mut self) -> crate::error::Result<Allowed<'_>> {
        Ok(Allowed::Mask(&self.0))
    }
    fn accept(&mut self, id: u32) -> crate::error::Result<()> {
        assert_eq!(id % 2, 0, "a token the mask forbids was taken");
        Ok(())
    }
}

#[test]
fn drafts_pass_the_constraints_mask() {
    let m = model();
    let cfg = GenerateConfig { max_tokens: 30, sampler: SamplerConfig::greedy(), ..Default::default() };
    let prompt = [1u32, 5, 9, 2, 7, 1, 5, 9, 2, 7, 1, 5];
    let go = |sp: Option<Speculation>| {
        let mut g = Generation::new(&prompt, cfg.clone()).with_constraint(Box::new(Even([0x5555_5555])));
        if let Some(sp) = sp {
            g = g.with_speculation(sp);
        }
        let mut s = m.session(64, 8);
        loop {
            let p = Parts { model: &m, engine: &E, vocab: &Letters, session: &mut s };
            if let Event::Done(r) = g.next(p).unwrap().unwrap() {
                return r;
            }
        }
    };
    let plain = go(None);
    // the unconstrained model drafts odd tokens too: they are never taken
    let r = go(Some(spec(DraftModel::new(m.clone(), 64, 8, 0.0), 4)));
    assert_eq!(r.tokens, plain.tokens);
    assert!(r.tokens.iter().all(|t| t % 2 == 0));
    assert!(r.usage.draft_tokens > r.usage.accepted_draft_tokens, "{:?}", r.usage);
}
