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
        for n in (N_MIN..=N_MAX).rev() {
            if n > len - 1 {
                continue;
            }
            // the latest earlier occurrence of the sequence's last n tokens
            let tail = len - n;
            let found = (0..tail).rev().find(|&j| (0..n).all(|i| at(j + i) == at(tail + i)));
            if let Some(j) = found {
                out.extend((j + n..len).take(max).map(at));
                return Ok(());
            }
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
}
