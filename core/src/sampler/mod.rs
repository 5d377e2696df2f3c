//! The sampler chain, in llama.cpp's order by default: logit bias →
//! penalties (repetition, presence, frequency, over the last
//! `penalty_last_n` tokens) → DRY → top-k → typical-p → top-p → min-p →
//! XTC → temperature → draw; the stages after the bias in any order
//! (`samplers`). Temperature 0 keeps the most likely token left. The RNG
//! is the sampler's own (xoshiro256**, seeded by SplitMix64), so a seed
//! gives the same tokens on every target.

mod dry;
mod stage;

use alloc::string::String;
use alloc::vec::Vec;

pub use dry::{breaker_tokens, Breaker, MAX_BREAKERS};
pub use stage::{Stage, DEFAULT_ORDER};

use crate::error::{Error, Result};

/// The sampler chain's settings (llama.cpp's defaults).
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
    /// 1 = off. Locally typical sampling: keep the tokens whose surprise is
    /// closest to the distribution's entropy, up to this much probability.
    pub typical_p: f32,
    /// 1 = off. Logits of recent tokens: positive ÷ p, negative × p.
    pub repeat_penalty: f32,
    /// 0 = off. Subtracted once from the logit of every recent token.
    pub presence_penalty: f32,
    /// 0 = off. Subtracted per occurrence of a recent token.
    pub frequency_penalty: f32,
    /// How many recent tokens the penalties look at.
    pub repeat_last_n: usize,
    /// Seeds the session's RNG when generation starts (None: continue it).
    pub seed: Option<u64>,
    /// Added to the logits of these tokens first (`f32::NEG_INFINITY` bans).
    pub logit_bias: Vec<(u32, f32)>,
    /// 0 = off. DRY: a token extending a repeat of more than
    /// `dry_allowed_length` tokens loses `dry_multiplier ×
    /// dry_base^(length − dry_allowed_length)` of logit.
    pub dry_multiplier: f32,
    /// DRY's base (below 1: off).
    pub dry_base: f32,
    /// The longest repeat DRY leaves alone.
    pub dry_allowed_length: usize,
    /// How many recent tokens DRY looks over (None: the whole context; 0: off).
    pub dry_penalty_last_n: Option<usize>,
    /// DRY's sequence breakers as text (`"\n"`, `":"`, `"\""`, `"*"`).
    pub dry_sequence_breakers: Vec<String>,
    /// The breakers as tokens, (head, tail) each (filled where the
    /// vocabulary is known: `Bundle::prepare`).
    pub dry_breakers: Vec<Breaker>,
    /// 0 = off. XTC: with this probability, drop every token at least
    /// `xtc_threshold` likely but the least likely of them.
    pub xtc_probability: f32,
    /// XTC's threshold (above 0.5: off).
    pub xtc_threshold: f32,
    /// The stages after the logit bias, in order.
    pub order: Vec<Stage>,
}

impl SamplerConfig {
    /// Every parameter in its range, none NaN: an error naming the first
    /// that is not (`temperature` in [0, 100], probabilities in [0, 1],
    /// `repeat_penalty` in (0, 100], presence/frequency in [-100, 100],
    /// biases not NaN nor +inf). The one rule of every front end (the
    /// CLI, the server, wasm): `Error::InvalidField` names the field.
    pub fn validate(&self) -> Result<()> {
        let ranges = [
            ("temperature", self.temperature, 0.0, 100.0),
            ("top_p", self.top_p, 0.0, 1.0),
            ("min_p", self.min_p, 0.0, 1.0),
            ("typical_p", self.typical_p, 0.0, 1.0),
            ("repeat_penalty", self.repeat_penalty, f32::MIN_POSITIVE, 100.0),
            ("presence_penalty", self.presence_penalty, -100.0, 100.0),
            ("frequency_penalty", self.frequency_penalty, -100.0, 100.0),
            ("dry_multiplier", self.dry_multiplier, 0.0, 100.0),
            ("dry_base", self.dry_base, 0.0, 100.0),
            ("xtc_probability", self.xtc_probability, 0.0, 1.0),
            ("xtc_threshold", self.xtc_threshold, 0.0, 1.0),
        ];
        for (name, v, lo, hi) in ranges {
            if !(lo..=hi).contains(&v) {
                let what = alloc::format!("{name} {v} is outside [{lo}, {hi}]");
                return Err(Error::InvalidField { field: name.into(), what });
            }
        }
        if let Some(&(id, b)) = self.logit_bias.iter().find(|(_, b)| b.is_nan() || *b == f32::INFINITY) {
            let what = alloc::format!("logit bias {b} for token {id}");
            return Err(Error::InvalidField { field: "logit_bias".into(), what });
        }
        let bad = |field: &str, what: String| Err(Error::InvalidField { field: field.into(), what });
        if self.dry_allowed_length > 1 << 20 {
            return bad("dry_allowed_length", alloc::format!("{} (at most 2^20)", self.dry_allowed_length));
        }
        let breakers = &self.dry_sequence_breakers;
        if breakers.len() > MAX_BREAKERS || breakers.iter().any(|b| b.is_empty()) {
            return bad("dry_sequence_breakers", alloc::format!("1 to {MAX_BREAKERS} non-empty strings"));
        }
        if self.order.len() > 32 {
            return bad("samplers", "more than 32 stages".into());
        }
        Ok(())
    }
}

/// Sampler settings a request gives, each over the model's default
/// (generation_config.json's, else llama.cpp's): None keeps it.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "std", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "std", serde(default, deny_unknown_fields))]
pub struct Sampling {
    /// 0 = greedy.
    pub temperature: Option<f32>,
    /// 0 = off.
    pub top_k: Option<usize>,
    /// 1 = off.
    pub top_p: Option<f32>,
    /// 0 = off.
    pub min_p: Option<f32>,
    /// 1 = off.
    pub typical_p: Option<f32>,
    /// 1 = off.
    pub repeat_penalty: Option<f32>,
    /// 0 = off.
    pub presence_penalty: Option<f32>,
    /// 0 = off.
    pub frequency_penalty: Option<f32>,
    /// How many recent tokens the penalties look at.
    pub repeat_last_n: Option<usize>,
    /// Seeds the RNG when generation starts (None: continue it).
    pub seed: Option<u64>,
    /// (token id, bias) added to the logits first (−inf bans).
    pub logit_bias: Vec<(u32, f32)>,
    /// 0 = off.
    pub dry_multiplier: Option<f32>,
    /// DRY's base.
    pub dry_base: Option<f32>,
    /// The longest repeat DRY leaves alone.
    pub dry_allowed_length: Option<usize>,
    /// Recent tokens DRY looks over (−1: the whole context; 0: off).
    pub dry_penalty_last_n: Option<i64>,
    /// DRY's sequence breakers.
    pub dry_sequence_breakers: Option<Vec<String>>,
    /// 0 = off.
    pub xtc_probability: Option<f32>,
    /// XTC's threshold.
    pub xtc_threshold: Option<f32>,
    /// The stages after the logit bias, in order.
    pub samplers: Option<Vec<Stage>>,
}

impl Sampling {
    /// Every setting of `s` given.
    pub fn all(s: &SamplerConfig) -> Sampling {
        Sampling {
            temperature: Some(s.temperature),
            top_k: Some(s.top_k),
            top_p: Some(s.top_p),
            min_p: Some(s.min_p),
            typical_p: Some(s.typical_p),
            repeat_penalty: Some(s.repeat_penalty),
            presence_penalty: Some(s.presence_penalty),
            frequency_penalty: Some(s.frequency_penalty),
            repeat_last_n: Some(s.repeat_last_n),
            seed: s.seed,
            logit_bias: s.logit_bias.clone(),
            dry_multiplier: Some(s.dry_multiplier),
            dry_base: Some(s.dry_base),
            dry_allowed_length: Some(s.dry_allowed_length),
            dry_penalty_last_n: Some(s.dry_penalty_last_n.map_or(-1, |n| n as i64)),
            dry_sequence_breakers: Some(s.dry_sequence_breakers.clone()),
            xtc_probability: Some(s.xtc_probability),
            xtc_threshold: Some(s.xtc_threshold),
            samplers: Some(s.order.clone()),
        }
    }

    /// Put the settings given into `s`, the others left alone (bias
    /// entries added).
    pub fn apply(&self, s: &mut SamplerConfig) {
        let set = |dst: &mut f32, v: Option<f32>| *dst = v.unwrap_or(*dst);
        set(&mut s.temperature, self.temperature);
        set(&mut s.top_p, self.top_p);
        set(&mut s.min_p, self.min_p);
        set(&mut s.typical_p, self.typical_p);
        set(&mut s.repeat_penalty, self.repeat_penalty);
        set(&mut s.presence_penalty, self.presence_penalty);
        set(&mut s.frequency_penalty, self.frequency_penalty);
        s.top_k = self.top_k.unwrap_or(s.top_k);
        s.repeat_last_n = self.repeat_last_n.unwrap_or(s.repeat_last_n);
        s.seed = self.seed.or(s.seed);
        s.logit_bias.extend_from_slice(&self.logit_bias);
        set(&mut s.dry_multiplier, self.dry_multiplier);
        // (llama-server's rule: a base below 1 keeps the default)
        set(&mut s.dry_base, self.dry_base.filter(|&b| b >= 1.0));
        s.dry_allowed_length = self.dry_allowed_length.unwrap_or(s.dry_allowed_length);
        if let Some(n) = self.dry_penalty_last_n {
            s.dry_penalty_last_n = usize::try_from(n).ok();
        }
        if let Some(b) = &self.dry_sequence_breakers {
            s.dry_sequence_breakers = b.clone();
        }
        set(&mut s.xtc_probability, self.xtc_probability);
        set(&mut s.xtc_threshold, self.xtc_threshold);
        if let Some(o) = &self.samplers {
            s.order = o.clone();
        }
    }

    /// The sampler: llama.cpp's defaults, then `model`'s, then these.
    pub fn over(&self, model: &Sampling) -> SamplerConfig {
        let mut s = SamplerConfig::default();
        model.apply(&mut s);
        self.apply(&mut s);
        s
    }
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            temperature: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            typical_p: 1.0,
            repeat_penalty: 1.0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
            repeat_last_n: 64,
            seed: None,
            logit_bias: Vec::new(),
            dry_multiplier: 0.0,
            dry_base: 1.75,
            dry_allowed_length: 2,
            dry_penalty_last_n: Some(64),
            dry_sequence_breakers: ["\n", ":", "\"", "*"].map(String::from).to_vec(),
            dry_breakers: Vec::new(),
            xtc_probability: 0.0,
            xtc_threshold: 0.1,
            order: DEFAULT_ORDER.to_vec(),
        }
    }
}

impl SamplerConfig {
    /// Always the most likely token.
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
    /// A generator seeded with `seed`.
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

    /// The generator's state (for saving a session).
    pub fn state(&self) -> [u64; 4] {
        self.s
    }
    /// A generator in a saved state.
    pub fn from_state(s: [u64; 4]) -> Rng {
        Rng { s }
    }

    /// The next 64 random bits.
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

/// A token the chain is still considering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Candidate {
    /// Its id.
    pub id: u32,
    /// Its logit, as modified so far.
    pub logit: f32,
    /// Its probability, once computed.
    pub p: f32,
}

/// A sampler chain. Its randomness comes from the caller's `Rng` (a
/// session's), so a session can save and restore it.
pub struct Sampler {
    /// The settings.
    pub config: SamplerConfig,
    cands: Vec<Candidate>,
    counts: Vec<(u32, u32)>,
    dry: dry::Scratch,
}

/// Logit descending, then id ascending.
fn by_logit(a: &Candidate, b: &Candidate) -> core::cmp::Ordering {
    b.logit.total_cmp(&a.logit).then(a.id.cmp(&b.id))
}

/// Index of the largest logit in `f32::total_cmp`'s order (greedy's),
/// the lowest id among equals: the largest order key, then the first
/// chunk holding it — passes without a branch per element, which
/// vectorize (a scan of 49152 logits comparing each with `total_cmp` took
/// ~0.2 ms in wasm, 2 % of a small model's token).
pub fn argmax(logits: &[f32]) -> u32 {
    // total_cmp's key: the bits as i32, magnitude bits flipped if negative
    let key = |l: &f32| {
        let b = l.to_bits() as i32;
        b ^ (((b >> 31) as u32) >> 1) as i32
    };
    let Some(max) = logits.iter().map(key).max() else {
        return 0;
    };
    const CHUNK: usize = 64;
    for (c, chunk) in logits.chunks(CHUNK).enumerate() {
        if chunk.iter().fold(false, |hit, l| hit | (key(l) == max)) {
            return (c * CHUNK + chunk.iter().position(|l| key(l) == max).unwrap_or(0)) as u32;
        }
    }
    0
}

impl Sampler {
    /// A chain with these settings.
    pub fn new(config: SamplerConfig) -> Sampler {
        Sampler { config, cands: Vec::new(), counts: Vec::new(), dry: dry::Scratch::default() }
    }

    /// Pick the next token from `logits`, given the tokens so far.
    ///
    /// ```
    /// use tern_core::{runtime::Rng, runtime::Sampler, SamplerConfig};
    /// let mut greedy = Sampler::new(SamplerConfig::greedy());
    /// assert_eq!(greedy.sample(&[0.1, 2.0, -1.0], &[], &mut Rng::new(0)), 1);
    /// // the same seed draws the same tokens
    /// let cfg = SamplerConfig { temperature: 1.0, seed: Some(7), ..SamplerConfig::default() };
    /// let draw = |seed| Sampler::new(cfg.clone()).sample(&[1.0, 1.1, 0.9], &[], &mut Rng::new(seed));
    /// assert_eq!(draw(7), draw(7));
    /// ```
    pub fn sample(&mut self, logits: &[f32], history: &[u32], rng: &mut Rng) -> u32 {
        match self.chain(logits, history, rng) {
            Some(id) => id,
            None => draw(&self.cands, rng.next_f64()),
        }
    }

    /// Pick the next token as [`Sampler::sample`] would, given that a
    /// draft proposed `draft`: the speculative-sampling rule for a draft
    /// that is one token for sure (q(x) = 1). Accept `draft` with the
    /// chain's probability of it, p(x); else draw from p with `draft`
    /// taken out (max(0, p − q) renormalized). The token's distribution
    /// is the chain's, whatever the draft. Greedy takes the most likely
    /// token (the draft is accepted when it is that one) and draws nothing.
    /// Returns the token and whether it is the draft's.
    pub fn verify(&mut self, logits: &[f32], history: &[u32], rng: &mut Rng, draft: u32) -> (u32, bool) {
        if let Some(id) = self.chain(logits, history, rng) {
            return (id, id == draft);
        }
        let p = self.cands.iter().find(|c| c.id == draft).map_or(0.0, |c| c.p as f64);
        if rng.next_f64() < p {
            return (draft, true);
        }
        (draw_without(&self.cands, draft, rng.next_f64()), false)
    }

    /// Run the chain: the token when it leaves one for sure (greedy),
    /// else None with `self.cands` the distribution to draw from (sorted,
    /// probabilities set).
    fn chain(&mut self, logits: &[f32], history: &[u32], rng: &mut Rng) -> Option<u32> {
        let cfg = &self.config;
        let penalize = cfg.repeat_penalty != 1.0 || cfg.presence_penalty != 0.0 || cfg.frequency_penalty != 0.0;
        let dry = dry::Dry {
            multiplier: cfg.dry_multiplier,
            base: cfg.dry_base,
            allowed_length: cfg.dry_allowed_length,
            last_n: cfg.dry_penalty_last_n,
        };
        let xtc = cfg.xtc_probability > 0.0 && cfg.xtc_threshold <= 0.5;
        let greedy = cfg.temperature <= 0.0;
        if greedy && cfg.logit_bias.is_empty() && !penalize && !dry.on() && !xtc {
            // plain greedy: the candidate list's order without building it
            return Some(argmax(logits));
        }
        self.cands.clear();
        self.cands.extend(logits.iter().enumerate().map(|(i, &l)| Candidate { id: i as u32, logit: l, p: 0.0 }));
        for &(id, bias) in &cfg.logit_bias {
            if let Some(c) = self.cands.get_mut(id as usize) {
                c.logit += bias;
            }
        }
        // whether cands[id] is token id's (until a stage sorts or cuts),
        // and whether they are in logit order
        let (mut by_id, mut sorted) = (true, false);
        for &stage in &cfg.order {
            let c = &mut self.cands;
            match stage {
                Stage::Penalties if penalize => {
                    count_recent(&mut self.counts, history, cfg.repeat_last_n);
                    let (r, p, f) = (cfg.repeat_penalty, cfg.presence_penalty, cfg.frequency_penalty);
                    apply_penalties(c, by_id, &self.counts, r, p, f);
                }
                Stage::Dry if dry.on() => dry::apply(&dry, c, by_id, history, &cfg.dry_breakers, &mut self.dry),
                Stage::TopK => {
                    top_k(c, cfg.top_k);
                    sorted = true;
                }
                Stage::TypP if cfg.typical_p < 1.0 => {
                    sort(c, &mut sorted);
                    typical(c, cfg.typical_p);
                }
                Stage::TopP if cfg.top_p < 1.0 => {
                    sort(c, &mut sorted);
                    top_p(c, cfg.top_p);
                }
                Stage::MinP if cfg.min_p > 0.0 => {
                    sort(c, &mut sorted);
                    min_p(c, cfg.min_p);
                }
                Stage::Xtc if xtc && c.len() >= 2 => {
                    sort(c, &mut sorted);
                    if rng.next_f64() as f32 <= cfg.xtc_probability {
                        xtc_cut(c, cfg.xtc_threshold);
                    }
                }
                Stage::Temperature if greedy => {
                    let best = c.iter().copied().min_by(by_logit);
                    c.clear();
                    c.extend(best);
                }
                Stage::Temperature => c.iter_mut().for_each(|x| x.logit /= cfg.temperature),
                _ => continue,
            }
            match stage {
                // logits changed, order kept
                Stage::Penalties | Stage::Dry => sorted = false,
                Stage::Temperature if !greedy => {}
                _ => by_id = false,
            }
        }
        if greedy {
            return Some(self.cands.iter().copied().min_by(by_logit).map_or(0, |c| c.id));
        }
        sort(&mut self.cands, &mut sorted);
        softmax(&mut self.cands);
        None
    }
}

/// Sort candidates by logit unless they are.
fn sort(c: &mut [Candidate], sorted: &mut bool) {
    if !*sorted {
        c.sort_unstable_by(by_logit);
        *sorted = true;
    }
}

/// XTC's cut of sorted candidates: drop every one at least `threshold`
/// likely but the last of them (nothing if only one is).
pub(crate) fn xtc_cut(c: &mut Vec<Candidate>, threshold: f32) {
    softmax(c);
    let above = c.iter().take_while(|x| x.p >= threshold).count();
    if above >= 2 {
        c.drain(..above - 1);
    }
}

/// The candidate where the cumulative probability passes `u`.
pub(crate) fn draw(c: &[Candidate], u: f64) -> u32 {
    let mut cum = 0.0f64;
    for x in c {
        cum += x.p as f64;
        if u < cum {
            return x.id;
        }
    }
    c.last().map_or(0, |x| x.id)
}

/// [`draw`] from the candidates but `skip`, their probabilities
/// renormalized (`u` scaled by the mass left).
pub(crate) fn draw_without(c: &[Candidate], skip: u32, u: f64) -> u32 {
    let rest = c.iter().filter(|x| x.id != skip);
    let u = u * rest.clone().map(|x| x.p as f64).sum::<f64>();
    let mut cum = 0.0f64;
    for x in rest.clone() {
        cum += x.p as f64;
        if u < cum {
            return x.id;
        }
    }
    rest.last().map_or(skip, |x| x.id)
}

/// (token, occurrences) among the last `last_n` tokens, sorted by token.
pub(crate) fn count_recent(counts: &mut Vec<(u32, u32)>, history: &[u32], last_n: usize) {
    counts.clear();
    counts.extend(history[history.len().saturating_sub(last_n)..].iter().map(|&t| (t, 1)));
    counts.sort_unstable();
    counts.dedup_by(|b, a| {
        let same = a.0 == b.0;
        if same {
            a.1 += 1;
        }
        same
    });
}

/// Repetition (÷/× `repeat`), presence (−once) and frequency (−per count)
/// penalties (`by_id`: `c[id]` is token `id`'s candidate; else looked up).
pub(crate) fn apply_penalties(
    c: &mut [Candidate],
    by_id: bool,
    counts: &[(u32, u32)],
    repeat: f32,
    presence: f32,
    frequency: f32,
) {
    let hit = |x: &mut Candidate, n: u32| {
        if repeat != 1.0 {
            x.logit = if x.logit > 0.0 { x.logit / repeat } else { x.logit * repeat };
        }
        x.logit -= n as f32 * frequency + presence;
    };
    if by_id {
        for &(id, n) in counts {
            if let Some(x) = c.get_mut(id as usize).filter(|x| x.id == id) {
                hit(x, n);
            }
        }
    } else {
        for x in c.iter_mut() {
            if let Ok(k) = counts.binary_search_by_key(&x.id, |p| p.0) {
                hit(x, counts[k].1);
            }
        }
    }
}

/// Sort by logit and keep the best `k` (0 = all).
pub(crate) fn top_k(c: &mut Vec<Candidate>, k: usize) {
    if k > 0 && k < c.len() {
        c.select_nth_unstable_by(k - 1, by_logit);
        c.truncate(k);
    }
    c.sort_unstable_by(by_logit);
}

/// Probabilities of sorted candidates (by logit, descending).
pub(crate) fn softmax(c: &mut [Candidate]) {
    let Some(max) = c.first().map(|x| x.logit) else {
        return;
    };
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
pub(crate) fn top_p(c: &mut Vec<Candidate>, p: f32) {
    if p >= 1.0 || c.is_empty() {
        return;
    }
    softmax(c);
    c.truncate(mass_prefix(c, p));
}

/// Length of the shortest prefix whose probability reaches `p` (at least 1).
fn mass_prefix(c: &[Candidate], p: f32) -> usize {
    let mut cum = 0.0f32;
    for (i, x) in c.iter().enumerate() {
        cum += x.p;
        if cum >= p {
            return i + 1;
        }
    }
    c.len().max(1)
}

/// Locally typical sampling (Meister et al.): order by |surprise −
/// entropy|, keep the smallest such set reaching probability `p`.
pub(crate) fn typical(c: &mut Vec<Candidate>, p: f32) {
    if p >= 1.0 || c.len() < 2 {
        return;
    }
    softmax(c);
    let entropy: f32 = c.iter().filter(|x| x.p > 0.0).map(|x| -x.p * libm::logf(x.p)).sum();
    let dev = |x: &Candidate| libm::fabsf(-libm::logf(x.p) - entropy);
    c.sort_by(|a, b| dev(a).total_cmp(&dev(b)).then(a.id.cmp(&b.id)));
    c.truncate(mass_prefix(c, p));
    c.sort_unstable_by(by_logit);
}

/// Keep candidates with probability at least `p` × the best one's.
pub(crate) fn min_p(c: &mut Vec<Candidate>, p: f32) {
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
    fn greedy_fast_path_equals_the_candidate_path() {
        // a zero bias forces the candidate list; the order must not change
        let mut fast = Sampler::new(SamplerConfig::greedy());
        let mut slow = Sampler::new(SamplerConfig { logit_bias: vec![(0, 0.0)], ..SamplerConfig::greedy() });
        let mut rng = Rng::new(3);
        for case in 0..200 {
            // lengths across argmax's 64-logit chunks, ties between them
            let logits: Vec<f32> = (0..64 + case)
                .map(|i| match (rng.next_u64() % 7, case % 3) {
                    (0, _) => 0.0,
                    (1, _) => -0.0,
                    (2, 0) => f32::NEG_INFINITY,
                    (3, 1) if rng.next_u64() % 50 == 0 => f32::NAN,
                    (_, _) => (rng.next_u64() % 5) as f32 - 2.0 + (i % 2) as f32 * 0.5,
                })
                .collect();
            let (a, b) = (fast.sample(&logits, &[], &mut rng), slow.sample(&logits, &[], &mut rng));
            assert_eq!(a, b, "{logits:?}");
        }
    }

    #[test]
    fn greedy_picks_first_max() {
        let mut s = Sampler::new(SamplerConfig::greedy());
        assert_eq!(s.sample(&[0.0, 3.0, 3.0, 1.0], &[], &mut Rng::new(0)), 1);
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
    fn penalties_follow_their_definitions() {
        let mut counts = Vec::new();
        count_recent(&mut counts, &[2, 0, 1, 1, 9], 4); // window: 0 1 1 9
        assert_eq!(counts, vec![(0, 1), (1, 2), (9, 1)]);
        let mut c = cands(&[2.0, -2.0, 2.0]);
        apply_penalties(&mut c, true, &counts, 2.0, 0.0, 0.0);
        assert_eq!(c.iter().map(|x| x.logit).collect::<Vec<_>>(), vec![1.0, -4.0, 2.0]);
        let mut c = cands(&[2.0, -2.0, 2.0]);
        apply_penalties(&mut c, true, &counts, 1.0, 0.5, 0.25);
        assert_eq!(c.iter().map(|x| x.logit).collect::<Vec<_>>(), vec![1.25, -3.0, 2.0]);
    }

    #[test]
    fn typical_keeps_tokens_nearest_the_entropy() {
        // p = .4 .3 .2 .1: H = 1.2799 nats; surprises 0.916 1.204 1.609 2.303
        // → order by |surprise − H|: .3 (0.076), .2 (0.329), .4 (0.364), .1
        let l = [libm::logf(4.0), libm::logf(3.0), libm::logf(2.0), 0.0];
        let mut c = cands(&l);
        top_k(&mut c, 0);
        typical(&mut c, 0.5); // .3 + .2 reaches 0.5
        assert_eq!(c.iter().map(|x| x.id).collect::<Vec<_>>(), vec![1, 2]);
        let mut c = cands(&l);
        top_k(&mut c, 0);
        typical(&mut c, 0.25); // .3 alone
        assert_eq!(c.iter().map(|x| x.id).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn temperature_sharpens_as_hand_computed() {
        // T = 0.5 squares the odds: 16 : 9 : 4 : 1 out of 30
        let l = [libm::logf(4.0), libm::logf(3.0), libm::logf(2.0), 0.0];
        let cfg = SamplerConfig { temperature: 0.5, top_k: 0, top_p: 1.0, min_p: 0.0, ..Default::default() };
        let mut s = Sampler::new(cfg);
        let mut rng = Rng::new(3);
        let mut counts = [0u32; 4];
        for _ in 0..30000 {
            counts[s.sample(&l, &[], &mut rng) as usize] += 1;
        }
        for (c, p) in counts.iter().zip([16.0 / 30.0, 9.0 / 30.0, 4.0 / 30.0, 1.0 / 30.0]) {
            assert!((*c as f64 / 30000.0 - p).abs() < 0.012, "{counts:?}");
        }
    }

    #[test]
    fn logit_bias_bans_and_boosts() {
        let cfg = SamplerConfig { logit_bias: vec![(0, f32::NEG_INFINITY), (2, 5.0)], ..SamplerConfig::greedy() };
        let mut s = Sampler::new(cfg);
        assert_eq!(s.sample(&[9.0, 3.0, 0.0], &[], &mut Rng::new(0)), 2);
    }

    #[test]
    fn xtc_cuts_as_llama_cpp_records() {
        // llama.cpp's cases (tests/test-sampling.cpp, `test_xtc`, applied:
        // its draw fell under the probability): what is left, and a
        // threshold no two tokens reach leaves all
        let cases: [(f32, &[f32]); 4] =
            [(0.09, &[0.1]), (0.19, &[0.2, 0.1]), (0.29, &[0.3, 0.2, 0.1]), (0.39, &[0.4, 0.3, 0.2, 0.1])];
        for (t, want) in cases {
            let mut c: Vec<Candidate> = [0.4f32, 0.3, 0.2, 0.1]
                .iter()
                .enumerate()
                .map(|(i, &p)| Candidate { id: i as u32, logit: libm::logf(p), p })
                .collect();
            xtc_cut(&mut c, t);
            let left: Vec<f32> = c.iter().map(|x| x.p).collect();
            assert_eq!(left.len(), want.len(), "{t}");
            left.iter().zip(want).for_each(|(a, b)| assert!((a - b).abs() < 1e-5, "{t}: {left:?}"));
        }
        // in the chain: with probability 1 the top choices go, greedy or not
        let cfg = SamplerConfig { temperature: 0.0, xtc_probability: 1.0, xtc_threshold: 0.15, ..Default::default() };
        let logits = [0.4f32, 0.3, 0.2, 0.1].map(libm::logf);
        assert_eq!(Sampler::new(cfg).sample(&logits, &[], &mut Rng::new(1)), 2);
    }

    #[test]
    fn the_order_is_the_chains() {
        // temperature before min-p flattens what min-p sees: more survive
        let logits = [2.0f32, 1.0, 0.0];
        let kept = |order: Vec<Stage>| {
            let cfg = SamplerConfig { temperature: 4.0, top_k: 0, top_p: 1.0, min_p: 0.5, order, ..Default::default() };
            let mut s = Sampler::new(cfg);
            (0..200).map(|i| s.sample(&logits, &[], &mut Rng::new(i))).max().unwrap()
        };
        assert_eq!(kept(DEFAULT_ORDER.to_vec()), 0, "min-p first keeps only the best");
        assert_eq!(kept(vec![Stage::Temperature, Stage::MinP]), 2, "temperature first keeps all three");
        // penalties after a sort still find their tokens
        let cfg = SamplerConfig {
            temperature: 0.0,
            repeat_penalty: 100.0,
            order: vec![Stage::TopK, Stage::Penalties, Stage::Temperature],
            ..Default::default()
        };
        assert_eq!(Sampler::new(cfg).sample(&logits, &[0], &mut Rng::new(0)), 1);
    }

    #[test]
    fn draws_follow_the_distribution_and_repeat_with_the_seed() {
        let l = [libm::logf(4.0), libm::logf(3.0), libm::logf(2.0), 0.0];
        let cfg = SamplerConfig { temperature: 1.0, top_k: 0, top_p: 1.0, min_p: 0.0, ..Default::default() };
        let mut s = Sampler::new(cfg.clone());
        let mut counts = [0u32; 4];
        let mut rng = Rng::new(7);
        let draws: Vec<u32> = (0..20000).map(|_| s.sample(&l, &[], &mut rng)).collect();
        for &d in &draws {
            counts[d as usize] += 1;
        }
        for (c, p) in counts.iter().zip([0.4, 0.3, 0.2, 0.1]) {
            assert!((*c as f64 / 20000.0 - p).abs() < 0.015, "{counts:?}");
        }
        let mut again = Sampler::new(cfg);
        let mut rng = Rng::new(7);
        assert!(draws.iter().all(|&d| d == again.sample(&l, &[], &mut rng)));
    }
}
