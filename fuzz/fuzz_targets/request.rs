//! Any bytes as the body of a chat or text completion request: a request
//! or an OpenAI error naming the field, never a panic; and any bytes as
//! core's own request JSON (`Request::from_json`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern::serve::openai::Request;
use tern_core::{GenerationDefaults, Request as CoreRequest};

fuzz_target!(|data: &[u8]| {
    let defaults = GenerationDefaults::default();
    for chat in [true, false] {
        if let Ok(r) = Request::parse(data, chat, 49152, &defaults) {
            let _ = r.core.validate(49152, &defaults);
        }
    }
    if let Ok(r) = CoreRequest::from_json(data) {
        let _ = r.validate(49152, &defaults);
    }
});
