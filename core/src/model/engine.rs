//! What a forward pass runs on: the kernels, the thread pool, and which
//! path (exact f32 or 8-bit activations).

use super::KvType;
use crate::backend::Kernels;
use crate::parallel::Parallel;

/// What a forward pass runs on.
#[derive(Clone, Copy)]
pub struct Engine<'e> {
    /// The backend (`crate::backend::Scalar`, or a SIMD one).
    pub kernels: &'e dyn Kernels,
    /// The workers parallel regions run on.
    pub par: &'e dyn Parallel,
    /// f32 activations with weights dequantized on the fly (the oracle path).
    pub exact: bool,
}

impl Engine<'_> {
    /// The KV cache type this path defaults to: f32 on the exact path
    /// (oracle parity), f16 on the quantized path (as llama.cpp).
    pub fn kv_type(&self) -> KvType {
        if self.exact {
            KvType::F32
        } else {
            KvType::F16
        }
    }
}
