//! A lazy grammar (llama.cpp's approach to `tool_choice: auto`): the model
//! writes freely until its output shows a trigger — a tool-call format's
//! opening marker — and from there on the grammar holds it. The grammar is
//! fed the output from the trigger's first byte, so it spells the marker
//! itself; a grammar that cannot take what was written leaves the output
//! free (the reply stays text, as without the grammar).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use toktrie::{TokEnv, TokTrie};

use crate::error::Result;
use crate::generate::{Allowed, Constraint};

/// Where a grammar may begin.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// This text, anywhere in the output.
    Word(String),
    /// This text, at the output's start (after whitespace).
    Start(String),
}

impl Trigger {
    /// Where in `text` the grammar begins, if this trigger has fired.
    fn find(&self, text: &[u8]) -> Option<usize> {
        match self {
            Trigger::Word(w) => text.windows(w.len()).position(|x| x == w.as_bytes()),
            Trigger::Start(w) => {
                let at = text.iter().position(|b| !b.is_ascii_whitespace())?;
                text[at..].starts_with(w.as_bytes()).then_some(at)
            }
        }
    }
}

enum State {
    /// Waiting for a trigger: the output so far and where each token began.
    Dormant { text: Vec<u8>, starts: Vec<usize>, tokens: Vec<u32> },
    /// The grammar holds the output.
    Active,
    /// The grammar could not take the output: nothing is constrained.
    Free,
}

/// A [`Constraint`] that engages `inner` once a trigger shows.
pub(super) struct LazyConstraint {
    inner: Box<dyn Constraint>,
    triggers: Vec<Trigger>,
    env: TokEnv,
    state: State,
}

/// The longest output watched for a trigger: past it the output stays free
/// (bounds the search; a reply that has not begun a call by then is text).
const MAX_WATCHED: usize = 1 << 20;

impl LazyConstraint {
    pub fn new(inner: Box<dyn Constraint>, triggers: Vec<Trigger>, env: TokEnv) -> LazyConstraint {
        let state = State::Dormant { text: Vec::new(), starts: Vec::new(), tokens: Vec::new() };
        LazyConstraint { inner, triggers, env, state }
    }

    /// The bytes `id` stands for (a control token's without the trie's marker).
    fn bytes(trie: &TokTrie, id: u32) -> &[u8] {
        let b = trie.token(id);
        b.strip_prefix(&[TokTrie::SPECIAL_TOKEN_MARKER]).unwrap_or(b)
    }

    /// Feed the grammar the output from byte `at`: the tokens themselves
    /// where one begins there, else the bytes re-tokenized.
    fn engage(&mut self, text: &[u8], starts: &[usize], tokens: &[u32], at: usize) -> Result<()> {
        let feed = match starts.iter().position(|&s| s == at) {
            Some(k) => tokens[k..].to_vec(),
            None => self.env.tokenize_bytes(&text[at..]),
        };
        self.state = State::Active;
        for id in feed {
            if self.inner.accept(id).is_err() {
                self.state = State::Free;
                return Ok(());
            }
        }
        Ok(())
    }
}

impl Constraint for LazyConstraint {
    fn allowed(&mut self) -> Result<Allowed<'_>> {
        match self.state {
            State::Active => self.inner.allowed(),
            State::Dormant { .. } | State::Free => Ok(Allowed::Any),
        }
    }

    fn accept(&mut self, id: u32) -> Result<()> {
        let State::Dormant { text, starts, tokens } = &mut self.state else {
            return match self.state {
                State::Active => self.inner.accept(id),
                _ => Ok(()),
            };
        };
        starts.push(text.len());
        tokens.push(id);
        text.extend_from_slice(Self::bytes(self.env.tok_trie(), id));
        if text.len() > MAX_WATCHED {
            self.state = State::Free;
            return Ok(());
        }
        let Some(at) = self.triggers.iter().filter_map(|t| t.find(text)).min() else { return Ok(()) };
        let (text, starts, tokens) = (core::mem::take(text), core::mem::take(starts), core::mem::take(tokens));
        self.engage(&text, &starts, &tokens, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_fire_where_they_should() {
        let w = Trigger::Word("<tool_call>".into());
        assert_eq!(w.find(b"I will call. <tool_call>\n{"), Some(13));
        assert_eq!(w.find(b"<tool_"), None);
        let s = Trigger::Start("{".into());
        assert_eq!(s.find(b" \n{\"name\""), Some(2));
        assert_eq!(s.find(b"Sure: {\"name\""), None, "only at the start");
        assert_eq!(s.find(b"  "), None);
    }
}
