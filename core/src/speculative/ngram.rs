//! Prompt lookup (llama.cpp's n-gram drafts): find the last few tokens
//! earlier in the sequence — in the prompt or in the output — and propose
//! what followed them there. Code edits, extraction and quoting
//! summaries repeat long runs of their input, which this finds without a
//! second model.

use alloc::vec::Vec;

use super::Drafter;
use crate::error::Result;
use crate::model::Engine;

/// Longest run of tokens looked up.
const N_MAX: usize = 8;
/// Shortest (a single token matches too often to be a guess).
const N_MIN: usize = 2;
/// Tokens searched back from the end, at most: the lookup's cost is
/// bounded whatever the context.
const WINDOW: usize = 1 << 16;

/// The n-gram drafter.
#[derive(Debug, Default, Clone)]
pub struct Ngram;

impl Drafter for Ngram {
    fn draft(&mut self, _: &Engine, history: &[u32], last: u32, max: usize, out: &mut Vec<u32>) -> Result<()> {
        out.clear();
        let history = &history[history.len().saturating_sub(WINDOW)..];
        // the sequence is history + [last]; at index history.len() is last
        let at = |i: usize| if i < history.len() { history[i] } else { last };
        let len = history.len() + 1;
        // one pass, latest first: the earlier position `end` whose run of
        // tokens before it matches the sequence's last tokens longest (up
        // to N_MAX; the latest of equals)
        let mut best = (0, 0);
        for end in (1..len).rev() {
            let n = (1..=N_MAX.min(end)).take_while(|&i| at(end - i) == at(len - i)).count();
            if n > best.0 {
                best = (n, end);
                if n == N_MAX {
                    break;
                }
            }
        }
        if best.0 >= N_MIN {
            out.extend((best.1..len).take(max).map(at));
        }
        Ok(())
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
        // "1 2 3 4 5 … 1 2 3" → "4 5 …"
        assert_eq!(draft(&[1, 2, 3, 4, 5, 6, 9, 1, 2], 3, 3), [4, 5, 6]);
        // the latest occurrence wins; a continuation may run into the end
        assert_eq!(draft(&[7, 8, 1, 7, 8, 2, 7], 8, 8), [2, 7, 8]);
        // nothing repeats: no draft; a lone token is not a match
        assert!(draft(&[1, 2, 3, 4], 5, 4).is_empty());
        assert!(draft(&[5, 1, 2], 5, 4).is_empty());
        assert!(draft(&[], 5, 4).is_empty());
        assert!(draft(&[1, 2, 3, 1, 2], 3, 0).is_empty());
    }

    /// The definition, one n-gram length at a time (longest first, the
    /// latest occurrence).
    fn by_definition(seq: &[u32], max: usize) -> Vec<u32> {
        let len = seq.len();
        for n in (N_MIN..=N_MAX.min(len.saturating_sub(1))).rev() {
            let tail = len - n;
            if let Some(j) = (0..tail).rev().find(|&j| seq[j..j + n] == seq[tail..]) {
                return seq[j + n..].iter().take(max).copied().collect();
            }
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
