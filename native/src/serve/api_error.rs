//! The error answer of the OpenAI-compatible endpoints.

use serde_json::{json, Value};

/// A 4xx answer: OpenAI's error object, naming the parameter.
#[derive(Debug)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// What is wrong.
    pub message: String,
    /// The request field it is about.
    pub param: Option<String>,
    /// OpenAI's error type (`invalid_request_error`, ...).
    pub kind: &'static str,
}

impl ApiError {
    /// A 400 about request field `param`.
    pub fn invalid(param: &str, message: impl Into<String>) -> ApiError {
        ApiError { status: 400, message: message.into(), param: Some(param.into()), kind: "invalid_request_error" }
    }
    /// A 400 from core's error: about its field if it names one, else `param`.
    pub fn core(param: &str, e: tern_core::Error) -> ApiError {
        match e {
            tern_core::Error::InvalidField { field, what } => ApiError::invalid(&field, what),
            e => ApiError::invalid(param, e.to_string()),
        }
    }
    /// An error of this status and type.
    pub fn new(status: u16, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), param: None, kind }
    }
    /// The JSON body OpenAI's clients expect.
    pub fn body(&self) -> Value {
        json!({ "error": { "message": self.message, "type": self.kind, "param": self.param, "code": null } })
    }
}
