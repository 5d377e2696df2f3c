//! `tern list` and `tern rm`: the model cache as ollama shows it — what
//! is there, under the name `-m` takes, its size and path — and removing
//! one.

use std::path::{Path, PathBuf};

use tern::{Error, Result};

#[derive(clap::Args)]
pub struct ListArgs {
    /// One JSON object a model instead of a table
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct RmArgs {
    /// Models to remove, by the name `tern list` shows (or their path)
    #[arg(required = true)]
    models: Vec<String>,
}

/// A model in the cache.
struct Entry {
    /// The reference `-m` takes for it.
    name: String,
    path: PathBuf,
    bytes: u64,
}

/// Files and directories no model is: downloads under way, locks, the
/// notices kept beside a model.
fn is_model_file(p: &Path) -> bool {
    let name = p.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    name.ends_with(".gguf")
}

/// Bytes under `p` (a file, or a directory's files), symlinks not followed.
fn size(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else { return 0 };
    if !m.is_dir() {
        return m.len();
    }
    std::fs::read_dir(p).map_or(0, |d| d.flatten().map(|e| size(&e.path())).sum())
}

fn dirs(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(p).map_or_else(|_| Vec::new(), |d| d.flatten().map(|e| e.path()).collect());
    v.sort();
    v
}

/// Every model in the cache at `root`: its top-level files and
/// directories (built-in models), `hf/OWNER/REPO` (a repository's GGUF
/// files, or the repository as one HF directory), `url/…` files.
fn entries(root: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_string_lossy().replace('\\', "/");
    for p in dirs(root) {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match (name.as_str(), p.is_dir()) {
            ("hf", true) => {
                for repo in dirs(&p).iter().flat_map(|o| dirs(o)).filter(|r| r.is_dir()) {
                    let reference = rel(&repo).trim_start_matches("hf/").to_string();
                    if repo.join("config.json").is_file() {
                        out.push(Entry { name: reference, bytes: size(&repo), path: repo });
                        continue;
                    }
                    let mut stack = vec![repo.clone()];
                    while let Some(d) = stack.pop() {
                        for f in dirs(&d) {
                            if f.is_dir() {
                                stack.push(f);
                            } else if is_model_file(&f) {
                                let file = f.strip_prefix(&repo).unwrap_or(&f).to_string_lossy().replace('\\', "/");
                                out.push(Entry { name: format!("{reference}/{file}"), bytes: size(&f), path: f });
                            }
                        }
                    }
                }
            }
            ("url", true) => {
                let mut stack = vec![p.clone()];
                while let Some(d) = stack.pop() {
                    for f in dirs(&d) {
                        if f.is_dir() {
                            stack.push(f);
                        } else if is_model_file(&f) {
                            out.push(Entry { name: f.display().to_string(), bytes: size(&f), path: f });
                        }
                    }
                }
            }
            (_, true) if p.join("config.json").is_file() || p.join("modules.json").is_file() => {
                out.push(Entry { name, bytes: size(&p), path: p })
            }
            (_, false) if is_model_file(&p) => {
                let known = tern::fetch::known::ALL.iter().find(|k| k.file == name).map(|k| k.names[0].to_string());
                out.push(Entry { name: known.unwrap_or(name), bytes: size(&p), path: p })
            }
            _ => {}
        }
    }
    out
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.1} KiB", b as f64 / 1024.0),
    }
}

/// `tern list`.
pub fn list(a: ListArgs) -> Result<()> {
    let root = tern::models_dir();
    let all = entries(&root);
    if a.json {
        for e in &all {
            println!("{}", serde_json::json!({ "name": e.name, "bytes": e.bytes, "path": e.path }));
        }
        return Ok(());
    }
    if all.is_empty() {
        eprintln!("tern: no models in {} (tern pull fetches one)", root.display());
        return Ok(());
    }
    let width = all.iter().map(|e| e.name.len()).max().unwrap_or(4).max(4);
    println!("{:width$}  {:>10}  PATH", "NAME", "SIZE");
    for e in &all {
        println!("{:width$}  {:>10}  {}", e.name, human(e.bytes), e.path.display());
    }
    Ok(())
}

/// `tern rm`.
pub fn rm(a: RmArgs) -> Result<()> {
    let root = tern::models_dir();
    let all = entries(&root);
    // every name is checked before anything is removed
    let chosen: Vec<&Entry> = a
        .models
        .iter()
        .map(|m| {
            all.iter().find(|e| e.name == *m || e.path == Path::new(m)).ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
                Error::Fetch {
                    detail: format!("{m:?} is not in the model cache {} (there: {})", root.display(), names.join(", ")),
                }
            })
        })
        .collect::<Result<_>>()?;
    for e in chosen {
        let io = |source| Error::Io { path: e.path.clone(), source };
        match e.path.is_dir() {
            true => std::fs::remove_dir_all(&e.path).map_err(io)?,
            false => std::fs::remove_file(&e.path).map_err(io)?,
        }
        // its lock and partial download, if any
        for ext in ["lock", "part"] {
            let mut side = e.path.clone().into_os_string();
            side.push(format!(".{ext}"));
            let _ = std::fs::remove_file(PathBuf::from(side));
        }
        eprintln!("tern: removed {} ({}, {})", e.name, human(e.bytes), e.path.display());
    }
    Ok(())
}
