//! DRY ("don't repeat yourself", llama.cpp's and koboldcpp's sampler): a
//! token that would extend a sequence already in the recent context by
//! more than `allowed_length` tokens loses `multiplier × base^(length −
//! allowed_length)` of logit. Sequence breakers (`"\n"`, `":"`, …) end
//! the sequences it looks back over, and a token that is a breaker itself
//! is never penalized.

use alloc::vec::Vec;

use super::Candidate;

/// The longest breaker string looked at, in bytes (llama.cpp's bound).
const MAX_BREAKER_BYTES: usize = 40;
/// The most tokens a breaker's tail is tokenized into (llama.cpp's bound).
const MAX_TAIL_TOKENS: usize = 20;
/// The most breaker strings a request may give.
pub const MAX_BREAKERS: usize = 32;

/// A breaker as tokens: a head token and the tokens that must follow it
/// (empty: the head alone is a breaker).
pub type Breaker = (u32, Vec<u32>);

/// DRY's settings, as the chain uses them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dry {
    pub multiplier: f32,
    pub base: f32,
    pub allowed_length: usize,
    /// Tokens looked back over (None: all the context).
    pub last_n: Option<usize>,
}

impl Dry {
    /// Whether it does anything.
    pub fn on(&self) -> bool {
        self.multiplier != 0.0 && self.base >= 1.0 && self.last_n != Some(0)
    }
}

/// The token sequences that spell each of `breakers` or end with its
/// start (llama.cpp's rule): every token whose text contains the string is
/// a head with an empty tail; a token whose text ends with a prefix of it
/// is a head whose tail is the rest of the string, tokenized (at most
/// [`MAX_TAIL_TOKENS`]). `text(id)` is a token's bytes, `tokenize` a
/// string's ids. Sorted by head.
pub fn breaker_tokens(
    breakers: &[&[u8]],
    n_vocab: usize,
    text: &dyn Fn(u32) -> Vec<u8>,
    tokenize: &dyn Fn(&[u8]) -> Vec<u32>,
) -> Vec<Breaker> {
    let mut out: Vec<Breaker> = Vec::new();
    for b in breakers.iter().filter(|b| !b.is_empty()) {
        let b = &b[..b.len().min(MAX_BREAKER_BYTES)];
        for id in 0..n_vocab as u32 {
            let word = text(id);
            if word.windows(b.len()).any(|w| w == b) {
                out.push((id, Vec::new()));
                continue;
            }
            for pos in (0..word.len()).filter(|&p| word[p] == b[0]) {
                let overlap = word.len() - pos;
                if overlap < b.len() && word[pos..] == b[..overlap] {
                    let mut tail = tokenize(&b[overlap..]);
                    tail.truncate(MAX_TAIL_TOKENS);
                    out.push((id, tail));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The breakers whose head is `id` (`breakers` sorted by head).
fn heads(breakers: &[Breaker], id: u32) -> &[Breaker] {
    let from = breakers.partition_point(|b| b.0 < id);
    let to = breakers.partition_point(|b| b.0 <= id);
    &breakers[from..to]
}

/// Buffers DRY reuses from token to token.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Repeat lengths over the context looked at.
    count: Vec<usize>,
    /// (token, longest repeat it would extend).
    out: Vec<(u32, usize)>,
}

/// Into `s.out`: (token, longest repeat it would extend) for the tokens
/// DRY penalizes, given the context `history`; sorted by token.
fn repeats(d: &Dry, history: &[u32], breakers: &[Breaker], s: &mut Scratch) {
    s.out.clear();
    let n = d.last_n.map_or(history.len(), |l| l.min(history.len()));
    if n <= d.allowed_length {
        return;
    }
    // the i-th token from the end
    let back = |i: usize| history[history.len() - 1 - i];
    // 1: the nearest breaker limits how far back a repeat may reach
    let mut limit = n;
    'scan: for i in 0..n {
        let mut longest = None;
        for (_, tail) in heads(breakers, back(i)) {
            let len = tail.len();
            if longest.is_none_or(|l| len > l) && len <= i && (0..len).all(|o| tail[o] == back(i - o - 1)) {
                longest = Some(len);
            }
        }
        if let Some(l) = longest {
            limit = i - l;
            break 'scan;
        }
    }
    if limit < d.allowed_length {
        return;
    }
    // 2: the Z-algorithm over the context read backwards: count[n-1-k] is
    // how many tokens ending k from the end equal the context's last ones
    let count = &mut s.count;
    count.clear();
    count.resize(n, 0);
    let last = n - 1;
    let (mut lt, mut rt) = (0usize, 0usize);
    for k in 1..n {
        if k > rt {
            let mut m = 0;
            while m + k < n && back(m) == back(m + k) {
                m += 1;
            }
            count[last - k] = m.min(limit);
            if m > 0 {
                (lt, rt) = (k, k + m - 1);
            }
        } else {
            let p = k - lt;
            let right = rt - k + 1;
            if count[last - p] < right {
                count[last - k] = count[last - p].min(limit);
            } else {
                let mut i = rt + 1;
                while i < n && back(i) == back(i - k) {
                    i += 1;
                }
                count[last - k] = (i - k).min(limit);
                (lt, rt) = (k, i - 1);
            }
        }
    }
    // 3: the token after each repeat would extend it
    let out = &mut s.out;
    for (i, &len) in count.iter().enumerate().take(n - 1) {
        if len >= d.allowed_length {
            out.push((back(n - 2 - i), len));
        }
    }
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    out.dedup_by_key(|x| x.0);
}

/// Lower the logits of the candidates that would extend a repeat
/// (`by_id`: `c[id]` is token `id`'s candidate).
pub(crate) fn apply(d: &Dry, c: &mut [Candidate], by_id: bool, history: &[u32], breakers: &[Breaker], s: &mut Scratch) {
    repeats(d, history, breakers, s);
    let penalized = &s.out;
    if penalized.is_empty() {
        return;
    }
    // base^exponent kept finite
    const MAX_LOG: f32 = 88.722_84;
    let max_exp = if d.base > 1.000_001 { (MAX_LOG / libm::logf(d.base)) as usize } else { 0 };
    let penalty = |len: usize| {
        let mut e = len - d.allowed_length;
        if max_exp > 0 {
            e = e.min(max_exp);
        }
        d.multiplier * libm::powf(d.base, e as f32)
    };
    let single_breaker = |id: u32| heads(breakers, id).iter().any(|(_, t)| t.is_empty());
    let hit = |x: &mut Candidate, len: usize| {
        if !single_breaker(x.id) {
            x.logit -= penalty(len);
        }
    };
    if by_id {
        for &(id, len) in penalized {
            if let Some(x) = c.get_mut(id as usize) {
                hit(x, len);
            }
        }
    } else {
        for x in c.iter_mut() {
            if let Ok(k) = penalized.binary_search_by_key(&x.id, |p| p.0) {
                hit(x, penalized[k].1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// llama.cpp's own cases (tests/test-sampling.cpp, `test_dry`): the
    /// probabilities after DRY, within 1e-5.
    #[test]
    fn llama_cpp_recorded_cases() {
        #[allow(clippy::type_complexity)]
        let cases: [(&[f32], &[u32], &[f32], f32, f32, usize, usize, &[&[u32]]); 5] = [
            (&[0.25; 4], &[0, 1], &[0.25; 4], 1.0, 1.1, 2, 4, &[]),
            (&[0.25; 4], &[0, 1, 2, 0, 1], &[0.296923, 0.296923, 0.109232, 0.296923], 1.0, 1.1, 2, 5, &[]),
            (&[0.2; 5], &[0, 1, 3, 4, 0, 1], &[0.2; 5], 1.0, 1.1, 2, 6, &[&[3]]),
            (&[0.2; 5], &[0, 1, 2, 0, 1], &[0.241818, 0.241818, 0.032727, 0.241818, 0.241818], 2.0, 1.1, 2, 5, &[]),
            (&[0.2; 5], &[0, 1, 2, 3, 4, 0, 1], &[0.2; 5], 1.0, 1.1, 4, 7, &[]),
        ];
        for (probs, last, want, multiplier, base, allowed_length, last_n, breakers) in cases {
            let mut c: Vec<Candidate> = probs
                .iter()
                .enumerate()
                .map(|(i, &p)| Candidate { id: i as u32, logit: libm::logf(p), p: 0.0 })
                .collect();
            let breakers: Vec<Breaker> = breakers.iter().map(|b| (b[0], b[1..].to_vec())).collect();
            let d = Dry { multiplier, base, allowed_length, last_n: Some(last_n) };
            apply(&d, &mut c, true, last, &breakers, &mut Scratch::default());
            let z: f32 = c.iter().map(|x| libm::expf(x.logit)).sum();
            for (x, w) in c.iter().zip(want) {
                let p = libm::expf(x.logit) / z;
                assert!((p - w).abs() < 1e-5, "{last:?}: {p} vs {w}");
            }
        }
    }

    #[test]
    fn breakers_are_found_in_and_across_tokens() {
        // tokens: 0 "a", 1 "b:", 2 "x\n", 3 "c", 4 "\n"
        let vocab: [&[u8]; 5] = [b"a", b"b:", b"x\n", b"c", b"\n"];
        let text = |id: u32| vocab[id as usize].to_vec();
        let tokenize = |s: &[u8]| vocab.iter().position(|v| *v == s).map(|i| vec![i as u32]).unwrap_or_default();
        let b = breaker_tokens(&[b"\n", b":c"], 5, &text, &tokenize);
        // "\n" inside tokens 2 and 4; ":c" starts at the end of token 1 ("b:" + "c")
        assert_eq!(b, vec![(1, vec![3]), (2, vec![]), (4, vec![])]);
    }
}
