//! Reasoning output: the thinking block a reasoning model writes before
//! its answer (`<think>…</think>` of Qwen3, QwQ and the DeepSeek-R1
//! distills; `[THINK]…[/THINK]` of Magistral; Command R7B's
//! `<|START_THINKING|>…<|END_THINKING|>`), split from the answer as it
//! streams, with llama-server's `reasoning_format` choices.
//!
//! ```
//! use tern_core::{ReasoningSplit, THINK_MARKERS};
//! let mut s = ReasoningSplit::new(THINK_MARKERS[0], false, false);
//! let mut parts = s.push("<think>\nTwo and two");
//! parts.append(s.push(" is four.</th"));
//! parts.append(s.push("ink>\n\nFour."));
//! parts.append(s.finish());
//! assert_eq!((parts.reasoning.as_str(), parts.content.as_str()), ("Two and two is four.", "Four."));
//! ```

use alloc::string::String;
use serde::{Deserialize, Serialize};

/// A thinking block's opening and closing markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThinkMarkers {
    /// What opens the block (`<think>`).
    pub open: &'static str,
    /// What closes it (`</think>`).
    pub close: &'static str,
}

/// The thinking blocks tern recognises, in the order a chat template is
/// searched for them.
pub const THINK_MARKERS: [ThinkMarkers; 3] = [
    ThinkMarkers { open: "<think>", close: "</think>" },
    ThinkMarkers { open: "[THINK]", close: "[/THINK]" },
    ThinkMarkers { open: "<|START_THINKING|>", close: "<|END_THINKING|>" },
];

/// The markers a chat template's source writes, if any.
pub(crate) fn markers_in(template_source_has: impl Fn(&str) -> bool) -> Option<ThinkMarkers> {
    THINK_MARKERS.into_iter().find(|m| template_source_has(m.open))
}

/// Where a reply to a prompt `template` rendered as `rendered` thinks, for
/// a request asking `format` (None: no thinking block, or `none`).
pub(crate) fn of_template(t: &crate::chat::ChatTemplate, format: ReasoningFormat, rendered: &str) -> Option<Reasoning> {
    let markers = markers_in(|m| t.source_has(m))?;
    match format {
        ReasoningFormat::None => None,
        f => Some(Reasoning::of(markers, rendered, f == ReasoningFormat::DeepseekLegacy)),
    }
}

/// How a chat reply's reasoning is returned (llama-server's
/// `reasoning_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReasoningFormat {
    /// Left in the content, as the model wrote it.
    None,
    /// Apart (`reasoning_content`) where the template has a thinking
    /// block (the default).
    #[default]
    Auto,
    /// The same as `Auto`.
    Deepseek,
    /// Apart, and also left in the content.
    DeepseekLegacy,
}

impl ReasoningFormat {
    /// The names the field takes.
    pub const NAMES: &'static str = "none, auto, deepseek, deepseek-legacy";

    /// The format of a name.
    pub fn parse(s: &str) -> Option<ReasoningFormat> {
        Some(match s {
            "none" => ReasoningFormat::None,
            "auto" => ReasoningFormat::Auto,
            "deepseek" => ReasoningFormat::Deepseek,
            "deepseek-legacy" => ReasoningFormat::DeepseekLegacy,
            _ => return None,
        })
    }
}

/// Where a prepared chat request's reasoning goes: the template's markers
/// and whether the prompt already opened the block (DeepSeek-R1's
/// template ends its generation prompt with `<think>\n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reasoning {
    /// The thinking block's markers.
    pub markers: ThinkMarkers,
    /// The reply starts inside the block.
    pub inside: bool,
    /// The reasoning stays in the content too (`deepseek-legacy`).
    pub legacy: bool,
}

impl Reasoning {
    /// For a prompt rendered as `rendered` by a template with `markers`.
    pub(crate) fn of(markers: ThinkMarkers, rendered: &str, legacy: bool) -> Reasoning {
        Reasoning { markers, inside: rendered.trim_end().ends_with(markers.open), legacy }
    }

    /// A splitter for the reply.
    pub fn splitter(&self) -> ReasoningSplit {
        ReasoningSplit::new(self.markers, self.inside, self.legacy)
    }

    /// A whole reply split (its reasoning trimmed at both ends).
    pub fn split(&self, text: &str) -> Parts {
        let mut s = self.splitter();
        let mut p = s.push(text);
        p.append(s.finish());
        p.reasoning = p.reasoning.trim().into();
        p
    }
}

/// Text split into reasoning and the answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    /// The thinking block's text.
    pub reasoning: String,
    /// The rest.
    pub content: String,
}

impl Parts {
    /// `other` after these.
    pub fn append(&mut self, other: Parts) {
        self.reasoning.push_str(&other.reasoning);
        self.content.push_str(&other.content);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before anything but whitespace: a block may open.
    Start,
    /// Just inside the block: its leading whitespace is dropped.
    Opened,
    /// Inside the block.
    Thinking,
    /// Just past the block: whitespace before the answer is dropped.
    Closed,
    /// The answer (a second block is the answer's text).
    Content,
}

/// Splits a reply into reasoning and answer as its text arrives, holding
/// back only what could still be the start of a marker.
#[derive(Debug, Clone)]
pub struct ReasoningSplit {
    markers: ThinkMarkers,
    state: State,
    held: String,
    legacy: bool,
}

impl ReasoningSplit {
    /// A splitter for `markers`; `inside`: the reply starts inside the
    /// block; `legacy`: the content keeps everything as written too.
    pub fn new(markers: ThinkMarkers, inside: bool, legacy: bool) -> ReasoningSplit {
        let state = if inside { State::Opened } else { State::Start };
        ReasoningSplit { markers, state, held: String::new(), legacy }
    }

    /// Whether the reply is inside its thinking block now.
    pub fn thinking(&self) -> bool {
        matches!(self.state, State::Opened | State::Thinking)
    }

    /// The parts of `text` (appended to what came before) that are
    /// settled.
    pub fn push(&mut self, text: &str) -> Parts {
        self.held.push_str(text);
        let mut out = Parts::default();
        loop {
            match self.state {
                State::Start => {
                    let t = self.held.trim_start();
                    if let Some(rest) = t.strip_prefix(self.markers.open) {
                        self.held = rest.into();
                        self.state = State::Opened;
                    } else if self.markers.open.starts_with(t) {
                        break; // nothing, whitespace, or part of the marker so far
                    } else {
                        self.state = State::Content;
                    }
                }
                State::Opened | State::Closed => {
                    let t = self.held.trim_start();
                    if t.is_empty() {
                        self.held.clear();
                        break;
                    }
                    self.held = t.into();
                    self.state = if self.state == State::Opened { State::Thinking } else { State::Content };
                }
                State::Thinking => {
                    // (whitespace before the close is dropped: held until
                    // more text follows it)
                    if let Some(i) = self.held.find(self.markers.close) {
                        out.reasoning.push_str(self.held[..i].trim_end());
                        self.held.drain(..i + self.markers.close.len());
                        self.state = State::Closed;
                        continue;
                    }
                    let keep = partial_suffix(&self.held, self.markers.close);
                    let settled = self.held[..self.held.len() - keep].trim_end().len();
                    out.reasoning.push_str(&self.held[..settled]);
                    self.held.drain(..settled);
                    break;
                }
                State::Content => {
                    out.content.push_str(&self.held);
                    self.held.clear();
                    break;
                }
            }
        }
        if self.legacy {
            out.content = String::from(text);
        }
        out
    }

    /// What is still held, at the end of the reply: an unclosed block's
    /// text is reasoning.
    pub fn finish(&mut self) -> Parts {
        let held = core::mem::take(&mut self.held);
        let mut out = Parts::default();
        match self.state {
            State::Thinking | State::Opened => out.reasoning = held,
            State::Start | State::Content | State::Closed if !self.legacy => out.content = held,
            _ => {}
        }
        self.state = State::Content;
        out
    }
}

/// The length of the longest end of `s` that begins `marker` (and is not
/// all of it): text that may yet become the marker. Markers are ASCII, so
/// the split is on a character boundary.
fn partial_suffix(s: &str, marker: &str) -> usize {
    (1..marker.len().min(s.len() + 1)).rev().find(|&k| s.ends_with(&marker[..k])).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn split_in_pieces(text: &str, inside: bool, at: &[usize]) -> Parts {
        let mut s = ReasoningSplit::new(THINK_MARKERS[0], inside, false);
        let mut out = Parts::default();
        let mut last = 0;
        for &i in at.iter().chain([text.len()].iter()) {
            out.append(s.push(&text[last..i]));
            last = i;
        }
        out.append(s.finish());
        out
    }

    #[test]
    fn every_cut_of_the_stream_gives_the_same_parts() {
        let cases: [(&str, bool, &str, &str); 8] = [
            ("<think>\nplan </ a\n</think>\n\nanswer <think>x</think>", false, "plan </ a", "answer <think>x</think>"),
            ("  <think>r</think>c", false, "r", "c"),
            ("plain answer", false, "", "plain answer"),
            ("<thin", false, "", "<thin"),
            ("reason only", true, "reason only", ""),
            ("r</think>\n c", true, "r", "c"),
            ("<think>unclosed </thi", false, "unclosed </thi", ""),
            ("<think>a \n b  </think> c", false, "a \n b", "c"),
        ];
        for (text, inside, reasoning, content) in cases {
            for a in 0..=text.len() {
                for b in a..=text.len() {
                    let cuts: Vec<usize> = [a, b].into_iter().filter(|&i| text.is_char_boundary(i)).collect();
                    let p = split_in_pieces(text, inside, &cuts);
                    assert_eq!(
                        (p.reasoning.as_str(), p.content.as_str()),
                        (reasoning, content),
                        "{text:?} cut {cuts:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn markers_and_the_prompt_decide_where_a_reply_starts() {
        let qwen3 = markers_in(|s| "{{ '<think>' }}".contains(s)).unwrap();
        assert_eq!(qwen3, THINK_MARKERS[0]);
        assert!(markers_in(|s| "<|im_start|>".contains(s)).is_none());
        assert!(Reasoning::of(qwen3, "<｜Assistant｜><think>\n", false).inside);
        assert!(!Reasoning::of(qwen3, "<|im_start|>assistant\n<think>\n\n</think>\n\n", false).inside);
        let legacy = Reasoning::of(qwen3, "", true).split("<think>r</think>c");
        assert_eq!((legacy.reasoning.as_str(), legacy.content.as_str()), ("r", "<think>r</think>c"));
        assert_eq!(ReasoningFormat::parse("deepseek-legacy"), Some(ReasoningFormat::DeepseekLegacy));
        assert_eq!(ReasoningFormat::parse("hidden"), None);
    }
}
