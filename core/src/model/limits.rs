//! The sizes no real checkpoint comes near, past which a file is refused
//! before anything is sized by it.

/// Limits no real checkpoint comes near (the largest have ~128 layers,
/// 16k-wide embeddings, 53k-wide feed-forwards, 262k vocabularies): a file
/// past them is refused before anything is sized by it.
pub(crate) const MAX_LAYERS: usize = 1024;
/// Most embedding width a file may declare.
pub(crate) const MAX_EMBD: usize = 1 << 16;
/// Most feed-forward width.
pub(crate) const MAX_FF: usize = 1 << 18;
/// Most heads.
pub(crate) const MAX_HEADS: usize = 1024;
/// Most tokens in a vocabulary.
pub(crate) const MAX_VOCAB: usize = 1 << 21;
/// Most training context.
pub(crate) const MAX_CTX_TRAIN: usize = 1 << 26;
