//! How deep and how wide a grammar is, measured before llguidance
//! compiles it.
//!
//! Depth: its
//! compilers recurse once per level: per nested schema and per `$ref` a
//! schema follows, per rule or terminal a Lark rule refers to, per group
//! in a rule's body. A chain of a thousand `$ref`s (a 30 KB request) would
//! overflow the compiling thread's stack — an abort, not an error — so the
//! depth is bounded here first, counted so that it is never less than the
//! compiler's recursion: every level of JSON nesting counts (not only
//! subschemas), and a rule counts its deepest group plus its deepest
//! reference.
//!
//! Width: a Lark rule (not a terminal) with more alternatives in one group
//! than llguidance's parser holds in one row ([`MAX_RULE_ALTERNATIVES`])
//! compiles, and then fails at the first token — after a server has
//! answered 200 — so it is refused here.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use super::{grammar_err, Grammar};
use crate::error::Result;

/// The deepest grammar accepted: levels of schema nesting plus `$ref`
/// hops, or of rule references plus groups. Real schemas and grammars
/// stay under 40; the compiling thread's stack holds several times this
/// (`tests/grammar.rs` measures it at this depth, natively and in wasm).
pub const MAX_GRAMMAR_DEPTH: usize = 100;

/// The most alternatives one group of a Lark rule may have: llguidance's
/// parser holds 2000 items in a row (`max_items_in_row`), and each
/// alternative is one when the rule is predicted.
pub(crate) const MAX_RULE_ALTERNATIVES: usize = 2000;

/// An error naming the depth found and the limit, if `g` nests deeper
/// than [`MAX_GRAMMAR_DEPTH`], or a rule has more alternatives than
/// [`MAX_RULE_ALTERNATIVES`].
pub(super) fn check(g: &Grammar) -> Result<()> {
    let deep = |what: &str, TooDeep(at): TooDeep| {
        let at = at.map(|a| alloc::format!(" (past it at {a})")).unwrap_or_default();
        grammar_err(alloc::format!(
            "the {what} nests deeper than {MAX_GRAMMAR_DEPTH} levels{at}, the most accepted \
             (each level of nesting and each reference followed counts one)"
        ))
    };
    match g {
        Grammar::JsonObject | Grammar::Regex(_) => Ok(()), // the regex parser bounds its own nesting
        Grammar::JsonSchema(v) => schema_height(v, 0).map(drop).map_err(|e| deep("JSON Schema", e)),
        Grammar::Lark(src) => {
            if let Some((rule, n)) = widest_rule(src) {
                return Err(grammar_err(alloc::format!(
                    "rule {rule} has {n} alternatives in one group, more than the {MAX_RULE_ALTERNATIVES} \
                     llguidance's parser holds (write them as a terminal, in capitals, or nest them)"
                )));
            }
            lark_height(src).map(drop).map_err(|e| deep("grammar", e))
        }
    }
}

/// Past [`MAX_GRAMMAR_DEPTH`], at the reference or rule named, if any.
struct TooDeep(Option<String>);

impl TooDeep {
    /// Named at `place` unless named deeper already.
    fn at(self, place: String) -> TooDeep {
        TooDeep(self.0.or(Some(place)))
    }
}

type Height = core::result::Result<usize, TooDeep>;

/// The height of a schema, `$ref` hops included, seen `level` levels deep.
fn schema_height(root: &Value, level: usize) -> Height {
    Refs { root, memo: BTreeMap::new(), active: BTreeSet::new() }.height(root, level)
}

/// A schema's `$ref`s to JSON pointers within it, each resolved once.
struct Refs<'a> {
    root: &'a Value,
    /// A reference's height, once known.
    memo: BTreeMap<&'a str, usize>,
    /// References being measured (a reference back to one is recursion,
    /// which the compiler ties with a rule of its own, not by recursing).
    active: BTreeSet<&'a str>,
}

impl<'a> Refs<'a> {
    /// The height of `v`, `level` levels below the top: every path
    /// through it is checked against the limit as it is walked, so this
    /// recursion is bounded too.
    fn height(&mut self, v: &'a Value, level: usize) -> Height {
        if level > MAX_GRAMMAR_DEPTH {
            return Err(TooDeep(None));
        }
        let mut below = 0;
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let h = match (k.as_str(), x) {
                        ("$ref", Value::String(r)) => self.reference(r, level)?,
                        _ => self.height(x, level + 1)?,
                    };
                    below = below.max(h);
                }
            }
            Value::Array(a) => {
                for x in a {
                    below = below.max(self.height(x, level + 1)?);
                }
            }
            _ => return Ok(0),
        }
        Ok(below + 1)
    }

    /// The height of what `r` points to (one hop more), if it is a
    /// pointer into this schema; 0 for any other reference (the compiler
    /// refuses or resolves it without recursing here).
    fn reference(&mut self, r: &'a str, level: usize) -> Height {
        let Some(target) = r.strip_prefix('#').and_then(|p| self.root.pointer(p)) else {
            return Ok(0);
        };
        let h = match self.memo.get(r) {
            Some(&h) => h,
            None if self.active.contains(r) => return Ok(0),
            None => {
                self.active.insert(r);
                let h = self.height(target, level + 1).map_err(|e| e.at(alloc::format!("$ref {r:?}")))?;
                self.active.remove(r);
                self.memo.insert(r, h);
                h
            }
        };
        if level + 1 + h > MAX_GRAMMAR_DEPTH {
            return Err(TooDeep(Some(alloc::format!("$ref {r:?}"))));
        }
        Ok(h + 1)
    }
}

/// One Lark definition: its deepest group, the names it refers to, and
/// the heights of the `%json` schemas in its body.
#[derive(Default)]
struct Rule<'a> {
    groups: usize,
    refs: Vec<&'a str>,
    schemas: usize,
    /// The `%json` schemas in its body.
    json: Vec<Value>,
    /// The most alternatives in one of its groups (the top level counts).
    alternatives: usize,
}

/// A rule (lower-case: a terminal is a regex, whose alternatives cost no
/// parser items) with more than [`MAX_RULE_ALTERNATIVES`] in one group:
/// its name and their number.
fn widest_rule(src: &str) -> Option<(&str, usize)> {
    let rules = lark_rules(src).ok()?;
    let is_rule = |n: &str| n.trim_start_matches('_').starts_with(|c: char| c.is_ascii_lowercase());
    rules
        .into_iter()
        .find(|(n, r)| is_rule(n) && r.alternatives > MAX_RULE_ALTERNATIVES)
        .map(|(n, r)| (n, r.alternatives))
}

/// The `%json` schemas of a Lark grammar's rules (none if its nesting is
/// past the bound: [`check`] says so first).
pub(super) fn lark_schemas(src: &str) -> Vec<Value> {
    lark_rules(src).map(|rules| rules.into_values().flat_map(|r| r.json).collect()).unwrap_or_default()
}

/// The height of a Lark grammar: the longest chain of references from any
/// rule, each rule counting one level plus its deepest group.
fn lark_height(src: &str) -> Height {
    let rules = lark_rules(src)?;
    let mut memo = BTreeMap::new();
    let mut active = BTreeSet::new();
    let mut top = 0;
    for name in rules.keys() {
        top = top.max(rule_height(name, &rules, &mut memo, &mut active, 0)?);
    }
    Ok(top)
}

fn rule_height<'a>(
    name: &'a str,
    rules: &BTreeMap<&'a str, Rule<'a>>,
    memo: &mut BTreeMap<&'a str, usize>,
    active: &mut BTreeSet<&'a str>,
    level: usize,
) -> Height {
    let Some(rule) = rules.get(name) else { return Ok(0) };
    if let Some(&h) = memo.get(name) {
        return if level + h > MAX_GRAMMAR_DEPTH { Err(TooDeep(Some(alloc::format!("rule {name}")))) } else { Ok(h) };
    }
    if active.contains(name) {
        return Ok(0);
    }
    let own = 1 + rule.groups;
    if level + own + rule.schemas > MAX_GRAMMAR_DEPTH {
        return Err(TooDeep(Some(alloc::format!("rule {name}"))));
    }
    active.insert(name);
    let mut below = rule.schemas;
    for r in &rule.refs {
        let h = rule_height(r, rules, memo, active, level + own).map_err(|e| e.at(alloc::format!("rule {name}")))?;
        below = below.max(h);
    }
    active.remove(name);
    memo.insert(name, own + below);
    Ok(own + below)
}

/// Lark's definitions, scanned as llguidance's lexer reads them: comments
/// (`#`, `//`), strings, `/regexes/` and the JSON after `%json`,
/// `%llguidance` and `%regex` are skipped; a name that starts a line and is
/// followed by `:` (or `.priority:`) starts a definition; every other name
/// is a reference of the definition it is in.
fn lark_rules(src: &str) -> core::result::Result<BTreeMap<&str, Rule<'_>>, TooDeep> {
    let s = src.as_bytes();
    let mut rules: BTreeMap<&str, Rule> = BTreeMap::new();
    let mut current: Option<&str> = None;
    let mut line_start = true;
    let mut depth = 0usize;
    // alternatives so far in each open group, the rule's top level first
    let mut alts: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        match b {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => i = line_end(s, i),
            b'/' if s.get(i + 1) == Some(&b'/') => i = line_end(s, i),
            b'"' | b'/' => i = quoted_end(s, i, b),
            b'|' => {
                if let (Some(a), Some(r)) = (alts.last_mut(), current.and_then(|c| rules.get_mut(c))) {
                    *a += 1;
                    r.alternatives = r.alternatives.max(*a);
                }
                i += 1;
            }
            b'(' | b'[' | b'{' => {
                alts.push(1);
                depth += 1;
                if depth > MAX_GRAMMAR_DEPTH {
                    return Err(TooDeep(current.map(|c| alloc::format!("rule {c}"))));
                }
                if let Some(r) = current.and_then(|c| rules.get_mut(c)) {
                    r.groups = r.groups.max(depth);
                }
                i += 1;
            }
            b')' | b']' | b'}' => {
                if alts.len() > 1 {
                    alts.pop();
                }
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'%' => {
                let end = word_end(s, i + 1);
                let kw = &src[i + 1..end];
                i = end;
                if matches!(kw, "json" | "llguidance" | "regex") {
                    let (v, n) = json_prefix(&src[i..]);
                    if let (Some(v), "json") = (v, kw) {
                        let h = schema_height(&v, 0)?;
                        if let Some(r) = current.and_then(|c| rules.get_mut(c)) {
                            r.schemas = r.schemas.max(h);
                            r.json.push(v);
                        }
                    }
                    i += n.max(1);
                }
            }
            b'_' | b'!' | b'?' | b'a'..=b'z' | b'A'..=b'Z' => {
                let end = word_end(s, i);
                let name = src[i..end].trim_start_matches(['!', '?']);
                // (at any depth: an unclosed group does not hide a definition)
                let defines = line_start && defines_at(s, end);
                i = end;
                if defines {
                    depth = 0;
                    alts = alloc::vec![1];
                    current = Some(name);
                    rules.entry(name).or_default();
                } else if let Some(r) = current.and_then(|c| rules.get_mut(c)) {
                    r.refs.push(name);
                }
            }
            _ => i += 1,
        }
        line_start = false;
    }
    Ok(rules)
}

fn line_end(s: &[u8], i: usize) -> usize {
    s[i..].iter().position(|&b| b == b'\n').map_or(s.len(), |n| i + n)
}

/// Past the string or regex opened by `q` at `i` (backslash escapes).
fn quoted_end(s: &[u8], i: usize, q: u8) -> usize {
    let mut j = i + 1;
    while j < s.len() && s[j] != q && s[j] != b'\n' {
        j += if s[j] == b'\\' { 2 } else { 1 };
    }
    (j + 1).min(s.len())
}

fn word_end(s: &[u8], i: usize) -> usize {
    let n = s[i..]
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'!' | b'?')))
        .unwrap_or(s.len() - i);
    i + n
}

/// Whether the name ending at `i` is being defined: `:` follows, maybe
/// after `.priority` and spaces (not `::`, not `:=`).
fn defines_at(s: &[u8], mut i: usize) -> bool {
    if s.get(i) == Some(&b'.') {
        i = word_end(s, i + 1);
    }
    while matches!(s.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    s.get(i) == Some(&b':') && s.get(i + 1) != Some(&b':')
}

/// The JSON value at the start of `s` (after spaces) and the bytes it
/// takes; `None` and 0 if there is none.
fn json_prefix(s: &str) -> (Option<Value>, usize) {
    let mut stream = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => (Some(v), stream.byte_offset()),
        _ => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use serde_json::json;

    fn ref_chain(n: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..n {
            defs.insert(format!("d{i}"), json!({"$ref": format!("#/$defs/d{}", i + 1)}));
        }
        defs.insert(format!("d{n}"), json!({"type": "integer"}));
        json!({"$ref": "#/$defs/d0", "$defs": defs})
    }

    fn lark_chain(n: usize) -> String {
        let mut g = String::from("start: r0\n");
        for i in 0..n {
            g += &format!("r{i}: \"x\" r{}\n", i + 1);
        }
        g += &format!("r{n}: \"y\"\n");
        g
    }

    #[test]
    fn chains_are_measured_and_bounded() {
        assert!(check(&Grammar::JsonSchema(ref_chain(40))).is_ok());
        let e = check(&Grammar::JsonSchema(ref_chain(1000))).unwrap_err().to_string();
        assert!(e.contains("deeper than 100") && e.contains("JSON Schema") && e.contains("$ref"), "{e}");
        assert!(check(&Grammar::Lark(lark_chain(40))).is_ok());
        assert!(check(&Grammar::Lark(lark_chain(1000))).is_err());
        // the measure follows each hop: a chain of 120 fails, as does a
        // schema nested 120 levels without references
        assert!(check(&Grammar::JsonSchema(ref_chain(120))).is_err());
        let mut nested = json!({"type": "integer"});
        for _ in 0..120 {
            nested = json!({"type": "array", "items": nested});
        }
        assert!(check(&Grammar::JsonSchema(nested)).is_err());
    }

    #[test]
    fn recursion_and_shared_references_are_not_depth() {
        // a tree: a reference back to a schema being measured
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"});
        assert!(check(&Grammar::JsonSchema(tree)).is_ok());
        // 60 definitions each referring to the next twice: measured once each
        let mut defs = serde_json::Map::new();
        for i in 0..60 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": next}, {"$ref": next}]}));
        }
        defs.insert("d60".into(), json!({"type": "null"}));
        let g = Grammar::JsonSchema(json!({"$ref": "#/$defs/d0", "$defs": defs}));
        assert!(check(&g).is_err(), "60 hops of 3 levels each are over 100");
        let lark = "start: a | b\na: \"(\" start \")\" | \"x\"\nb: a a a\n";
        assert!(check(&Grammar::Lark(lark.into())).is_ok());
    }

    #[test]
    fn rules_with_more_alternatives_than_a_row_holds_are_refused() {
        let alts = |n: usize| (0..n).map(|i| format!("\"w{i}\"")).collect::<Vec<_>>().join(" | ");
        let e = check(&Grammar::Lark(format!("start: {}\n", alts(3000)))).unwrap_err().to_string();
        assert!(e.contains("rule start has 3000 alternatives") && e.contains("2000"), "{e}");
        // in a group, and on continuation lines
        let lines = (0..2500).map(|i| format!("  | \"v{i}\"\n")).collect::<String>();
        assert!(check(&Grammar::Lark(format!("start: \"a\" x\nx: (\"b\"\n{lines})\n"))).is_err());
        // a terminal's alternatives are a regex: no parser items
        assert!(check(&Grammar::Lark(format!("start: W\nW: {}\n", alts(3000)))).is_ok());
        // 2000 in a rule, or 1500 in each of two groups
        assert!(check(&Grammar::Lark(format!("start: {}\n", alts(2000)))).is_ok());
        assert!(check(&Grammar::Lark(format!("start: ({}) ({})\n", alts(1500), alts(1500)))).is_ok());
        let gbnf = crate::grammar::Grammar::gbnf(&format!("root ::= {}", alts(2001))).unwrap();
        assert!(check(&gbnf).is_err());
    }

    #[test]
    fn lark_groups_strings_comments_and_json_are_read_as_lark_does() {
        let open = "(".repeat(150);
        let close = ")".repeat(150);
        assert!(check(&Grammar::Lark(format!("start: {open}\"a\"{close}\n"))).is_err());
        // names inside strings, regexes and comments are not references
        let g = format!("start: \"{} r1\" /r1|[(]{{200}}/ // r1 r1\n# r1\nr1: \"a\"\n", "(".repeat(200));
        let rules = lark_rules(&g).ok().unwrap();
        assert_eq!(rules["start"].refs, Vec::<&str>::new());
        // a %json schema counts in its rule
        let deep = ref_chain(150).to_string();
        assert!(check(&Grammar::Lark(format!("start: %json {deep}\n"))).is_err());
        assert!(check(&Grammar::Lark(format!("start: %json {}\n", ref_chain(20)))).is_ok());
        // a priority and a continuation line
        let rules = lark_rules("start.2: a\n  | b\na: \"x\"\nb: a\n").ok().unwrap();
        assert_eq!(rules["start"].refs, ["a", "b"]);
        assert_eq!(rules["b"].refs, ["a"]);
    }
}
