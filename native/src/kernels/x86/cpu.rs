//! Capability tokens: zero-sized values that exist only when the CPU has
//! the features their names say. A kernel taking one may enter
//! `#[target_feature]` code; the token is the proof (as memchr does it).

/// AVX2, FMA, F16C and BMI2.
#[derive(Clone, Copy, Debug)]
pub struct Avx2(());

/// AVX-512 F, BW, VL and VNNI, besides everything `Avx2` proves.
#[derive(Clone, Copy, Debug)]
pub struct Avx512(());

impl Avx2 {
    /// The token, if this CPU has the features.
    pub fn new() -> Option<Avx2> {
        let has = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
            && std::arch::is_x86_feature_detected!("bmi2");
        has.then_some(Avx2(()))
    }
}

impl Avx512 {
    /// The token, if this CPU has the features.
    pub fn new() -> Option<Avx512> {
        let has = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vnni");
        Avx2::new().and(has.then_some(Avx512(())))
    }

    /// The AVX2 features this token also proves.
    pub fn avx2(self) -> Avx2 {
        Avx2(())
    }
}

/// AMX-TILE and AMX-INT8, usable by this process (the OS enabled the tile
/// state and granted it), besides everything `Avx512` proves: its kernels
/// run int8 tiles where they pay and AVX-512's elsewhere.
#[derive(Clone, Copy, Debug)]
pub struct Amx(());

impl Amx {
    /// The token, if every check passes.
    pub fn new() -> Option<Amx> {
        Amx::check().ok()
    }

    /// The token, or the first check that failed, named. The OS is asked
    /// once per process (the grant is the process's, for every thread).
    pub fn check() -> Result<Amx, &'static str> {
        static GRANTED: std::sync::OnceLock<Result<(), &'static str>> = std::sync::OnceLock::new();
        Avx512::new().ok_or("the CPU lacks AVX-512 F/BW/VL/VNNI (the AMX kernels' epilogues use it)")?;
        (*GRANTED.get_or_init(amx_checks)).map(|()| Amx(()))
    }

    /// The AVX-512 features this token also proves.
    pub fn avx512(self) -> Avx512 {
        Avx512(())
    }
}

/// CPUID, XCR0 and the OS's grant, in that order.
// (CPUID's intrinsics are safe functions from Rust 1.94 on, unsafe in the
// minimum Rust this crate declares)
#[allow(unused_unsafe)]
fn amx_checks() -> Result<(), &'static str> {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // SAFETY: CPUID exists on every x86-64 CPU; leaf 0 says the highest leaf.
    let max_leaf = unsafe { __cpuid(0) }.eax;
    // SAFETY: leaf 7 is read only if it exists.
    let leaf7_edx = if max_leaf >= 7 { unsafe { __cpuid_count(7, 0) }.edx } else { 0 };
    // SAFETY: leaf 1 exists on every x86-64 CPU.
    let osxsave = unsafe { __cpuid(1) }.ecx & (1 << 27) != 0;
    // SAFETY: XGETBV runs only with OSXSAVE set, which makes it legal.
    let xcr0 = osxsave.then(|| unsafe { xcr0() });
    judge(CpuFacts { max_leaf, leaf7_edx, xcr0 })?;
    request_tile_data(XFEATURE_XTILEDATA)
}

/// The state component of the tiles' data, as `arch_prctl` numbers it.
const XFEATURE_XTILEDATA: i64 = 18;

/// What the CPU says of AMX: CPUID's highest leaf, leaf 7's EDX, and XCR0
/// (`None` if the OS has not enabled XSAVE, CPUID.1:ECX.OSXSAVE).
struct CpuFacts {
    max_leaf: u32,
    leaf7_edx: u32,
    xcr0: Option<u64>,
}

/// The first of the CPU's checks that fails, named.
fn judge(f: CpuFacts) -> Result<(), &'static str> {
    if f.max_leaf < 7 {
        return Err("CPUID has no leaf 7 (no AMX)");
    }
    if f.leaf7_edx & (1 << 24) == 0 {
        return Err("CPUID reports no AMX-TILE");
    }
    if f.leaf7_edx & (1 << 25) == 0 {
        return Err("CPUID reports no AMX-INT8");
    }
    let Some(xcr0) = f.xcr0 else {
        return Err("the OS has not enabled XSAVE (CPUID.1:ECX.OSXSAVE), so no tile state");
    };
    // XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the OS enabled the state
    if xcr0 & (0b11 << 17) != 0b11 << 17 {
        return Err("XCR0 has the tile state (XTILECFG, XTILEDATA) disabled: the OS does not support AMX");
    }
    Ok(())
}

/// XCR0, the state components the OS enabled.
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    // SAFETY: the caller checked OSXSAVE, which makes XGETBV legal.
    unsafe { std::arch::x86_64::_xgetbv(0) }
}

/// Linux: ask for state component `feature` (`arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA)` for the tiles); without the grant the first tile
/// instruction is a SIGILL.
#[cfg(target_os = "linux")]
fn request_tile_data(feature: i64) -> Result<(), &'static str> {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    // SAFETY: arch_prctl with these arguments only changes the process's
    // permitted extended state (or refuses); it reads and writes no memory
    // of ours.
    let r = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, feature as libc::c_long) };
    if r != 0 {
        return Err("Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM)");
    }
    Ok(())
}

/// Elsewhere the tile state is not asked for, so AMX is not used.
#[cfg(not(target_os = "linux"))]
fn request_tile_data(_feature: i64) -> Result<(), &'static str> {
    Err("the tile state is asked for on Linux only (this OS: not asked)")
}

#[cfg(test)]
mod tests {
    use super::{judge, request_tile_data, CpuFacts};

    /// The OS's refusal is an error naming it: Linux refuses a state
    /// component that is not a dynamic one (63: none is), through the same
    /// call that asks for the tiles.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_refused_permission_is_named() {
        let got = request_tile_data(63).unwrap_err();
        assert!(got.contains("Linux refused"), "{got:?}");
    }

    /// Each check, failing alone, is the one named (the OS's grant is
    /// asked for only once these pass).
    #[test]
    fn each_failed_amx_check_is_named() {
        let ok = || CpuFacts { max_leaf: 0x20, leaf7_edx: 0b11 << 24, xcr0: Some(0b11 << 17 | 0xe7) };
        assert_eq!(judge(ok()), Ok(()));
        let cases = [
            (CpuFacts { max_leaf: 6, ..ok() }, "no leaf 7"),
            (CpuFacts { leaf7_edx: 1 << 25, ..ok() }, "no AMX-TILE"),
            (CpuFacts { leaf7_edx: 1 << 24, ..ok() }, "no AMX-INT8"),
            (CpuFacts { xcr0: None, ..ok() }, "OSXSAVE"),
            (CpuFacts { xcr0: Some(1 << 17 | 0xe7), ..ok() }, "XTILEDATA) disabled"),
            (CpuFacts { xcr0: Some(1 << 18 | 0xe7), ..ok() }, "XTILEDATA) disabled"),
        ];
        for (facts, want) in cases {
            let got = judge(facts).unwrap_err();
            assert!(got.contains(want), "{got:?} does not name {want:?}");
        }
    }
}
