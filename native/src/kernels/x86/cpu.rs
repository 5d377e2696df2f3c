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
