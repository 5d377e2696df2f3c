//! Prompt lookup (llama.cpp's n-gram drafts): find the last few tokens
//! earlier in the sequence — in the prompt or in the output — and propose
//! what followed them there. Code edits, extraction and quoting
//! summaries repeat long runs of their input, which this finds without a
//! second model.

use alloc::vec::Vec;

use super::{Drafter, Evidence};
use crate::error::Result;
use crate::model::Engine;

/// Longest run of tokens looked up.
const N_MAX: usize = 8;
/// Tokens searched back from the end, at most: the lookup's cost is
/// bounded whatever the context.
const WINDOW: usize = 1 << 16;
/// Drafted tokens per token of the match, at most (counting a lone
/// token's match as two): a match of 2 tokens is weak evidence of what
/// follows, one of 8 strong (the step simulator, bench/NOTES "Issue 48
/// (fourth steps)").
const PER_MATCHED: usize = 2;
/// Earlier occurrences of the match whose continuations are compared (the
/// latest ones).
const CANDIDATES: usize = 8;

/// The n-gram drafter.
#[derive(Debug, Default, Clone)]
pub struct Ngram;

impl Drafter for Ngram {
    fn draft(&mut self, _: &Engine, history: &[u32], last: u32, max: usize, out: &mut Vec<u32>) -> Result<Evidence> {
        out.clear();
        let history = &history[history.len().saturating_sub(WINDOW)..];
        // the sequence is history + [last]; at index history.len() is last
        let at = |i: usize| if i < history.len() { history[i] } else { last };
        let len = history.len() + 1;
        // one pass, latest first: the earlier positions `end` whose run of
        // tokens before it matches the sequence's last tokens longest (up
        // to N_MAX), the latest CANDIDATES of them
        let (mut best, mut ends, mut n_ends) = (0, [0usize; CANDIDATES], 0);
        for end in (1..len).rev() {
            let n = (1..=N_MAX.min(end)).take_while(|&i| at(end - i) == at(len - i)).count();
            if n > best {
                (best, ends[0], n_ends) = (n, end, 1);
            } else if n == best && n > 0 && n_ends < CANDIDATES {
                ends[n_ends] = end;
                n_ends += 1;
            }
        }
        if best == 0 {
            return Ok(Evidence::Firm);
        }
        // what followed the latest, as far as the others agree with it (an
        // edit made once may be made again: a point where they part is a
        // guess)
        let first = ends[0];
        let mut m = (len - first).min(max).min(PER_MATCHED * best.max(2));
        for &e in &ends[1..n_ends] {
            m = (0..m).take_while(|&i| e + i < len && at(e + i) == at(first + i)).count();
        }
        // a match of several tokens drafts at least one (m ≤ len − first,
        // which is at least 1); a lone token's only what all its
        // occurrences agree on, as a guess (the simulator: edits 1.92 →
        // 2.05× at 2 threads, bench/NOTES "Issue 48 (fifth steps)")
        let (m, evidence) = if best == 1 { (m, Evidence::Weak) } else { (m.max(1).min(max), Evidence::Firm) };
        out.extend((first..first + m).map(at));
        Ok(evidence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Scalar;
    use crate::parallel::Serial;

    fn draft(history: &[u32], last: u32, max: usize) -> Vec<u32> {
        let e = Engine { kernels: &Scalar, par: &Serial, exact: false };
        let mut out = Vec::new();
        Ngram.draft(&e, history, last, max, &mut out).unwrap();
        out
    }

    #[test]
    fn proposes_what_followed_the_longest_match() {
        // "1 2 3 4 5 … 1 2 3" → "4 5 …", at most 2 per matched token
        assert_eq!(draft(&[1, 2, 3, 4, 5, 6, 9, 1, 2], 3, 3), [4, 5, 6]);
        assert_eq!(draft(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2], 3, 8), [4, 5, 6, 7, 8, 9]);
        // a continuation may run into the end
        assert_eq!(draft(&[3, 7, 8, 2, 7], 8, 8), [2, 7, 8]);
        // the latest occurrence's, cut where an earlier one parts from it
        assert_eq!(draft(&[7, 8, 1, 7, 8, 2, 7], 8, 8), [2]);
        // two occurrences whose continuations part at once: one token;
        // after two: those two
        assert_eq!(draft(&[5, 6, 1, 2, 8, 5, 6, 3, 4, 9, 5], 6, 8), [3]);
        assert_eq!(draft(&[5, 6, 1, 2, 8, 5, 6, 1, 2, 9, 5], 6, 8), [1, 2]);
        // nothing repeats: no draft
        assert!(draft(&[1, 2, 3, 4], 5, 4).is_empty());
        assert!(draft(&[], 5, 4).is_empty());
        assert!(draft(&[1, 2, 3, 1, 2], 3, 0).is_empty());
        // a lone token: what every occurrence agrees on, up to 4, or nothing
        assert_eq!(draft(&[5, 1, 2], 5, 8), [1, 2, 5]);
        assert_eq!(draft(&[5, 1, 2, 3, 4, 6, 7], 5, 8), [1, 2, 3, 4]);
        assert_eq!(draft(&[5, 1, 2, 9, 5, 1, 3, 8], 5, 8), [1]);
        assert!(draft(&[5, 1, 2, 9, 5, 3, 8], 5, 8).is_empty());
    }

    #[test]
    fn a_lone_tokens_draft_is_a_guess() {
        let e = Engine { kernels: &Scalar, par: &Serial, exact: false };
        let mut out = Vec::new();
        assert_eq!(Ngram.draft(&e, &[5, 1, 2], 5, 8, &mut out).unwrap(), Evidence::Weak);
        assert_eq!(Ngram.draft(&e, &[5, 1, 2, 5], 1, 8, &mut out).unwrap(), Evidence::Firm);
    }

    /// The definition, one n-gram length at a time (longest first): what
    /// followed its latest occurrence, at most `PER_MATCHED` tokens per
    /// matched one (a lone token counting two), cut where one of the next
    /// latest `CANDIDATES - 1` occurrences' continuation parts from it (at
    /// least one token when more than one matched).
    fn by_definition(seq: &[u32], max: usize) -> Vec<u32> {
        let len = seq.len();
        for n in (1..=N_MAX.min(len.saturating_sub(1))).rev() {
            let tail = len - n;
            let js: Vec<usize> = (0..tail).rev().filter(|&j| seq[j..j + n] == seq[tail..]).take(CANDIDATES).collect();
            let Some(&j) = js.first() else { continue };
            let cont = |j: usize| &seq[j + n..];
            let mut m = cont(j).len().min(max).min(PER_MATCHED * n.max(2));
            for &k in &js[1..] {
                m = cont(k).iter().zip(cont(j)).take(m).take_while(|(a, b)| a == b).count();
            }
            let m = if n == 1 { m } else { m.max(1).min(max) };
            return cont(j).iter().take(m).copied().collect();
        }
        Vec::new()
    }

    #[test]
    fn one_pass_finds_what_the_definition_does() {
        let mut x = 12345u64;
        for case in 0..3000 {
            // short runs over small alphabets repeat at every length
            let (len, alphabet) = (1 + case % 40, 2 + (case / 40) % 5);
            let seq: Vec<u32> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (x >> 33) as u32 % alphabet as u32
                })
                .collect();
            let (history, last) = seq.split_at(len - 1);
            assert_eq!(draft(history, last[0], 6), by_definition(&seq, 6), "{seq:?}");
        }
    }
}
