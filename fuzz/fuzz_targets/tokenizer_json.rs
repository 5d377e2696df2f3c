//! Any bytes as tokenizer.json: an error or a tokenizer, which then
//! encodes a fixed text (with control-token strings in it) to an error or
//! ids, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_core::Tokenizer;

fuzz_target!(|data: &[u8]| {
    if let Ok(t) = Tokenizer::from_hf(data, None, None, &[]) {
        let _ = t.encode("Hello, wörld! <|im_end|> 123 aaaaaaaaaaaaaaaaaaaa!", true);
    }
});
