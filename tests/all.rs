//! Every cross-crate test, one module per file beside this one, in one
//! binary: `cargo test --release -p tern-tests --test all -- perplexity`
//! runs one file's tests (a filter matches the module path).

mod embed;
mod embed_decoder;
mod gemma3n;
mod generation;
mod grammar;
mod hf;
mod hf_errors;
mod hostile;
mod lora;
mod moe;
mod parity_exact;
mod parity_gemma3;
mod parity_quant;
mod perplexity;
mod request;
mod rerank;
mod sensitivity;
mod tokenizer;
mod tokenizer_json;
mod tokenizer_spm;
mod widen;
