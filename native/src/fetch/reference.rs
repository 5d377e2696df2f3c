//! What `-m` names: a local path, an http(s) URL, a model on the
//! HuggingFace hub in llama.cpp's forms, or a built-in model.

use std::path::{Path, PathBuf};

use super::known::{self, Known};
use crate::{Error, Result};

/// A model reference, parsed (nothing fetched yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A file or directory on this machine.
    Local(PathBuf),
    /// A GGUF file at an http(s) URL.
    Url(String),
    /// A built-in model, with its pinned SHA-256.
    Known(&'static Known),
    /// A repository on the hub, and what to take from it.
    Hub {
        /// `owner/name`.
        repo: Repo,
        /// Which file(s).
        pick: Pick,
    },
}

/// A hub repository, `owner/name` (both checked: letters, digits, `-_.`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    /// The user or organisation.
    pub owner: String,
    /// The repository's name.
    pub name: String,
}

impl std::fmt::Display for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// What to take from a hub repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// `owner/repo`: its Q4_K_M GGUF (else its only GGUF), or, with no GGUF
    /// files, the repository as an HF directory (config, tokenizer,
    /// safetensors).
    Default,
    /// `owner/repo:Q8_0`: the GGUF file of that quantization.
    Quant(String),
    /// `owner/repo/path/file.gguf`: that file.
    File(String),
}

const FORMS: &str = "a local path, an http(s) URL, owner/repo[:QUANT], owner/repo/file.gguf, or a built-in model";

/// Parse a reference. A path that exists is always local; so is one that
/// looks like a path (`./x`, `/x`, `x.gguf`, `dir/x.gguf`).
pub fn parse(s: &str) -> Result<Reference> {
    let bad = |why: &str| Error::Fetch { detail: format!("{s:?} is not a model reference: {why} (expected {FORMS})") };
    if s.is_empty() {
        return Err(bad("it is empty"));
    }
    if let Some(hub) = hub_address(s) {
        return hub.and_then(|r| parse(&r)).map_err(|_| bad("not a repository or file on the Hugging Face hub"));
    }
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return match s.parse::<ureq::http::Uri>() {
            Ok(u) if u.host().is_some_and(|h| !h.is_empty()) => Ok(Reference::Url(s.to_string())),
            _ => Err(bad("not a valid URL")),
        };
    }
    if Path::new(s).exists() {
        return Ok(Reference::Local(s.into()));
    }
    if let Some(k) = known::find(s) {
        return Ok(Reference::Known(k));
    }
    let parts: Vec<&str> = s.split('/').collect();
    let looks_local = s.starts_with(['/', '.', '~'])
        || s.contains('\\')
        || s.as_bytes().get(1) == Some(&b':') && !s.contains('/')
        || parts.len() <= 2 && s.to_ascii_lowercase().ends_with(".gguf");
    if looks_local || parts.len() == 1 && !s.contains(':') {
        return Ok(Reference::Local(s.into()));
    }
    let (path, quant) = match s.split_once(':') {
        Some((p, q)) => (p, Some(q)),
        None => (s, None),
    };
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() < 2 {
        return Err(bad("a hub reference is owner/repo"));
    }
    for name in &parts[..2] {
        check_name(name).map_err(|w| bad(&w))?;
    }
    let repo = Repo { owner: parts[0].to_string(), name: parts[1].to_string() };
    let pick = match (parts.len(), quant) {
        (2, None) => Pick::Default,
        (2, Some(q)) => {
            let ok = !q.is_empty() && q.len() <= 32 && q.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok {
                return Err(bad(&format!("{q:?} is not a quantization name (like Q4_K_M)")));
            }
            Pick::Quant(q.to_ascii_uppercase())
        }
        (_, Some(_)) => return Err(bad("a file path and a :QUANT together")),
        (_, None) => {
            let file = parts[2..].join("/");
            check_file(&file).map_err(|w| bad(&w))?;
            Pick::File(file)
        }
    };
    Ok(Reference::Hub { repo, pick })
}

/// A Hugging Face address as a hub reference: `hf.co/owner/repo[:QUANT]`
/// (llama.cpp's and ollama's form), or a page or file address pasted from
/// the browser — `https://huggingface.co/owner/repo`, `…/tree/main`,
/// `…/blob/main/file.gguf`, `…/resolve/main/file.gguf` — as
/// `owner/repo[/file]`. None: not such an address.
fn hub_address(s: &str) -> Option<Result<String>> {
    let lower = s.to_ascii_lowercase();
    let scheme = ["https://", "http://"].iter().find(|p| lower.starts_with(**p)).map_or(0, |p| p.len());
    let host =
        ["huggingface.co/", "hf.co/", "www.huggingface.co/"].iter().find(|h| lower[scheme..].starts_with(**h))?;
    let rest = &s[scheme + host.len()..];
    let rest = rest.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
    let parts: Vec<&str> = rest.split('/').collect();
    let wrong = || Error::Fetch { detail: format!("{s:?}: a Hugging Face address tern does not read") };
    Some(match parts.as_slice() {
        [_, _] => Ok(rest.to_string()),
        [owner, repo, "tree", "main"] => Ok(format!("{owner}/{repo}")),
        [owner, repo, "blob" | "resolve", "main", file @ ..] if !file.is_empty() => {
            Ok(format!("{owner}/{repo}/{}", file.join("/")))
        }
        _ => Err(wrong()),
    })
}

/// A hub owner or repository name: 1–96 of `A-Za-z0-9-_.`, not starting
/// or ending with `.` or `-`, no `..`.
fn check_name(n: &str) -> std::result::Result<(), String> {
    let ok = (1..=96).contains(&n.len())
        && n.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !n.starts_with(['.', '-'])
        && !n.ends_with(['.', '-'])
        && !n.contains("..");
    if ok {
        Ok(())
    } else {
        Err(format!("{n:?} is not a hub owner or repository name"))
    }
}

/// A file path inside a repository: components that are not empty, `.` or
/// `..`, no backslash or control character, at most 1024 bytes (it names a
/// file in the cache, so it must not climb out of it).
pub(crate) fn check_file(p: &str) -> std::result::Result<(), String> {
    let ok = p.len() <= 1024
        && !p.chars().any(|c| c.is_control() || c == '\\' || c == ':')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && c.len() <= 255);
    if ok {
        Ok(())
    } else {
        Err(format!("{p:?} is not a file path inside a repository"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(s: &str) -> (String, Pick) {
        match parse(s).unwrap() {
            Reference::Hub { repo, pick } => (repo.to_string(), pick),
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn hugging_face_addresses() {
        let q = ("bartowski/Qwen2.5-0.5B-Instruct-GGUF".to_string(), Pick::Quant("Q4_K_M".into()));
        assert_eq!(hub("hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"), q);
        assert_eq!(hub("https://hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"), q);
        let page = ("Qwen/Qwen3-0.6B".to_string(), Pick::Default);
        assert_eq!(hub("https://huggingface.co/Qwen/Qwen3-0.6B"), page);
        assert_eq!(hub("https://huggingface.co/Qwen/Qwen3-0.6B/"), page);
        assert_eq!(hub("https://huggingface.co/Qwen/Qwen3-0.6B/tree/main"), page);
        let file = ("o/r-GGUF".to_string(), Pick::File("sub/m-q8_0.gguf".into()));
        assert_eq!(hub("https://huggingface.co/o/r-GGUF/blob/main/sub/m-q8_0.gguf"), file);
        assert_eq!(hub("https://huggingface.co/o/r-GGUF/resolve/main/sub/m-q8_0.gguf?download=true"), file);
        for bad in ["https://huggingface.co/o", "https://huggingface.co/o/r/blob/v2/m.gguf", "hf.co/o/r/../x.gguf"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        // other hosts stay URLs
        assert!(matches!(parse("https://example.com/m.gguf"), Ok(Reference::Url(_))));
    }

    #[test]
    fn llama_cpp_forms() {
        assert_eq!(
            hub("bartowski/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m"),
            ("bartowski/Qwen2.5-0.5B-Instruct-GGUF".into(), Pick::Quant("Q4_K_M".into()))
        );
        assert_eq!(hub("Qwen/Qwen3-0.6B"), ("Qwen/Qwen3-0.6B".into(), Pick::Default));
        assert_eq!(hub("o/r/sub/x.gguf"), ("o/r".into(), Pick::File("sub/x.gguf".into())));
        assert_eq!(parse("https://example.com/m.gguf").unwrap(), Reference::Url("https://example.com/m.gguf".into()));
        assert!(matches!(parse("qwen2.5-coder-0.5b").unwrap(), Reference::Known(_)));
    }

    #[test]
    fn paths_stay_paths() {
        for s in ["model.gguf", "models/x.gguf", "./o/r", "/abs/o/r", "~/m.gguf", "C:\\m.gguf", "nonexistent"] {
            assert_eq!(parse(s).unwrap(), Reference::Local(s.into()), "{s}");
        }
    }

    #[test]
    fn bad_references_say_why() {
        for (s, why) in [
            ("", "empty"),
            ("o/r:Q4 K", "quantization"),
            ("o/r/x.gguf:Q4_0", "together"),
            ("o/r/../../etc/passwd", "file path"),
            ("o/r//x", "file path"),
            ("-o/r", "owner or repository"),
            ("o/r..x", "owner or repository"),
            ("https://", "URL"),
        ] {
            let e = parse(s).unwrap_err().to_string();
            assert!(e.contains(why), "{s}: {e}");
        }
    }
}
