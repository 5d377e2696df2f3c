//! The sampler chain: repetition penalty → top-k → top-p → min-p →
//! temperature → draw; temperature 0 is greedy. The RNG is the sampler's
//! own (xoshiro256**, seeded by SplitMix64), so a seed gives the same tokens
//! on every target.

use alloc::vec::Vec;

#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig {
    /// 0 = greedy.
    pub temperature: f32,
    /// 0 = off.
    pub top_k: usize,
    /// 1 = off.
    pub top_p: f32,
    /// 0 = off.
    pub min_p: f32,
    /// 1 = off. Logits of recent tokens: positive ÷ p, negative × p.
    pub repeat_penalty: f32,
    /// How many recent tokens the penalty looks at.
    pub repeat_last_n: usize,
    pub seed: u64,
    /// Added to the logits of these tokens first (`f32::NEG_INFINITY` bans).
    pub logit_bias: Vec<(u32, f32)>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            repeat_last_n: 64,
            seed: 0,
            logit_bias: Vec::new(),
        }
    }
}

impl SamplerConfig {
    pub fn greedy() -> Self {
        SamplerConfig { temperature: 0.0, ..Default::default() }
    }
}

/// xoshiro256** with SplitMix64 seeding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng { s: [next(), next(), next(), next()] }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let r = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }

    /// Uniform in [0, 1) with 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub id: u32,
    pub logit: f32,
    pub p: f32,
}

pub struct Sampler {
    pub config: SamplerConfig,
    rng: Rng,
    cands: Vec<Candidate>,
}

/// Logit descending, then id ascending.
fn by_logit(a: &Candidate, b: &Candidate) -> core::cmp::Ordering {
    b.logit.total_cmp(&a.logit).then(a.id.cmp(&b.id))
}

/// Index of the largest logit, the lowest id among equals.
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best as u32
}

impl Sampler {
    pub fn new(config: SamplerConfig) -> Sampler {
        let rng = Rng::new(config.seed);
        Sampler { config, rng, cands: Vec::new() }
    }

    pub fn rng(&self) -> &Rng {
        &self.rng
    }
    pub fn set_rng(&mut self, rng: Rng) {
        self.rng = rng;
    }

    /// Pick the next token from `logits`, given the tokens so far.
    pub fn sample(&mut self, logits: &[f32], history: &[u32]) -> u32 {
        let cfg = &self.config;
        self.cands.clear();
        self.cands.extend(logits.iter().enumerate().map(|(i, &l)| Candidate { id: i as u32, logit: l, p: 0.0 }));
        for &(id, bias) in &cfg.logit_bias {
            if let Some(c) = self.cands.get_mut(id as usize) {
                c.logit += bias;
            }
        }
        if cfg.repeat_penalty != 1.0 {
            apply_repeat_penalty(&mut self.cands, history, cfg.repeat_last_n, cfg.repeat_penalty);
        }
        if cfg.temperature <= 0.0 {
            return self.cands.iter().copied().min_by(by_logit).map_or(0, |c| c.id);
        }
        top_k(&mut self.cands, cfg.top_k);
        top_p(&mut self.cands, cfg.top_p);
        min_p(&mut self.cands, cfg.min_p);
        for c in self.cands.iter_mut() {
            c.logit /= cfg.temperature;
        }
        softmax(&mut self.cands);
        let u = self.rng.next_f64();
        let mut cum = 0.0f64;
        for c in &self.cands {
            cum += c.p as f64;
            if u < cum {
                return c.id;
            }
        }
        self.cands.last().map_or(0, |c| c.id)
    }
}

pub fn apply_repeat_penalty(c: &mut [Candidate], history: &[u32], last_n: usize, penalty: f32) {
    let recent = &history[history.len().saturating_sub(last_n)..];
    let mut seen: Vec<u32> = recent.to_vec();
    seen.sort_unstable();
    seen.dedup();
    for &id in &seen {
        if let Some(x) = c.get_mut(id as usize).filter(|x| x.id == id) {
            x.logit = if x.logit > 0.0 { x.logit / penalty } else { x.logit * penalty };
        }
    }
}

/// Sort by logit and keep the best `k` (0 = all).
pub fn top_k(c: &mut Vec<Candidate>, k: usize) {
    if k > 0 && k < c.len() {
        c.select_nth_unstable_by(k - 1, by_logit);
        c.truncate(k);
    }
    c.sort_unstable_by(by_logit);
}

/// Probabilities of sorted candidates (by logit, descending).
pub fn softmax(c: &mut [Candidate]) {
    let Some(max) = c.first().map(|x| x.logit) else { return };
    let mut sum = 0.0f32;
    for x in c.iter_mut() {
        x.p = libm::expf(x.logit - max);
        sum += x.p;
    }
    for x in c.iter_mut() {
        x.p /= sum;
    }
}

/// Keep the smallest prefix whose probability reaches `p`.
pub fn top_p(c: &mut Vec<Candidate>, p: f32) {
    if p >= 1.0 || c.is_empty() {
        return;
    }
    softmax(c);
    let mut cum = 0.0f32;
    let mut keep = c.len();
    for (i, x) in c.iter().enumerate() {
        cum += x.p;
        if cum >= p {
            keep = i + 1;
            break;
        }
    }
    c.truncate(keep.max(1));
}

/// Keep candidates with probability at least `p` × the best one's.
pub fn min_p(c: &mut Vec<Candidate>, p: f32) {
    if p <= 0.0 || c.is_empty() {
        return;
    }
    softmax(c);
    let floor = c[0].p * p;
    let keep = c.iter().take_while(|x| x.p >= floor).count();
    c.truncate(keep.max(1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn cands(logits: &[f32]) -> Vec<Candidate> {
        logits.iter().enumerate().map(|(i, &l)| Candidate { id: i as u32, logit: l, p: 0.0 }).collect()
    }

    #[test]
    fn greedy_picks_first_max() {
        let mut s = Sampler::new(SamplerConfig::greedy());
        assert_eq!(s.sample(&[0.0, 3.0, 3.0, 1.0], &[]), 1);
        assert_eq!(argmax(&[0.0, 3.0, 3.0, 1.0]), 1);
    }

    #[test]
    fn softmax_matches_hand_values() {
        // logits ln(1), ln(2), ln(3), ln(4): probabilities 0.4, 0.3, 0.2, 0.1
        let mut c = cands(&[libm::logf(4.0), libm::logf(3.0), libm::logf(2.0), 0.0]);
        top_k(&mut c, 0);
        softmax(&mut c);
        let p: Vec<f32> = c.iter().map(|x| x.p).collect();
        for (a, b) in p.iter().zip([0.4, 0.3, 0.2, 0.1]) {
            assert!((a - b).abs() < 1e-6, "{p:?}");
        }
    }

    #[test]
    fn top_k_top_p_min_p_cut_where_expected() {
        let l = [libm::logf(4.0), libm::logf(3.0), libm::logf(2.0), 0.0];
        let mut c = cands(&l);
        top_k(&mut c, 2);
        assert_eq!(c.iter().map(|x| x.id).collect::<Vec<_>>(), vec![0, 1]);
        // p: .4 .3 .2 .1 → cumulative .4 .7 .9 1.0; top-p 0.7 keeps two
        let mut c = cands(&l);
        top_k(&mut c, 0);
        top_p(&mut c, 0.7);
        assert_eq!(c.len(), 2);
        let mut c = cands(&l);
        top_k(&mut c, 0);
        top_p(&mut c, 0.71);
        assert_eq!(c.len(), 3);
        // min-p 0.5: floor 0.2 keeps .4 .3 .2
        let mut c = cands(&l);
        top_k(&mut c, 0);
        min_p(&mut c, 0.5);
        assert_eq!(c.len(), 3);
    }

    #[test]
    fn repeat_penalty_divides_positive_multiplies_negative() {
        let mut c = cands(&[2.0, -2.0, 2.0]);
        apply_repeat_penalty(&mut c, &[0, 1, 1], 64, 2.0);
        assert_eq!(c.iter().map(|x| x.logit).collect::<Vec<_>>(), vec![1.0, -4.0, 2.0]);
    }

    #[test]
    fn draws_follow_the_distribution_and_repeat_with_the_seed() {
        let l = [libm::logf(4.0), libm::logf(3.0), libm::logf(2.0), 0.0];
        let cfg = SamplerConfig { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, seed: 7, ..Default::default() };
        let mut s = Sampler::new(cfg.clone());
        let mut counts = [0u32; 4];
        let draws: Vec<u32> = (0..20000).map(|_| s.sample(&l, &[])).collect();
        for &d in &draws {
            counts[d as usize] += 1;
        }
        for (c, p) in counts.iter().zip([0.4, 0.3, 0.2, 0.1]) {
            assert!((*c as f64 / 20000.0 - p).abs() < 0.015, "{counts:?}");
        }
        let mut again = Sampler::new(cfg);
        assert!(draws.iter().all(|&d| d == again.sample(&l, &[])));
    }
}
