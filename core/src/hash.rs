//! FNV-1a over bytes with a final avalanche: the keys of the prefix
//! cache's blocks, and the identities of LoRA adapters and adapter sets.

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// A running hash, from a seed (a parent's key, or 0).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new(seed: u64) -> Fnv {
        Fnv(seed ^ OFFSET)
    }

    pub(crate) fn bytes(mut self, b: &[u8]) -> Fnv {
        for &x in b {
            self.0 = (self.0 ^ u64::from(x)).wrapping_mul(PRIME);
        }
        self
    }

    pub(crate) fn u64(self, v: u64) -> Fnv {
        self.bytes(&v.to_le_bytes())
    }

    pub(crate) fn u32(self, v: u32) -> Fnv {
        self.bytes(&v.to_le_bytes())
    }

    /// The hash, its bits mixed (murmur3's finalizer).
    pub(crate) fn finish(self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}
