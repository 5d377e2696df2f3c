//! One file from a URL into the cache: resumed with HTTP Range where a
//! partial file was left, checked against a SHA-256 where one is known,
//! written to `NAME.part` and renamed to `NAME` only when whole, verified
//! and of the form its name says (JSON parses, a safetensors header is
//! sane, a GGUF has its magic), under a lock (`NAME.lock`, removed once the
//! file is in place) so two processes never write the same file. A body
//! that trickles (fewer than `http::MIN_BYTES` in `http::STALL_WINDOW`) is a
//! stalled connection, resumed like a broken one.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    // the holder removes the file when it is done: a lock taken on a file
    // no longer at `path` is taken again on the one there now
    for _ in 0..100 {
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| fetch(format!("creating {}: {e}", path.display())))?;
        if f.try_lock().is_err() {
            if show {
                eprintln!("tern: waiting for another process downloading {}", dest.display());
            }
            f.lock().map_err(|e| fetch(format!("locking {}: {e}", path.display())))?;
        }
        if same_file(&f, &path) {
            return Ok(f);
        }
    }
    Err(fetch(format!("{}: the lock file keeps being replaced", path.display())))
}

/// Whether `f` is the file at `path` now.
fn same_file(f: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (f.metadata(), fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        // (elsewhere an open file cannot be removed: it is still there)
        let _ = f;
        path.exists()
    }
}

/// After a failed download: the lock (released first) and the folders the
/// download made, if nothing else is in them, up to the cache's `root`.
fn clean_up(dest: &Path, lock: File) {
    drop(lock);
    let _ = fs::remove_file(sibling(dest, ".lock"));
    let mut dir = dest.parent();
    while let Some(d) = dir {
        if fs::remove_dir(d).is_err() {
            break; // not empty (or not ours to remove)
        }
        dir = d.parent();
    }
}

/// Download `job` unless its file is already in the cache.
pub(crate) fn download(client: &Client, job: &Job, show: bool) -> Result<()> {
    let lock = lock(job.dest, show)?;
    if job.dest.exists() {
        return Ok(());
    }
    let r = fetch_locked(client, job, show);
    if r.is_ok() {
        // (whoever waits on this lock finds the file in place)
        let _ = fs::remove_file(sibling(job.dest, ".lock"));
    } else if !sibling(job.dest, ".part").exists() {
        clean_up(job.dest, lock);
    }
    r
}

fn fetch_locked(client: &Client, job: &Job, show: bool) -> Result<()> {
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
                let kept = match fs::metadata(&part) {
                    Ok(m) => format!("{} bytes kept in {}, run again to resume", m.len(), part.display()),
                    Err(_) => "nothing was kept".into(),
                };
                return Err(fetch(format!("{}: {why} ({ATTEMPTS} tries); {kept}", job.url)));
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
    if let Err(why) = check_form(&part, job.dest, job.expect) {
        let _ = fs::remove_file(&part);
        return Err(fetch(format!("{}: {why}; the download was deleted", job.url)));
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
            // the range is wrong: what we hold may be whole (if its size is
            // the file's and a hash will say so), else it is started over
            let total =
                content_range.as_deref().and_then(|c| c.strip_prefix("bytes */")).and_then(|t| t.parse::<u64>().ok());
            let hash = job.sha256.map(str::to_string).or(got.sha256);
            if total == Some(from) && hash.is_some() {
                return Ok(hash);
            }
            let _ = fs::remove_file(part);
            return Err(Failure::Broken(format!(
                "HTTP 416 for bytes {from}- (the file has {}): starting over",
                total.map_or("an unstated size".into(), |t| format!("{t} bytes"))
            )));
        }
        s if s.is_server_error() || s == StatusCode::TOO_MANY_REQUESTS => {
            return Err(Failure::Broken(format!("HTTP {s}")));
        }
        s => return Err(Failure::Final(status_error(&got.url, s))),
    };
    // nothing asked for a compressed body (no Accept-Encoding): one would
    // be cached as the model's bytes
    if let Some(enc) = header(header::CONTENT_ENCODING).filter(|e| !e.trim().eq_ignore_ascii_case("identity")) {
        return Err(Failure::Final(fetch(format!("{}: a {enc}-encoded body, which was not asked for", got.url))));
    }
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
    let (min_bytes, window) = client.min_rate;
    let (mut since, mut window_at) = (Instant::now(), at);
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => return Err(Failure::Broken(format!("the connection broke after {at} bytes: {e}"))),
        };
        if since.elapsed() >= window {
            if at + n as u64 - window_at < min_bytes {
                return Err(Failure::Broken(format!(
                    "the download stalled: {} bytes in {:.0} s, fewer than {min_bytes}",
                    at + n as u64 - window_at,
                    since.elapsed().as_secs_f64()
                )));
            }
            (since, window_at) = (Instant::now(), at + n as u64);
        }
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

/// Whether the file at `part` has the form `dest`'s name (or `expect`)
/// says: a proxy's HTML error page served with a 200 must not become the
/// cached model.
fn check_form(part: &Path, dest: &Path, expect: Expect) -> std::result::Result<(), String> {
    let name = dest.file_name().unwrap_or_default().to_string_lossy().to_ascii_lowercase();
    let mut f = File::open(part).map_err(|e| e.to_string())?;
    let mut head = [0u8; 16];
    let n = f.read(&mut head).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&head[..n]).trim_start().to_ascii_lowercase();
    if text.starts_with("<!doctype") || text.starts_with("<html") || text.starts_with("<?xml") {
        return Err(format!("{name}: the server sent a web page, not the file"));
    }
    if expect == Expect::Gguf || name.ends_with(".gguf") {
        return if head.starts_with(b"GGUF") { Ok(()) } else { Err(format!("{name}: not a GGUF file")) };
    }
    if name.ends_with(".json") {
        let f = File::open(part).map_err(|e| e.to_string())?;
        serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(f))
            .map_err(|e| format!("{name} is not JSON: {e}"))?;
    } else if name.ends_with(".safetensors") {
        let len = fs::metadata(part).map_err(|e| e.to_string())?.len();
        let n_header = (n >= 8).then(|| u64::from_le_bytes(head[..8].try_into().unwrap_or_default()));
        let sane = n_header.filter(|&h| h >= 2 && h <= len - 8 && h <= 100 << 20 && head[8] == b'{');
        if sane.is_none() {
            return Err(format!("{name}: not a safetensors file (its header length or opening is wrong)"));
        }
    }
    Ok(())
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
