//! The HuggingFace hub's URL scheme, and choosing files from a repository
//! (as llama.cpp's `-hf` does: a quantization's GGUF, or the repository as
//! an HF directory).

use super::reference::{Pick, Repo};
use crate::fetch::http::fetch;
use crate::Result;

/// The hub, unless `HF_ENDPOINT` names another.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The revision fetched.
const REVISION: &str = "main";

/// Files a repository may list before we stop reading (the largest GGUF
/// collections hold a few hundred).
pub(crate) const MAX_FILES: usize = 10_000;

/// The largest file list read (the hub's answer for 10,000 files is ~1 MB).
pub(crate) const MAX_LISTING_BYTES: u64 = 16 << 20;

/// The API URL listing a repository's files.
pub fn api_url(endpoint: &str, repo: &Repo) -> String {
    format!("{}/api/models/{}/{}", endpoint.trim_end_matches('/'), repo.owner, repo.name)
}

/// The download URL of a file in a repository.
pub fn file_url(endpoint: &str, repo: &Repo, file: &str) -> String {
    let path: Vec<String> = file.split('/').map(escape).collect();
    format!("{}/{}/{}/resolve/{REVISION}/{}", endpoint.trim_end_matches('/'), repo.owner, repo.name, path.join("/"))
}

/// Percent-encode one path segment (RFC 3986 unreserved characters pass).
fn escape(seg: &str) -> String {
    seg.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The file names in an API answer (`{"siblings": [{"rfilename": ..}]}`).
/// Only the names of the first [`MAX_FILES`] entries are kept as the
/// answer is read (a listing of 10^6 entries read as a JSON tree took
/// half a gigabyte).
pub(crate) fn parse_listing(repo: &Repo, body: &[u8]) -> Result<Vec<String>> {
    let listing: Listing =
        serde_json::from_slice(body).map_err(|e| fetch(format!("{repo}: the hub's file list is not JSON: {e}")))?;
    let siblings = listing.siblings.ok_or_else(|| fetch(format!("{repo}: the hub's answer lists no files")))?;
    // names become paths in the cache: one that could climb out of it
    // (`..`, a backslash, a drive) is not a file tern will fetch
    Ok(siblings.0.into_iter().filter(|f| super::reference::check_file(f).is_ok()).collect())
}

/// The parts of the hub's answer read (the rest is skipped unkept).
#[derive(serde::Deserialize)]
struct Listing {
    siblings: Option<Names>,
}

/// The `rfilename` of the first [`MAX_FILES`] siblings.
struct Names(Vec<String>);

#[derive(serde::Deserialize)]
struct Sibling {
    rfilename: Option<String>,
}

impl<'de> serde::Deserialize<'de> for Names {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Names, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Names;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of files")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Names, A::Error> {
                let mut names = Vec::new();
                while names.len() < MAX_FILES {
                    match seq.next_element::<Sibling>()? {
                        Some(s) => names.extend(s.rfilename),
                        None => return Ok(Names(names)),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Names(names))
            }
        }
        d.deserialize_seq(Visit)
    }
}

/// What to download from a repository, given its files.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// One GGUF file.
    Gguf(String),
    /// An HF directory: these files (config, tokenizer, weights).
    Directory(Vec<String>),
}

/// Choose as llama.cpp does: `:QUANT` names the GGUF whose name carries it
/// (Q4_K_M when none is named); no GGUF files at all means an HF directory.
pub(crate) fn choose(repo: &Repo, pick: &Pick, files: &[String]) -> Result<Choice> {
    if let Pick::File(f) = pick {
        if !f.to_ascii_lowercase().ends_with(".gguf") {
            return Err(fetch(format!("{repo}/{f}: a file named in a reference must be a .gguf file")));
        }
        return if files.iter().any(|x| x == f) {
            Ok(Choice::Gguf(f.clone()))
        } else {
            Err(fetch(format!("{repo} has no file {f}")))
        };
    }
    let ggufs: Vec<&String> = files
        .iter()
        .filter(|f| f.to_ascii_lowercase().ends_with(".gguf") && !f.to_ascii_lowercase().contains("mmproj"))
        .collect();
    if ggufs.is_empty() {
        if let Pick::Quant(q) = pick {
            return Err(fetch(format!("{repo} has no GGUF files, so no {q}")));
        }
        return directory(repo, files);
    }
    let quant = match pick {
        Pick::Quant(q) => q.as_str(),
        _ => "Q4_K_M",
    };
    let matching: Vec<&&String> = ggufs.iter().filter(|f| names_quant(f, quant)).collect();
    let chosen = match (matching.as_slice(), pick) {
        ([], Pick::Default) if ggufs.len() == 1 => ggufs[0],
        ([], _) => {
            let mut have: Vec<String> = ggufs.iter().filter_map(|f| quant_of(f)).collect();
            have.sort();
            have.dedup();
            return Err(fetch(format!("{repo} has no {quant} GGUF; it has: {}", have.join(", "))));
        }
        ([one], _) => one,
        (many, _) => many.iter().min_by_key(|f| f.len()).expect("not empty"),
    };
    if let Some(n) = split_parts(chosen) {
        return Err(fetch(format!(
            "{repo}: {chosen} is one of {n} split GGUF parts, which tern does not load; merge them with llama-gguf-split --merge"
        )));
    }
    Ok(Choice::Gguf(chosen.clone()))
}

/// The files of an HF directory repository: its configs and tokenizer at
/// the top level and its safetensors weights.
fn directory(repo: &Repo, files: &[String]) -> Result<Choice> {
    const WANT: [&str; 6] = [
        "config.json",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "model.safetensors.index.json",
    ];
    let take: Vec<String> = files
        .iter()
        .filter(|f| WANT.contains(&f.as_str()) || !f.contains('/') && f.ends_with(".safetensors"))
        .cloned()
        .collect();
    let has = |n: &str| take.iter().any(|f| f == n);
    if !has("config.json") || !has("tokenizer.json") || !take.iter().any(|f| f.ends_with(".safetensors")) {
        let shown: Vec<&str> = files.iter().take(12).map(String::as_str).collect();
        return Err(fetch(format!(
            "{repo} is neither a GGUF repository nor an HF model directory (config.json, tokenizer.json, *.safetensors); its files: {}{}",
            shown.join(", "),
            if files.len() > 12 { ", ..." } else { "" }
        )));
    }
    Ok(Choice::Directory(take))
}

/// Whether a file name carries the quantization `q` as a whole word
/// (`model-Q4_K_M.gguf` carries Q4_K_M, not Q4_K).
fn names_quant(file: &str, q: &str) -> bool {
    let name = file.rsplit('/').next().unwrap_or(file).to_ascii_uppercase();
    let stem = name.strip_suffix(".GGUF").unwrap_or(&name);
    stem.split(['-', '.', '/']).any(|w| w == q) || stem.ends_with(&format!("_{q}"))
}

/// The quantization a file name carries, for listing what a repo has.
fn quant_of(file: &str) -> Option<String> {
    let name = file.rsplit('/').next().unwrap_or(file).to_ascii_uppercase();
    let stem = name.strip_suffix(".GGUF").unwrap_or(&name).to_string();
    stem.split(['-', '.'])
        .rev()
        .find(|w| w.starts_with("Q") || w.starts_with("IQ") || ["F16", "BF16", "F32"].contains(w))
        .map(str::to_string)
}

/// `N` for a file named like `x-00001-of-0000N.gguf`.
fn split_parts(file: &str) -> Option<u32> {
    let stem = file.strip_suffix(".gguf").or_else(|| file.strip_suffix(".GGUF"))?;
    let (_, n) = stem.rsplit_once("-of-")?;
    n.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_listing_keeps_the_first_files_only() {
        let repo = Repo { owner: "o".into(), name: "r".into() };
        let entries: Vec<String> = (0..200_000).map(|i| format!(r#"{{"rfilename":"f{i}.gguf","size":1}}"#)).collect();
        let body = format!(r#"{{"id":"o/r","siblings":[{}],"more":1}}"#, entries.join(","));
        let names = parse_listing(&repo, body.as_bytes()).unwrap();
        assert_eq!(names.len(), MAX_FILES);
        assert_eq!(names[MAX_FILES - 1], format!("f{}.gguf", MAX_FILES - 1));
        assert!(
            parse_listing(&repo, br#"{"siblings":[{"rfilename":"../x"},{"rfilename":"a.gguf"}]}"#).unwrap()
                == ["a.gguf"]
        );
        assert!(parse_listing(&repo, b"{}").is_err());
    }

    use super::*;

    fn repo() -> Repo {
        Repo { owner: "o".into(), name: "r".into() }
    }

    fn files(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn hub_urls() {
        assert_eq!(api_url("https://huggingface.co/", &repo()), "https://huggingface.co/api/models/o/r");
        assert_eq!(
            file_url("https://huggingface.co", &repo(), "sub dir/m+1.gguf"),
            "https://huggingface.co/o/r/resolve/main/sub%20dir/m%2B1.gguf"
        );
    }

    #[test]
    fn quantizations_are_chosen_by_whole_name() {
        let fs = files(&["README.md", "m-Q4_K_M.gguf", "m-Q4_K_S.gguf", "m-Q8_0.gguf", "mmproj-m-f16.gguf"]);
        let pick = |q: &str| choose(&repo(), &Pick::Quant(q.into()), &fs);
        assert_eq!(pick("Q8_0").unwrap(), Choice::Gguf("m-Q8_0.gguf".into()));
        assert_eq!(choose(&repo(), &Pick::Default, &fs).unwrap(), Choice::Gguf("m-Q4_K_M.gguf".into()));
        let e = pick("Q4_K").unwrap_err().to_string();
        assert!(e.contains("no Q4_K GGUF") && e.contains("Q4_K_M, Q4_K_S, Q8_0"), "{e}");
        let lower = files(&["qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q8_0.gguf"]);
        assert_eq!(choose(&repo(), &Pick::Default, &lower).unwrap(), Choice::Gguf(lower[0].clone()));
        let split = files(&["m-Q4_K_M-00001-of-00003.gguf"]);
        assert!(choose(&repo(), &Pick::Default, &split).unwrap_err().to_string().contains("3 split GGUF parts"));
    }

    #[test]
    fn listed_names_that_climb_out_are_dropped() {
        let body = br#"{"siblings":[{"rfilename":"../../evil.gguf"},{"rfilename":"a\\..\\b.gguf"},{"rfilename":"ok/m.gguf"}]}"#;
        assert_eq!(parse_listing(&repo(), body).unwrap(), files(&["ok/m.gguf"]));
    }

    #[test]
    fn directories_and_files() {
        let fs = files(&["config.json", "tokenizer.json", "model.safetensors", "onnx/model.onnx", "README.md"]);
        assert_eq!(
            choose(&repo(), &Pick::Default, &fs).unwrap(),
            Choice::Directory(files(&["config.json", "tokenizer.json", "model.safetensors"]))
        );
        assert!(choose(&repo(), &Pick::Default, &files(&["README.md"])).unwrap_err().to_string().contains("neither"));
        assert!(choose(&repo(), &Pick::File("x.gguf".into()), &fs).unwrap_err().to_string().contains("no file x.gguf"));
    }
}
