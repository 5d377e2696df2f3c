//! A lazy grammar (llama.cpp's approach to `tool_choice: auto`): the model
//! writes freely until its output shows a trigger — a tool-call format's
//! opening marker — and from there on the grammar holds it. The grammar is
//! fed the output from the trigger's first byte, so it spells the marker
//! itself; a grammar that cannot take what was written leaves the output
//! free (the reply stays text, as without the grammar). A thinking block
//! is not watched: a call the model muses about there is not a call.

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
    /// Where in `text` the grammar begins, if this trigger has fired: the
    /// reply is watched from `from`, and up to `seen` it was searched
    /// already (a word is looked for only where it could newly end).
    fn find(&self, text: &[u8], from: usize, seen: usize) -> Option<usize> {
        match self {
            Trigger::Word(w) => {
                let at = seen.saturating_sub(w.len() - 1).max(from);
                text[at..].windows(w.len()).position(|x| x == w.as_bytes()).map(|i| at + i)
            }
            Trigger::Start(w) => {
                let at = from + text[from..].iter().position(|b| !b.is_ascii_whitespace())?;
                text[at..].starts_with(w.as_bytes()).then_some(at)
            }
        }
    }
}

/// A thinking block's markers (`<think>`, `</think>`), and whether the
/// reply starts inside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Thinking {
    /// What opens the block.
    pub open: String,
    /// What closes it.
    pub close: String,
    /// The prompt opened it: the reply starts inside.
    pub inside: bool,
}

/// The output watched for a trigger.
struct Watch {
    text: Vec<u8>,
    /// Where each token began, and the tokens.
    starts: Vec<usize>,
    tokens: Vec<u32>,
    /// The reply is watched from here (past a thinking block).
    from: usize,
    /// Searched up to here.
    seen: usize,
    /// In the thinking block (None: it is behind, or there is none).
    thinking: Option<Thinking>,
    /// Whether the reply could still open a thinking block.
    may_open: bool,
}

enum State {
    /// Waiting for a trigger.
    Dormant(Box<Watch>),
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

impl Watch {
    /// Move `from` past a thinking block; Some(done) while one is open.
    fn skip_thinking(&mut self) -> bool {
        if self.may_open {
            if let Some(t) = &self.thinking {
                let rest = self.text[self.from..].trim_ascii_start();
                if rest.len() < t.open.len() && t.open.as_bytes().starts_with(rest) {
                    return true; // may still be opening
                }
                self.may_open = false;
                match rest.strip_prefix(t.open.as_bytes()) {
                    Some(after) => self.from = self.text.len() - after.len(),
                    None if !t.inside => self.thinking = None,
                    None => {}
                }
            }
        }
        let Some(t) = &self.thinking else { return false };
        let close = t.close.as_bytes();
        let at = self.seen.saturating_sub(close.len() - 1).max(self.from);
        match self.text[at..].windows(close.len()).position(|x| x == close) {
            Some(i) => {
                self.from = at + i + close.len();
                self.seen = self.from;
                self.thinking = None;
                false
            }
            None => {
                self.seen = self.text.len();
                true
            }
        }
    }
}

impl LazyConstraint {
    pub fn new(inner: Box<dyn Constraint>, triggers: Vec<Trigger>, env: TokEnv, think: Option<Thinking>) -> Self {
        let may_open = think.is_some();
        let watch = Watch {
            text: Vec::new(),
            starts: Vec::new(),
            tokens: Vec::new(),
            from: 0,
            seen: 0,
            thinking: think,
            may_open,
        };
        LazyConstraint { inner, triggers, env, state: State::Dormant(Box::new(watch)) }
    }

    /// The bytes `id` stands for (a control token's without the trie's marker).
    fn bytes(trie: &TokTrie, id: u32) -> &[u8] {
        let b = trie.token(id);
        b.strip_prefix(&[TokTrie::SPECIAL_TOKEN_MARKER]).unwrap_or(b)
    }

    /// Feed the grammar the output from byte `at`: the tokens themselves
    /// where one begins there, else the bytes re-tokenized.
    fn engage(&mut self, w: &Watch, at: usize) -> Result<()> {
        let feed = match w.starts.iter().position(|&s| s == at) {
            Some(k) => w.tokens[k..].to_vec(),
            None => self.env.tokenize_bytes(&w.text[at..]),
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
            State::Dormant(_) | State::Free => Ok(Allowed::Any),
        }
    }

    fn accept(&mut self, id: u32) -> Result<()> {
        let State::Dormant(w) = &mut self.state else {
            return match self.state {
                State::Active => self.inner.accept(id),
                _ => Ok(()),
            };
        };
        w.starts.push(w.text.len());
        w.tokens.push(id);
        w.text.extend_from_slice(Self::bytes(self.env.tok_trie(), id));
        if w.text.len() > MAX_WATCHED {
            self.state = State::Free;
            return Ok(());
        }
        if w.skip_thinking() {
            return Ok(());
        }
        let (from, seen) = (w.from, w.seen);
        w.seen = w.text.len();
        let Some(at) = self.triggers.iter().filter_map(|t| t.find(&w.text, from, seen)).min() else { return Ok(()) };
        let State::Dormant(w) = core::mem::replace(&mut self.state, State::Active) else { return Ok(()) };
        self.engage(&w, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_fire_where_they_should() {
        let w = Trigger::Word("<tool_call>".into());
        assert_eq!(w.find(b"I will call. <tool_call>\n{", 0, 0), Some(13));
        assert_eq!(w.find(b"I will call. <tool_call>\n{", 0, 20), Some(13), "a word ending past what was seen");
        assert_eq!(w.find(b"<tool_call> x", 0, 13), None, "seen already");
        assert_eq!(w.find(b"<tool_", 0, 0), None);
        let s = Trigger::Start("{".into());
        assert_eq!(s.find(b" \n{\"name\"", 0, 0), Some(2));
        assert_eq!(s.find(b"Sure: {\"name\"", 0, 0), None, "only at the start");
        assert_eq!(s.find(b"<think>x</think>\n{", 16, 0), Some(17), "the start of the reply past its thinking");
        assert_eq!(s.find(b"  ", 0, 0), None);
    }

    fn watch(inside: bool, text: &str) -> Watch {
        let t = Thinking { open: "<think>".into(), close: "</think>".into(), inside };
        let mut w = Watch {
            text: Vec::new(),
            starts: Vec::new(),
            tokens: Vec::new(),
            from: 0,
            seen: 0,
            thinking: Some(t),
            may_open: true,
        };
        // a byte at a time, as tokens would come
        for b in text.bytes() {
            w.text.push(b);
            if !w.skip_thinking() {
                w.seen = w.text.len();
            }
        }
        w
    }

    #[test]
    fn a_thinking_block_is_not_watched() {
        let w = watch(false, "<think>\nI could use <tool_call> here.\n</think>\n\n");
        assert_eq!((w.from, w.thinking.is_none()), (w.text.len() - 2, true));
        let w = watch(false, "<think>\nstill <tool_call>");
        assert!(w.thinking.is_some(), "inside");
        let w = watch(true, "musing <tool_call></think>");
        assert_eq!(w.from, w.text.len(), "opened by the prompt");
        let w = watch(false, "Plain <tool_call>");
        assert_eq!((w.from, w.thinking.is_none()), (0, true), "no block: watched from the start");
    }
}
