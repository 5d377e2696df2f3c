//! Sizes from a command line or a request, checked against this machine
//! before anything is allocated or started for them.

use std::path::{Path, PathBuf};

use tern_core::KvType;

use crate::{Error, Loaded, Result};

/// More threads than this is a typo, not a configuration.
pub const MAX_THREADS: usize = 1024;

/// Bytes of memory this process can still take: the kernel's
/// `MemAvailable`, or less when a cgroup (a container's limit, v2 or v1)
/// leaves less room; when neither says, a bound no machine reaches (only
/// overflow is refused).
pub fn available_memory() -> u64 {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let meminfo = read(Path::new("/proc/meminfo")).and_then(|m| mem_available(&m));
    let cgroup = read(Path::new("/proc/self/cgroup")).and_then(|c| cgroup_room(&c, &read));
    meminfo.into_iter().chain(cgroup).min().unwrap_or(1 << 50)
}

/// `MemAvailable` of a /proc/meminfo, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let kb =
        meminfo.lines().find_map(|l| l.strip_prefix("MemAvailable:")?.trim().strip_suffix("kB")?.trim().parse().ok());
    kb.map(|kb: u64| kb.saturating_mul(1024))
}

/// The room the tightest memory limit over this process's cgroup and its
/// parents leaves: the limit less what the group holds beyond the page
/// cache (which, as in `MemAvailable`, can be given back). None: no limit.
fn cgroup_room(self_cgroup: &str, read: &dyn Fn(&Path) -> Option<String>) -> Option<u64> {
    let number = |p: PathBuf| read(&p).and_then(|s| s.trim().parse::<u64>().ok());
    let stat = |p: PathBuf, key: &str| {
        read(&p)?.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.trim().parse::<u64>().ok())
    };
    let mut room: Option<u64> = None;
    for line in self_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        // (mount, limit, usage, the page cache's key in memory.stat)
        let (base, max, used, cache) = match controllers {
            "" => ("/sys/fs/cgroup", "memory.max", "memory.current", "file"),
            c if c.split(',').any(|x| x == "memory") => {
                ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache")
            }
            _ => continue,
        };
        let base = Path::new(base);
        let mut dir = base.join(path.trim_start_matches('/'));
        // bounded: a path has finitely many components
        loop {
            // "max" (v2) or a page-rounded 2^63 (v1): no limit here
            if let Some(limit) = number(dir.join(max)).filter(|&l| l < 1 << 62) {
                let held = number(dir.join(used)).unwrap_or(0);
                let held = held.saturating_sub(stat(dir.join("memory.stat"), cache).unwrap_or(0));
                let r = limit.saturating_sub(held);
                room = Some(room.map_or(r, |x| x.min(r)));
            }
            if dir == base || !dir.pop() || !dir.starts_with(base) {
                break;
            }
        }
    }
    room
}

/// A thread count: 0 (all cores) or 1..=MAX_THREADS.
pub fn check_threads(n: usize) -> Result<usize> {
    if n > MAX_THREADS {
        return Err(invalid(format!("{n} threads (at most {MAX_THREADS}; 0 = one per core)")));
    }
    Ok(n)
}

/// `n_seqs` sessions of `n_ctx` positions must fit in available memory
/// (an error naming the sizes, before anything is allocated); if they fit
/// but not beside the model's mapped weights, a warning says so (once per
/// process): the weights would be read from disk again and again.
pub fn check_sessions(lm: &Loaded, n_seqs: usize, n_ctx: usize, n_batch: usize, kv: KvType) -> Result<()> {
    let available = available_memory();
    lm.model.check_sessions(n_seqs, n_ctx, n_batch, kv, available)?;
    let sessions = lm.model.sessions_bytes(n_seqs, n_ctx, n_batch, kv).unwrap_or(u64::MAX);
    let (mapped, m) = (mapped_bytes(lm), &lm.model);
    let f = m.weights.footprint(m.config.moe.as_ref().map_or(1, |m| m.n_expert_used));
    // of a mapped mixture of experts, a token reads only its experts
    let active = mapped.saturating_sub(f.bytes - f.active_bytes);
    if let Some(w) = fit_warning(mapped, active, sessions, available) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| eprintln!("tern: warning: {w}"));
    }
    Ok(())
}

/// Bytes of the model's weights mapped from its files (read from disk as
/// they are touched; the rest were made at load and are already held).
pub fn mapped_bytes(lm: &Loaded) -> u64 {
    let mapped = lm.model.buffers().iter().filter(|b| matches!(b, crate::Buffer::Mapped(_)));
    mapped.map(|b| b.as_ref().len() as u64).sum()
}

/// What to say when `mapped` bytes of weights and `sessions` bytes of KV
/// cache and scratch do not fit together in `available` bytes (of which a
/// token reads `active`: less for a mixture of experts).
fn fit_warning(mapped: u64, active: u64, sessions: u64, available: u64) -> Option<String> {
    let gb = |n: u64| n as f64 / 1e9;
    if mapped.saturating_add(sessions) <= available {
        return None;
    }
    if active < mapped && active.saturating_add(sessions) <= available {
        return Some(format!(
            "the model's {:.2} GB of weights and {:.2} GB of KV cache and scratch are more than the {:.2} GB of \
             memory available; a token reads {:.2} GB of them (its experts), which fit: experts not in memory \
             will be read from disk when chosen",
            gb(mapped),
            gb(sessions),
            gb(available),
            gb(active)
        ));
    }
    Some(format!(
        "the model's {:.2} GB of weights and {:.2} GB of KV cache and scratch are more than the {:.2} GB of \
         memory available: its weights will be read from disk as it runs (slowly)",
        gb(mapped),
        gb(sessions),
        gb(available)
    ))
}

/// An `InvalidArgument` error saying `what`.
pub(crate) fn invalid(what: String) -> Error {
    Error::Core(tern_core::Error::InvalidArgument { what })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn fs(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let m: HashMap<PathBuf, String> = files.iter().map(|(p, s)| (PathBuf::from(p), s.to_string())).collect();
        move |p| m.get(p).cloned()
    }

    #[test]
    fn cgroup_v2_limit_less_what_is_held_beyond_the_page_cache() {
        let read = fs(&[
            ("/sys/fs/cgroup/app/memory.max", "4000000000\n"),
            ("/sys/fs/cgroup/app/memory.current", "3000000000\n"),
            ("/sys/fs/cgroup/app/memory.stat", "anon 1000000000\nfile 2000000000\n"),
            ("/sys/fs/cgroup/memory.max", "max\n"),
        ]);
        assert_eq!(cgroup_room("0::/app\n", &read), Some(3_000_000_000));
        // a parent's tighter limit counts
        let read = fs(&[
            ("/sys/fs/cgroup/a/b/memory.max", "max\n"),
            ("/sys/fs/cgroup/a/memory.max", "2000000000\n"),
            ("/sys/fs/cgroup/a/memory.current", "500000000\n"),
        ]);
        assert_eq!(cgroup_room("0::/a/b\n", &read), Some(1_500_000_000));
        assert_eq!(cgroup_room("0::/\n", &fs(&[("/sys/fs/cgroup/memory.max", "max")])), None);
    }

    #[test]
    fn weights_that_do_not_fit_beside_the_cache_are_named() {
        let gb = 1_000_000_000;
        assert_eq!(fit_warning(4 * gb, 4 * gb, gb, 6 * gb), None);
        let w = fit_warning(4 * gb, 4 * gb, gb, 3_900_000_000).expect("a warning");
        assert!(w.contains("4.00 GB of weights") && w.contains("1.00 GB of KV") && w.contains("3.90 GB"), "{w}");
        assert!(w.contains("slowly"), "{w}");
        // a mixture of experts whose tokens read 1 GB of its 4: named so
        let w = fit_warning(4 * gb, gb, gb, 3_900_000_000).expect("a warning");
        assert!(w.contains("a token reads 1.00 GB") && w.contains("when chosen"), "{w}");
        // ...unless even that does not fit
        assert!(fit_warning(4 * gb, 3 * gb, gb, 3_900_000_000).unwrap().contains("slowly"));
    }

    #[test]
    fn cgroup_v1_and_no_limit() {
        let read = fs(&[
            ("/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "1073741824"),
            ("/sys/fs/cgroup/memory/job/memory.usage_in_bytes", "900000000"),
            ("/sys/fs/cgroup/memory/job/memory.stat", "cache 10\ntotal_cache 800000000\n"),
        ]);
        let cg = "4:memory:/job\n3:cpuset:/\n";
        assert_eq!(cgroup_room(cg, &read), Some(1_073_741_824 - 100_000_000));
        let unlimited = fs(&[("/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "9223372036854771712")]);
        assert_eq!(cgroup_room(cg, &unlimited), None);
        assert_eq!(cgroup_room("garbage\n\n1:cpu", &read), None);
        assert_eq!(mem_available("MemTotal: 5 kB\nMemAvailable:   24138020 kB\n"), Some(24138020 * 1024));
    }
}
