//! The one error type of tern-core. Every variant names what was wrong.

use alloc::string::String;
use core::fmt;

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The file ended before `what` (at byte `offset`, needing `need` bytes).
    Truncated {
        what: &'static str,
        offset: u64,
        need: u64,
        file_len: u64,
    },
    BadMagic {
        found: [u8; 4],
    },
    UnsupportedVersion {
        version: u32,
    },
    /// A value of `field` at `offset` is outside what the format allows.
    InvalidValue {
        field: &'static str,
        offset: u64,
        detail: String,
    },
    /// A count or length at `offset` would need more bytes than the file has.
    CountTooLarge {
        field: &'static str,
        offset: u64,
        count: u64,
    },
    InvalidUtf8 {
        field: &'static str,
        offset: u64,
    },
    UnknownValueType {
        offset: u64,
        type_id: u32,
    },
    UnknownTensorType {
        tensor: String,
        type_id: u32,
    },
    TensorOutOfBounds {
        tensor: String,
        offset: u64,
        len: u64,
        data_len: u64,
    },
    TensorMisaligned {
        tensor: String,
        offset: u64,
        alignment: u64,
    },
    /// A row of `tensor` is not a whole number of blocks of its type.
    TensorShape {
        tensor: String,
        detail: String,
    },
    DuplicateTensor {
        name: String,
    },
    DuplicateKey {
        key: String,
    },
    MissingKey {
        key: String,
    },
    /// A metadata key holds the wrong type of value.
    KeyType {
        key: String,
        expected: &'static str,
    },
    MissingTensor {
        name: String,
    },
    /// A tensor the model's architecture does not use.
    UnexpectedTensor {
        name: String,
    },
    /// Several tensor problems, reported together.
    Tensors {
        problems: alloc::vec::Vec<Error>,
    },
    /// A file of a model directory (config.json, an index, a shard) is
    /// malformed or disagrees with the others: `field` names what.
    ModelFile {
        file: String,
        field: String,
        detail: String,
    },
    /// A hyper-parameter no model can have (`key` as the file names it).
    Hyperparameter {
        key: String,
        value: String,
        why: String,
    },
    UnsupportedArch {
        arch: String,
    },
    /// No kernel exists for this tensor's type in this model.
    UnsupportedTensorType {
        arch: String,
        tensor: String,
        type_name: &'static str,
    },
    UnsupportedTokenizer {
        model: String,
    },
    Tokenizer {
        detail: String,
    },
    /// A chat template that does not compile or render.
    Template {
        detail: String,
    },
    Unsupported {
        what: String,
    },
    /// A token id outside the vocabulary.
    TokenOutOfRange {
        id: u32,
        n_vocab: usize,
    },
    /// The session's KV cache cannot hold more positions.
    ContextFull {
        n_ctx: usize,
        needed: usize,
    },
    InvalidArgument {
        what: String,
    },
}

/// Problems a report lists one by one; the rest are counted.
const MAX_LISTED: usize = 20;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Error::*;
        match self {
            Truncated { what, offset, need, file_len } => {
                write!(f, "truncated file: {what} at offset {offset} needs {need} bytes, file has {file_len}")
            }
            BadMagic { found } => write!(f, "not a GGUF file: magic {found:02x?}"),
            UnsupportedVersion { version } => write!(f, "unsupported GGUF version {version} (need 2 or 3)"),
            InvalidValue { field, offset, detail } => write!(f, "invalid {field} at offset {offset}: {detail}"),
            CountTooLarge { field, offset, count } => {
                write!(f, "{field} at offset {offset} is {count}, more than the file can hold")
            }
            InvalidUtf8 { field, offset } => write!(f, "{field} at offset {offset} is not valid UTF-8"),
            UnknownValueType { offset, type_id } => {
                write!(f, "unknown metadata value type {type_id} at offset {offset}")
            }
            UnknownTensorType { tensor, type_id } => write!(f, "tensor {tensor}: unknown ggml type id {type_id}"),
            TensorOutOfBounds { tensor, offset, len, data_len } => write!(
                f,
                "tensor {tensor}: data [{offset}, {offset}+{len}) is outside the data section of {data_len} bytes"
            ),
            TensorMisaligned { tensor, offset, alignment } => {
                write!(f, "tensor {tensor}: offset {offset} is not a multiple of the alignment {alignment}")
            }
            TensorShape { tensor, detail } => write!(f, "tensor {tensor}: {detail}"),
            DuplicateTensor { name } => write!(f, "tensor {name} appears twice"),
            DuplicateKey { key } => write!(f, "metadata key {key} appears twice"),
            MissingKey { key } => write!(f, "missing metadata key {key}"),
            KeyType { key, expected } => write!(f, "metadata key {key} should be {expected}"),
            MissingTensor { name } => write!(f, "missing tensor {name}"),
            UnexpectedTensor { name } => write!(f, "unexpected tensor {name}"),
            Tensors { problems } => {
                write!(f, "{} tensor problems:", problems.len())?;
                for p in problems.iter().take(MAX_LISTED) {
                    write!(f, "\n  {p}")?;
                }
                if problems.len() > MAX_LISTED {
                    write!(f, "\n  … and {} more", problems.len() - MAX_LISTED)?;
                }
                Ok(())
            }
            ModelFile { file, field, detail } => write!(f, "{file}: {field}: {detail}"),
            Hyperparameter { key, value, why } => write!(f, "{key} = {value}: {why}"),
            UnsupportedArch { arch } => write!(
                f,
                "unsupported architecture {arch:?} (supported: llama, qwen2, qwen3; \
                 LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)"
            ),
            UnsupportedTensorType { arch, tensor, type_name } => {
                write!(f, "{arch}: tensor {tensor} has type {type_name}, which has no kernel")
            }
            UnsupportedTokenizer { model } => {
                write!(f, "unsupported tokenizer model {model:?} (supported: gpt2 byte-level BPE)")
            }
            Tokenizer { detail } => write!(f, "tokenizer: {detail}"),
            Template { detail } => write!(f, "chat template: {detail}"),
            Unsupported { what } => write!(f, "unsupported: {what}"),
            TokenOutOfRange { id, n_vocab } => write!(f, "token id {id} is outside the vocabulary of {n_vocab}"),
            ContextFull { n_ctx, needed } => {
                write!(f, "context full: {needed} positions needed, the session holds {n_ctx}")
            }
            InvalidArgument { what } => write!(f, "invalid argument: {what}"),
        }
    }
}

impl core::error::Error for Error {}

pub type Result<T> = core::result::Result<T, Error>;
