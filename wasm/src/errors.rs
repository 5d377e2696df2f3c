//! tern errors as JS `Error`s with a `code` the package's `TernError` keeps.

use tern_core::Error;
use wasm_bindgen::JsValue;

/// A short, stable name for the kind of error.
pub fn code(e: &Error) -> &'static str {
    match e {
        Error::Truncated { .. }
        | Error::BadMagic { .. }
        | Error::InvalidValue { .. }
        | Error::CountTooLarge { .. }
        | Error::InvalidUtf8 { .. }
        | Error::UnknownValueType { .. }
        | Error::TensorOutOfBounds { .. }
        | Error::TensorMisaligned { .. }
        | Error::TensorShape { .. }
        | Error::DuplicateTensor { .. }
        | Error::DuplicateKey { .. }
        | Error::MissingKey { .. }
        | Error::KeyType { .. }
        | Error::MissingTensor { .. }
        | Error::UnexpectedTensor { .. }
        | Error::Tensors { .. }
        | Error::Hyperparameter { .. }
        | Error::ModelFile { .. } => "bad_file",
        Error::UnsupportedVersion { .. }
        | Error::UnknownTensorType { .. }
        | Error::UnsupportedArch { .. }
        | Error::UnsupportedTensorType { .. }
        | Error::UnsupportedTokenizer { .. }
        | Error::Unsupported { .. } => "unsupported",
        Error::ContextFull { .. } => "context_full",
        Error::Tokenizer { .. } | Error::Template { .. } | Error::TokenOutOfRange { .. } => "invalid_input",
        Error::InvalidArgument { .. } | Error::InvalidField { .. } => "invalid_argument",
        Error::Grammar { .. } => "grammar",
        _ => "error",
    }
}

/// A JS `Error` with the message and a `code` property.
pub fn js_error(code: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name("TernError");
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&e, &"code".into(), &code.into());
    e.into()
}

pub fn from_core(e: Error) -> JsValue {
    js_error(code(&e), &e.to_string())
}
