//! One file from a URL into the cache: resumed with HTTP Range where a
//! partial file was left, checked against a SHA-256 where one is known,
//! written to `NAME.part` and renamed to `NAME` only when whole and verified,
//! under a lock (`NAME.lock`) so two processes never write the same file.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};
use ureq::http::{header, StatusCode};

use super::http::{fetch, Client};
use super::progress::Bar;
use crate::Result;

/// Tries per file: a connection that breaks is resumed from where it broke.
const ATTEMPTS: u32 = 5;

/// What the downloaded bytes must be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A GGUF file: refused at once if it does not begin with the magic.
    Gguf,
    /// Anything (configs, tokenizers, safetensors, wheels).
    Any,
}

/// One download.
pub(crate) struct Job<'a> {
    pub url: &'a str,
    pub dest: &'a Path,
    /// The SHA-256 (hex) the file must have, if known before asking;
    /// otherwise the one the server declares (the hub's LFS etag), if any.
    pub sha256: Option<&'a str>,
    pub expect: Expect,
}

/// `dest` with `ext` appended to its file name.
pub(crate) fn sibling(dest: &Path, ext: &str) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(ext);
    dest.with_file_name(name)
}

/// Take the lock beside `dest`, waiting (and saying so) if another process
/// holds it. Released when the returned file is dropped.
pub(crate) fn lock(dest: &Path, show: bool) -> Result<File> {
    let path = sibling(dest, ".lock");
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| fetch(format!("creating {}: {e}", dir.display())))?;
    }
    let f = File::create(&path).map_err(|e| fetch(format!("creating {}: {e}", path.display())))?;
    if f.try_lock().is_err() {
        if show {
            eprintln!("tern: waiting for another process downloading {}", dest.display());
        }
        f.lock().map_err(|e| fetch(format!("locking {}: {e}", path.display())))?;
    }
    Ok(f)
}

/// Download `job` unless its file is already in the cache.
pub(crate) fn download(client: &Client, job: &Job, show: bool) -> Result<()> {
    let _lock = lock(job.dest, show)?;
    if job.dest.exists() {
        return Ok(());
    }
    let part = sibling(job.dest, ".part");
    let bar = Bar::new(show, job.dest);
    let mut declared = None;
    let mut attempt = 0;
    loop {
        attempt += 1;
        match transfer(client, job, &part, &bar) {
            Ok(sha) => {
                declared = declared.or(sha);
                break;
            }
            Err(Failure::Final(e)) => return Err(e),
            Err(Failure::Broken(why)) if attempt < ATTEMPTS => {
                bar.note(&format!("{why}; resuming"));
                std::thread::sleep(Duration::from_millis(250 << attempt));
            }
            Err(Failure::Broken(why)) => {
                let kept = fs::metadata(&part).map_or(0, |m| m.len());
                return Err(fetch(format!(
                    "{}: {why} ({ATTEMPTS} tries); {kept} bytes kept in {}, run again to resume",
                    job.url,
                    part.display()
                )));
            }
        }
    }
    bar.finish();
    if let Some(want) = job.sha256.map(str::to_string).or(declared) {
        let got = sha256_of(&part)?;
        if got != want {
            let _ = fs::remove_file(&part);
            return Err(fetch(format!(
                "{}: SHA-256 mismatch (expected {want}, got {got}); the download was deleted",
                job.url
            )));
        }
    }
    File::open(&part).and_then(|f| f.sync_all()).map_err(|e| fetch(format!("{}: {e}", part.display())))?;
    fs::rename(&part, job.dest).map_err(|e| fetch(format!("renaming {} into place: {e}", part.display())))
}

enum Failure {
    /// The connection broke or the server stumbled: worth resuming.
    Broken(String),
    /// Nothing to retry: a 404, a file that is not a model, a full disk.
    Final(crate::Error),
}

/// One request: append what it brings to `part`. The SHA-256 the server
/// declared, if any.
fn transfer(client: &Client, job: &Job, part: &Path, bar: &Bar) -> std::result::Result<Option<String>, Failure> {
    let from = fs::metadata(part).map_or(0, |m| m.len());
    let mut got = client.get(job.url, from).map_err(|t| match t.transient {
        true => Failure::Broken(t.detail),
        false => Failure::Final(fetch(t.detail)),
    })?;
    let status = got.response.status();
    let header =
        |h: header::HeaderName| got.response.headers().get(h).and_then(|v| v.to_str().ok()).map(str::to_string);
    let content_range = header(header::CONTENT_RANGE);
    let length = header(header::CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok());
    let (start, total) = match status {
        StatusCode::OK => (0, length),
        StatusCode::PARTIAL_CONTENT => match content_range.as_deref().and_then(parse_content_range) {
            Some((s, _, t)) if s == from => (s, t),
            _ => {
                return Err(Failure::Final(fetch(format!(
                    "{}: a 206 answer with Content-Range {content_range:?} for bytes {from}-",
                    job.url
                ))))
            }
        },
        StatusCode::RANGE_NOT_SATISFIABLE => {
            // what we hold is already whole, or longer than the file: restart
            let total =
                content_range.as_deref().and_then(|c| c.strip_prefix("bytes */")).and_then(|t| t.parse::<u64>().ok());
            if total == Some(from) {
                return Ok(got.sha256);
            }
            let _ = fs::remove_file(part);
            return Err(Failure::Broken("the partial file does not fit the server's".into()));
        }
        s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
            return Err(Failure::Broken(format!("HTTP {s}")));
        }
        s => return Err(Failure::Final(status_error(&got.url, s))),
    };
    let mut out = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(start == 0)
        .append(start > 0)
        .open(part)
        .map_err(|e| Failure::Final(disk(part, e)))?;
    bar.start(start, total);
    let mut body = got.response.body_mut().as_reader();
    let mut buf = vec![0u8; 1 << 18];
    let mut at = start;
    let mut head = Vec::with_capacity(4);
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(Failure::Broken(format!("the connection broke after {at} bytes: {e}"))),
        };
        if head.len() < 4 && job.expect == Expect::Gguf && start == 0 {
            head.extend(buf[..n].iter().take(4 - head.len()));
            if !b"GGUF".starts_with(&head) {
                drop(out);
                let _ = fs::remove_file(part);
                let text = String::from_utf8_lossy(&buf[..n.min(24)]).into_owned();
                return Err(Failure::Final(fetch(format!("{}: not a GGUF file (it begins {text:?})", got.url))));
            }
        }
        if let Err(e) = out.write_all(&buf[..n]) {
            drop(out);
            let _ = fs::remove_file(part);
            return Err(Failure::Final(disk(part, e)));
        }
        at += n as u64;
        bar.inc(n as u64);
    }
    match total {
        Some(t) if at < t => Err(Failure::Broken(format!("the connection closed after {at} of {t} bytes"))),
        Some(t) if at > t => {
            let _ = fs::remove_file(part);
            Err(Failure::Final(fetch(format!("{}: {at} bytes arrived, {t} announced", got.url))))
        }
        _ if at < 4 && job.expect == Expect::Gguf => {
            let _ = fs::remove_file(part);
            Err(Failure::Final(fetch(format!("{}: not a GGUF file ({at} bytes)", got.url))))
        }
        _ => Ok(got.sha256),
    }
}

/// A write that failed (a full disk, most likely): the partial file is
/// already deleted, so nothing half-written stays in the cache.
fn disk(part: &Path, e: std::io::Error) -> crate::Error {
    fetch(format!("writing {}: {e}; the partial download was deleted", part.display()))
}

/// An HTTP status that ends the download, said plainly.
pub(crate) fn status_error(url: &str, s: StatusCode) -> crate::Error {
    let why = match s.as_u16() {
        401 | 403 => "access refused: the model may be gated or private (set HF_TOKEN to a token that may read it)",
        404 => "not found",
        _ => "the server refused it",
    };
    fetch(format!("{url}: HTTP {}: {why}", s.as_u16()))
}

/// `bytes START-END/TOTAL` (TOTAL may be `*`).
fn parse_content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let (range, total) = v.strip_prefix("bytes ")?.split_once('/')?;
    let (s, e) = range.split_once('-')?;
    Some((s.trim().parse().ok()?, e.trim().parse().ok()?, total.trim().parse().ok()))
}

/// The SHA-256 of a file, hex.
pub(crate) fn sha256_of(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(|e| fetch(format!("{}: {e}", path.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| fetch(format!("{}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges() {
        assert_eq!(parse_content_range("bytes 100-199/200"), Some((100, 199, Some(200))));
        assert_eq!(parse_content_range("bytes 0-9/*"), Some((0, 9, None)));
        assert_eq!(parse_content_range("items 0-9/10"), None);
    }
}
