//! The one error type of tern-llm-core. Every variant names what was wrong.

use alloc::string::String;
use core::fmt;

/// What went wrong, with what it was about: the field, key, tensor or file,
/// its offset, and the values that disagree.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The file ended before `what` (at byte `offset`, needing `need` bytes).
    Truncated {
        /// The part being read.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// Bytes it needs.
        need: u64,
        /// Bytes the file has.
        file_len: u64,
    },
    /// Not a GGUF file: its first four bytes.
    BadMagic {
        /// The bytes found instead of `GGUF`.
        found: [u8; 4],
    },
    /// A GGUF version tern does not read (2 and 3 it does).
    UnsupportedVersion {
        /// The file's version.
        version: u32,
    },
    /// A value of `field` at `offset` is outside what the format allows.
    InvalidValue {
        /// What the value is.
        field: &'static str,
        /// Where it is.
        offset: u64,
        /// What is wrong with it.
        detail: String,
    },
    /// A count or length at `offset` would need more bytes than the file has.
    CountTooLarge {
        /// What is counted.
        field: &'static str,
        /// Where the count is.
        offset: u64,
        /// The count.
        count: u64,
    },
    /// A string that is not UTF-8.
    InvalidUtf8 {
        /// What the string is.
        field: &'static str,
        /// Where it is.
        offset: u64,
    },
    /// A metadata value type GGUF does not define.
    UnknownValueType {
        /// Where the type is.
        offset: u64,
        /// The type's number.
        type_id: u32,
    },
    /// A tensor type (ggml type number) tern does not know.
    UnknownTensorType {
        /// The tensor's name.
        tensor: String,
        /// The type's number.
        type_id: u32,
    },
    /// A tensor whose bytes lie outside the file's data.
    TensorOutOfBounds {
        /// The tensor's name.
        tensor: String,
        /// Its offset in the data section.
        offset: u64,
        /// Its bytes.
        len: u64,
        /// Bytes the data section has.
        data_len: u64,
    },
    /// A tensor not at the file's alignment.
    TensorMisaligned {
        /// The tensor's name.
        tensor: String,
        /// Its offset.
        offset: u64,
        /// The alignment it should have.
        alignment: u64,
    },
    /// A tensor whose shape does not fit its type or the model.
    TensorShape {
        /// The tensor's name.
        tensor: String,
        /// Its shape and the one expected.
        detail: String,
    },
    /// Two tensors of one name.
    DuplicateTensor {
        /// The name.
        name: String,
    },
    /// Two metadata entries of one key.
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A metadata key the model needs is absent.
    MissingKey {
        /// The key.
        key: String,
    },
    /// A metadata key holds the wrong type of value.
    KeyType {
        /// The key.
        key: String,
        /// The type it should hold.
        expected: &'static str,
    },
    /// A tensor the architecture needs is absent.
    MissingTensor {
        /// Its name, as the format spells it.
        name: String,
    },
    /// A tensor the model's architecture does not use.
    UnexpectedTensor {
        /// Its name.
        name: String,
    },
    /// Several tensor problems, reported together.
    Tensors {
        /// Each problem.
        problems: alloc::vec::Vec<Error>,
    },
    /// A file of a model directory (config.json, an index, a shard) is
    /// malformed or disagrees with the others: `field` names what.
    ModelFile {
        /// The file's name.
        file: String,
        /// What in it.
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// A hyper-parameter no model can have (`key` as the file names it).
    Hyperparameter {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// The range it must be in, or why not.
        why: String,
    },
    /// An architecture tern does not run.
    UnsupportedArch {
        /// Its name.
        arch: String,
        /// What tern runs instead ("the Llama, …, and Phi-3 families").
        supported: String,
    },
    /// No kernel exists for this tensor's type in this model.
    UnsupportedTensorType {
        /// The model's architecture.
        arch: String,
        /// The tensor.
        tensor: String,
        /// Its type.
        type_name: &'static str,
    },
    /// A tokenizer model tern does not implement.
    UnsupportedTokenizer {
        /// Its name (GGUF `tokenizer.ggml.model` or tokenizer.json's).
        model: String,
    },
    /// A tokenizer that could not be built, or text it could not encode.
    Tokenizer {
        /// What happened.
        detail: String,
    },
    /// A chat template that does not compile or render.
    Template {
        /// What happened.
        detail: String,
    },
    /// A grammar, JSON Schema or regular expression that does not compile
    /// (or would take more than its bounds to).
    Grammar {
        /// What is wrong, as the compiler names it.
        detail: String,
    },
    /// Something tern does not do (yet), named.
    Unsupported {
        /// What it is.
        what: String,
    },
    /// A token id outside the vocabulary.
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// The vocabulary's size.
        n_vocab: usize,
    },
    /// The session's KV cache cannot hold more positions.
    ContextFull {
        /// Positions it holds.
        n_ctx: usize,
        /// Positions the call needs.
        needed: usize,
    },
    /// An argument out of its range, or inconsistent with another.
    InvalidArgument {
        /// What is wrong.
        what: String,
    },
    /// A LoRA adapter that cannot be applied to this model, or a file
    /// that is not one: `what` names the check it failed.
    Adapter {
        /// The adapter (its path or name).
        adapter: String,
        /// What is wrong.
        what: String,
    },
    /// A field of a request (`tools[2]`, `tool_choice`, ...) that is wrong.
    InvalidField {
        /// The field, as the request names it.
        field: String,
        /// What is wrong with it.
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
            UnsupportedArch { arch, supported } => {
                write!(f, "unsupported architecture {arch:?} (tern runs {supported})")
            }
            UnsupportedTensorType { arch, tensor, type_name } => {
                write!(f, "{arch}: tensor {tensor} has type {type_name}, which has no kernel")
            }
            UnsupportedTokenizer { model } => {
                write!(f, "unsupported tokenizer model {model:?} (supported: gpt2 byte-level BPE)")
            }
            Tokenizer { detail } => write!(f, "tokenizer: {detail}"),
            Template { detail } => write!(f, "chat template: {detail}"),
            Grammar { detail } => write!(f, "grammar: {detail}"),
            Unsupported { what } => write!(f, "unsupported: {what}"),
            TokenOutOfRange { id, n_vocab } => write!(f, "token id {id} is outside the vocabulary of {n_vocab}"),
            ContextFull { n_ctx, needed } => {
                write!(f, "context full: {needed} positions needed, the session holds {n_ctx}")
            }
            InvalidArgument { what } => write!(f, "invalid argument: {what}"),
            Adapter { adapter, what } => write!(f, "LoRA adapter {adapter}: {what}"),
            InvalidField { field, what } => write!(f, "{field}: {what}"),
        }
    }
}

impl core::error::Error for Error {}

/// tern-llm-core's result.
pub type Result<T> = core::result::Result<T, Error>;
