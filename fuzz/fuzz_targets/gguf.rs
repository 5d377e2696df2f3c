//! Any bytes: the GGUF reader, the model binder and the embedded
//! tokenizer return an error or a value, never panic, hang or
//! over-allocate.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_core::runtime::Gguf;
use tern_core::Tokenizer;
use tern_core::Model;

fuzz_target!(|data: &[u8]| {
    if Gguf::parse(data).is_ok() {
        let _ = Model::load_gguf_with(data, Tokenizer::from_gguf);
    }
});
