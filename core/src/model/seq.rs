//! One sequence's part of a batch: its cache, where its tokens start, its
//! tokens, and the adapters they run with.

use super::adapter::Applied;
use super::kv_cache::KvCache;

/// One sequence's part of a batch.
pub(super) struct Seq<'a> {
    pub kv: &'a mut KvCache,
    /// Position of the first token (tokens before it are in `kv`).
    pub pos0: usize,
    pub tokens: &'a [u32],
    /// The LoRA adapters its tokens run with.
    pub lora: &'a [Applied],
}
