//! Message content as literal text. A chat template's output holds the
//! model's control tokens (`<|im_start|>`…) *and* the users' messages; if
//! both were tokenized with special-token parsing, a message typed as
//! `hi<|im_end|><|im_start|>system` would close its turn and open a
//! system one. So before rendering, each control-token string (and the
//! escape character itself) in the content is swapped for an escape
//! `ESC index ESC`; after rendering, the text between escapes is tokenized
//! as usual (the template's control tokens parsed) and each escape becomes
//! the ids of its string spelled as plain text.

use alloc::string::String;
use alloc::vec::Vec;

use aho_corasick::{AhoCorasick, MatchKind};

use super::{tok_err, Tokenizer};
use crate::error::Result;

/// The last private-use code point: what escapes are made of.
const ESC: char = '\u{10FFFD}';

/// Finds control-token strings in text, and spells them as plain text.
pub(super) struct Literals {
    strings: Vec<String>,
    finder: AhoCorasick,
    /// The tokenizer with special-token parsing off, made on first need.
    plain: std::sync::OnceLock<tokenizers::Tokenizer>,
}

impl Literals {
    pub(super) fn new(mut strings: Vec<String>) -> Result<Literals> {
        strings.push(ESC.into());
        let finder = AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&strings).map_err(tok_err)?;
        Ok(Literals { strings, finder, plain: std::sync::OnceLock::new() })
    }
}

/// Content escaped for one rendering, and the strings its escapes stand for.
pub(crate) struct Escaper<'t> {
    tok: &'t Tokenizer,
    table: Vec<usize>,
}

impl Tokenizer {
    /// An escaper for rendering one conversation (see the module's doc).
    pub(crate) fn escaper(&self) -> Escaper<'_> {
        Escaper { tok: self, table: Vec::new() }
    }
}

impl Escaper<'_> {
    /// `content` with every control-token string escaped.
    pub fn escape(&mut self, content: &str) -> String {
        let lit = &self.tok.literals;
        let mut out = String::with_capacity(content.len());
        let mut last = 0;
        for m in lit.finder.find_iter(content) {
            out.push_str(&content[last..m.start()]);
            out.push(ESC);
            out.push_str(&alloc::format!("{}", self.table.len()));
            out.push(ESC);
            self.table.push(m.pattern().as_usize());
            last = m.end();
        }
        out.push_str(&content[last..]);
        out
    }

    /// Token ids of a rendering of escaped content: escapes become their
    /// strings as plain text, the rest is tokenized as `Tokenizer::encode`
    /// does. An escape the template mangled stays text.
    pub fn encode(&self, rendered: &str, add_special: bool) -> Result<Vec<u32>> {
        let lit = &self.tok.literals;
        let mut ids = self.tok.encode("", add_special)?;
        let mut text = String::new();
        let mut parts = rendered.split(ESC);
        if let Some(first) = parts.next() {
            text.push_str(first);
        }
        // after the first part, parts alternate: an index, then text
        while let Some(index) = parts.next() {
            let entry = index.parse::<usize>().ok().and_then(|i| self.table.get(i));
            match (entry, parts.clone().next().is_some()) {
                (Some(&s), true) => {
                    ids.extend(self.tok.encode(&core::mem::take(&mut text), false)?);
                    ids.extend(self.plain(&lit.strings[s])?);
                    text.push_str(parts.next().unwrap_or(""));
                }
                _ => {
                    text.push(ESC);
                    text.push_str(index);
                }
            }
        }
        ids.extend(self.tok.encode(&text, false)?);
        Ok(ids)
    }

    /// `s` tokenized with special-token parsing off.
    fn plain(&self, s: &str) -> Result<Vec<u32>> {
        let t = self.tok.literals.plain.get_or_init(|| {
            let mut t = self.tok.inner.clone();
            t.set_encode_special_tokens(true);
            t
        });
        Ok(t.encode(s, false).map_err(tok_err)?.get_ids().to_vec())
    }
}
