//! The vocabulary as llguidance sees it: a token trie over the bytes each
//! token stands for, control tokens marked so no text can spell them.

use alloc::sync::Arc;
use alloc::vec::Vec;

use toktrie::{ApproximateTokEnv, TokEnv, TokRxInfo, TokTrie};

use crate::tokenizer::Tokenizer;

/// The trie's environment for `tok` over a model of `n_vocab` logits (ids
/// past the tokenizer's have no bytes: never allowed); `eos` is the token
/// the trie allows where the grammar may end. Tokenizing bytes (used only
/// to force known text) is the trie's greedy one, llguidance's own fallback.
pub(super) fn token_env(tok: &Tokenizer, n_vocab: usize, eos: u32) -> TokEnv {
    let words: Vec<Vec<u8>> = (0..n_vocab as u32)
        .map(|id| {
            let bytes = tok.token_bytes(id);
            if tok.is_control(id) || tok.is_eog(id) {
                // the special-token marker: matched only by `<name>` in a grammar
                let mut w = Vec::with_capacity(bytes.len() + 1);
                w.push(TokTrie::SPECIAL_TOKEN_MARKER);
                w.extend_from_slice(bytes);
                w
            } else {
                bytes.to_vec()
            }
        })
        .collect();
    let trie = TokTrie::from(&TokRxInfo::new(n_vocab as u32, eos), &words);
    Arc::new(ApproximateTokEnv::new(trie))
}
