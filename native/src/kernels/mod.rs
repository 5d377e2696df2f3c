//! Kernel backends for this CPU, chosen once at run time: the fastest the
//! CPU supports, or the one `TERN_KERNELS` names (`scalar`, `avx2`,
//! `avx512`, `amx` on x86-64; `neon`, `dotprod`, `i8mm` on aarch64). Every
//! backend equals the scalar reference bit for bit.
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

use std::sync::OnceLock;

use tern_core::backend::{Kernels, Scalar};

use crate::error::{Error, Result};

/// The names of the backends this CPU can run, fastest first.
pub fn available() -> Vec<&'static str> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if x86::Amx::new().is_some() {
            v.push("amx");
        }
        if x86::Avx512::new().is_some() {
            v.push("avx512");
        }
        if x86::Avx2::new().is_some() {
            v.push("avx2");
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if arm::NeonI8mm::new().is_some() {
            v.push("i8mm");
        }
        if arm::NeonDot::new().is_some() {
            v.push("dotprod");
        }
        if arm::Neon::new().is_some() {
            v.push("neon");
        }
    }
    v.push("scalar");
    v
}

/// The backend named `name`, if this CPU can run it.
pub fn by_name(name: &str) -> Option<&'static dyn Kernels> {
    match name {
        "scalar" => Some(&Scalar),
        #[cfg(target_arch = "x86_64")]
        "avx2" => x86::Avx2::new().map(|k| Box::leak(Box::new(k)) as &'static dyn Kernels),
        #[cfg(target_arch = "x86_64")]
        "avx512" => x86::Avx512::new().map(|k| Box::leak(Box::new(k)) as &'static dyn Kernels),
        #[cfg(target_arch = "x86_64")]
        "amx" => x86::Amx::new().map(|k| Box::leak(Box::new(k)) as &'static dyn Kernels),
        #[cfg(target_arch = "aarch64")]
        "neon" => arm::Neon::new().map(|k| Box::leak(Box::new(k)) as &'static dyn Kernels),
        #[cfg(target_arch = "aarch64")]
        "dotprod" => arm::NeonDot::new().map(|k| Box::leak(Box::new(k)) as &'static dyn Kernels),
        #[cfg(target_arch = "aarch64")]
        "i8mm" => arm::NeonI8mm::new().map(|k| Box::leak(Box::new(k)) as &'static dyn Kernels),
        _ => None,
    }
}

/// Every backend name this build knows, whatever the CPU.
pub const NAMES: &[&str] = &[
    #[cfg(target_arch = "x86_64")]
    "amx",
    #[cfg(target_arch = "x86_64")]
    "avx512",
    #[cfg(target_arch = "x86_64")]
    "avx2",
    #[cfg(target_arch = "aarch64")]
    "i8mm",
    #[cfg(target_arch = "aarch64")]
    "dotprod",
    #[cfg(target_arch = "aarch64")]
    "neon",
    "scalar",
];

/// Why backend `name` cannot run here: not a name this build knows, or
/// the check of this CPU (or OS) that failed.
pub fn why_not(name: &str) -> String {
    if !NAMES.contains(&name) {
        return format!("TERN_KERNELS={name} is not a kernel set (one of: {})", NAMES.join(", "));
    }
    #[cfg(target_arch = "x86_64")]
    if name == "amx" {
        if let Err(check) = x86::Amx::check() {
            return format!("TERN_KERNELS=amx is not available: {check} (available: {})", available().join(", "));
        }
    }
    format!("TERN_KERNELS={name} is not available on this CPU (available: {})", available().join(", "))
}

/// The process's backend: `TERN_KERNELS` if set (an error if this CPU
/// cannot run it: no silent fallback), else the fastest available.
pub fn select() -> Result<&'static dyn Kernels> {
    static CHOICE: OnceLock<std::result::Result<&'static dyn Kernels, String>> = OnceLock::new();
    let choice = CHOICE.get_or_init(|| match std::env::var("TERN_KERNELS") {
        Ok(name) => by_name(&name).ok_or_else(|| why_not(&name)),
        Err(_) => Ok(by_name(available()[0]).unwrap_or(&Scalar)),
    });
    choice.clone().map_err(|detail| Error::Core(tern_core::Error::Unsupported { what: detail }))
}

/// The backend in use, what else this CPU can run, and (on x86-64, where
/// AMX is not granted) why not: `tern info`'s `kernels` line.
pub fn report() -> Result<String> {
    let k = select()?;
    let s = format!("{} (available: {})", k.name(), available().join(", "));
    #[cfg(target_arch = "x86_64")]
    let s = match x86::Amx::check() {
        Err(why) => format!("{s}; no amx: {why}"),
        Ok(_) => s,
    };
    Ok(s)
}
