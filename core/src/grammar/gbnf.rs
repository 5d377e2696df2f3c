//! llama.cpp's GBNF grammars in llguidance's Lark syntax, so grammar files
//! written for llama.cpp work unchanged: rules `name ::= ...`, the top rule
//! `root`, literals with GBNF's escapes, character classes (negated,
//! ranges), `.`, groups, alternatives (empty ones too), `* + ?`, `{m}`,
//! `{m,}`, `{m,n}`, `{,n}`, `#` comments. Rule names are renamed for Lark
//! (`g_` and the name, capitals as `_` and the letter, `_` as `__`);
//! llama.cpp's token references (`<[id]>`, `<token>`) are refused.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;

use super::grammar_err;
use crate::error::Result;

/// The longest nesting of groups accepted (the parser recurses).
const MAX_DEPTH: usize = 64;

/// `source` (GBNF) as a Lark grammar with `start: g_root`
/// (`Grammar::gbnf` is the public door).
pub(crate) fn gbnf_to_lark(source: &str) -> Result<String> {
    let mut p = Parser { s: source.as_bytes(), src: source, at: 0, depth: 0 };
    let mut out = String::from("start: g_root\n");
    let mut defined = Vec::new();
    p.space();
    while p.at < p.s.len() {
        let name = p.name().ok_or_else(|| p.err("a rule name"))?;
        p.space();
        if !p.eat("::=") {
            return Err(p.err("'::='"));
        }
        let body = p.alternatives()?;
        if defined.contains(&name) {
            return Err(grammar_err(alloc::format!("GBNF: rule '{name}' is defined twice")));
        }
        let _ = writeln!(out, "{}: {body}", lark_name(name));
        defined.push(name);
        p.space();
    }
    if !defined.contains(&"root") {
        return Err(grammar_err("GBNF: no 'root' rule"));
    }
    Ok(out)
}

fn lark_name(name: &str) -> String {
    let mut s = String::from("g_");
    for c in name.chars() {
        match c {
            'A'..='Z' => {
                s.push('_');
                s.push(c.to_ascii_lowercase());
            }
            '_' => s.push_str("__"),
            _ => s.push(c),
        }
    }
    s
}

struct Parser<'a> {
    s: &'a [u8],
    src: &'a str,
    at: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, expected: &str) -> crate::Error {
        self.err_at(self.at, expected)
    }

    /// An error at byte `at` (moved back to a character's start).
    fn err_at(&self, mut at: usize, expected: &str) -> crate::Error {
        at = at.min(self.src.len());
        while !self.src.is_char_boundary(at) {
            at -= 1;
        }
        let line = self.s[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        let found: String = self.src[at..].chars().take(12).collect();
        grammar_err(alloc::format!("GBNF line {line}: expected {expected}, found {found:?}"))
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, lit: &str) -> bool {
        let hit = self.s[self.at..].starts_with(lit.as_bytes());
        if hit {
            self.at += lit.len();
        }
        hit
    }

    /// Whitespace, newlines and comments.
    fn space(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => self.at += 1,
                b'#' => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.at += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn name(&mut self) -> Option<&'a str> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_') {
            self.at += 1;
        }
        (self.at > start).then(|| &self.src[start..self.at])
    }

    /// Whether a new rule (`name ::=`) starts here.
    fn at_rule_start(&mut self) -> bool {
        let save = self.at;
        let hit = self.name().is_some() && {
            self.space();
            self.eat("::=")
        };
        self.at = save;
        hit
    }

    /// `seq | seq | ...`: in Lark, with an empty alternative as `[...]`.
    fn alternatives(&mut self) -> Result<String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(grammar_err(alloc::format!("GBNF: groups nested deeper than {MAX_DEPTH}")));
        }
        let mut alts = Vec::new();
        let mut empty = false;
        loop {
            let seq = self.sequence()?;
            if seq.is_empty() {
                empty = true;
            } else {
                alts.push(seq);
            }
            if self.peek() == Some(b'|') {
                self.at += 1;
            } else {
                break;
            }
        }
        self.depth -= 1;
        let body = alts.join(" | ");
        Ok(match (empty, alts.is_empty()) {
            (_, true) => "\"\"".to_string(),
            (true, false) => alloc::format!("[{body}]"),
            (false, false) => body,
        })
    }

    fn sequence(&mut self) -> Result<String> {
        let mut items: Vec<String> = Vec::new();
        loop {
            self.space();
            let Some(c) = self.peek() else { break };
            let atom = match c {
                b'"' => self.literal()?,
                b'[' => self.class()?,
                b'.' => {
                    self.at += 1;
                    "/(?s:.)/".to_string()
                }
                b'(' => {
                    self.at += 1;
                    let inner = self.alternatives()?;
                    self.space();
                    if !self.eat(")") {
                        return Err(self.err("')'"));
                    }
                    alloc::format!("({inner})")
                }
                b'<' => return Err(grammar_err("GBNF: token references (<...>) are not supported")),
                _ if c.is_ascii_alphanumeric() || c == b'-' || c == b'_' => {
                    if self.at_rule_start() {
                        break;
                    }
                    lark_name(self.name().unwrap_or_default())
                }
                _ => break,
            };
            let rep = self.repetition()?;
            items.push(atom + &rep);
        }
        Ok(items.join(" "))
    }

    /// `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`, `{,n}` (or nothing).
    fn repetition(&mut self) -> Result<String> {
        match self.peek() {
            Some(c @ (b'*' | b'+' | b'?')) => {
                self.at += 1;
                Ok((c as char).to_string())
            }
            Some(b'{') => {
                self.at += 1;
                let num = |p: &mut Parser| -> Option<usize> {
                    p.space();
                    let start = p.at;
                    while p.peek().is_some_and(|c| c.is_ascii_digit()) {
                        p.at += 1;
                    }
                    p.src[start..p.at].parse().ok()
                };
                let lo = num(self);
                self.space();
                let hi = if self.eat(",") { num(self) } else { Some(lo.ok_or_else(|| self.err("a count"))?) };
                self.space();
                if !self.eat("}") {
                    return Err(self.err("'}'"));
                }
                let lo = lo.unwrap_or(0);
                Ok(match hi {
                    Some(hi) if hi < lo => return Err(grammar_err(alloc::format!("GBNF: repetition {{{lo},{hi}}}"))),
                    Some(hi) => alloc::format!("{{{lo},{hi}}}"),
                    None => alloc::format!("{{{lo},}}"),
                })
            }
            _ => Ok(String::new()),
        }
    }

    /// One character of a literal or class, with GBNF's escapes.
    fn char(&mut self) -> Result<char> {
        let rest = &self.src[self.at..];
        let c = rest.chars().next().ok_or_else(|| self.err("a character"))?;
        self.at += c.len_utf8();
        if c != '\\' {
            return Ok(c);
        }
        // (the escaped character whole: a multi-byte one is an unknown escape,
        // not a cut inside it)
        let e = self.src[self.at..].chars().next().ok_or_else(|| self.err("an escape"))?;
        self.at += e.len_utf8();
        let e = if e.is_ascii() { e as u8 } else { return Err(self.err_at(self.at - e.len_utf8(), "a known escape")) };
        let hex = |p: &mut Parser, n: usize| -> Result<char> {
            let digits = p.src.get(p.at..p.at + n).ok_or_else(|| p.err("hex digits"))?;
            let v = u32::from_str_radix(digits, 16).map_err(|_| p.err("hex digits"))?;
            p.at += n;
            char::from_u32(v).ok_or_else(|| grammar_err(alloc::format!("GBNF: \\u{v:x} is not a character")))
        };
        Ok(match e {
            b'x' => hex(self, 2)?,
            b'u' => hex(self, 4)?,
            b'U' => hex(self, 8)?,
            b't' => '\t',
            b'n' => '\n',
            b'r' => '\r',
            b'"' | b'[' | b']' | b'\\' | b'-' | b'^' => e as char,
            _ => return Err(self.err_at(self.at - 1, "a known escape")),
        })
    }

    fn literal(&mut self) -> Result<String> {
        self.at += 1; // "
        let mut text = String::new();
        while self.peek() != Some(b'"') {
            if self.peek().is_none() {
                return Err(self.err("the closing '\"'"));
            }
            text.push(self.char()?);
        }
        self.at += 1;
        serde_json::to_string(&text).map_err(grammar_err)
    }

    /// `[...]` as a Lark regex over code points.
    fn class(&mut self) -> Result<String> {
        self.at += 1; // [
        let mut rx = String::from("/[");
        if self.eat("^") {
            rx.push('^');
        }
        let mut n = 0;
        while self.peek() != Some(b']') {
            if self.peek().is_none() {
                return Err(self.err("the closing ']'"));
            }
            let lo = self.char()?;
            let _ = write!(rx, "\\x{{{:x}}}", lo as u32);
            if self.peek() == Some(b'-') && self.s.get(self.at + 1) != Some(&b']') {
                self.at += 1;
                let hi = self.char()?;
                if hi < lo {
                    return Err(grammar_err(alloc::format!("GBNF: character range {lo:?}-{hi:?} is empty")));
                }
                let _ = write!(rx, "-\\x{{{:x}}}", hi as u32);
            }
            n += 1;
        }
        self.at += 1;
        if n == 0 {
            return Err(grammar_err("GBNF: an empty character class []"));
        }
        rx.push_str("]/");
        Ok(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_rule_becomes_start_g_root() {
        let lark = gbnf_to_lark(r#"root ::= "yes" | "no""#).unwrap();
        assert_eq!(lark, "start: g_root\ng_root: \"yes\" | \"no\"\n");
    }

    #[test]
    fn rules_classes_and_repetitions_translate() {
        let g = r#"
# a comment
root   ::= item ("," item){0,3} ws
item ::= [a-zA-Z_] [^"\\\x7F\x00-\x1F]* | "\"" . "\""
ws ::= | " " | "\n" [ \t]{0,20}
Big-Name ::= root+ item?
"#;
        let lark = gbnf_to_lark(g).unwrap();
        assert_eq!(
            lark,
            "start: g_root\n\
             g_root: g_item (\",\" g_item){0,3} g_ws\n\
             g_item: /[\\x{61}-\\x{7a}\\x{41}-\\x{5a}\\x{5f}]/ /[^\\x{22}\\x{5c}\\x{7f}\\x{0}-\\x{1f}]/* | \"\\\"\" /(?s:.)/ \"\\\"\"\n\
             g_ws: [\" \" | \"\\n\" /[\\x{20}\\x{9}]/{0,20}]\n\
             g__big-_name: g_root+ g_item?\n"
        );
    }

    /// Found by the `request` fuzz target: an escape of a multi-byte
    /// character cut into it and panicked while naming the error.
    #[test]
    fn an_escaped_multibyte_character_is_an_error_not_a_panic() {
        for src in ["root ::= \"a\\Йb\"", "root ::= [\\Й]", "root ::= \"\\", "root ::= \"\\u12Й4\""] {
            let e = gbnf_to_lark(src).unwrap_err().to_string();
            assert!(e.contains("GBNF line 1"), "{src}: {e}");
        }
    }

    #[test]
    fn bad_grammars_name_the_problem() {
        let err = |g: &str| gbnf_to_lark(g).unwrap_err().to_string();
        assert!(err("root ::= \"a").contains("closing"), "{}", err("root ::= \"a"));
        assert!(err("item ::= \"a\"").contains("no 'root'"));
        assert!(err("root ::= (\"a\"").contains("')'"));
        assert!(err("root ::= [z-a]").contains("empty"));
        assert!(err("root ::= \"a\"\nroot ::= \"b\"").contains("twice"));
        assert!(err("root ::= <[1234]>").contains("token references"));
        assert!(err("root ::= \"a\"{3,1}").contains("{3,1}"));
        let deep = alloc::format!("root ::= {}\"a\"{}", "(".repeat(100), ")".repeat(100));
        assert!(err(&deep).contains("nested"));
    }
}
