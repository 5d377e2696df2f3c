//! The architectures tern runs, by name (each one's rules are its
//! family's: `super::family`).

/// A model architecture tern runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Llama (and SmolLM2, Mistral and the other Llama-shaped models).
    Llama,
    /// Qwen2 / Qwen2.5 (attention biases).
    Qwen2,
    /// Qwen3 (Q/K norms).
    Qwen3,
    /// Gemma 2: Gemma 3's block without Q/K norms, softcapped attention
    /// scores and logits, every other layer windowed (one RoPE).
    Gemma2,
    /// Gemma 3 (text): Q/K norms, norms after attention and MLP too,
    /// GELU-tanh, scaled embeddings, local (sliding-window) and global
    /// layers with their own RoPE bases.
    Gemma3,
    /// Phi-3: Llama's block with Q/K/V and gate/up each stored as one
    /// fused matrix.
    Phi3,
}
