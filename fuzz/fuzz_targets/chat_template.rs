//! Any text as a chat template, rendered under its budget over a fixed
//! conversation: an error or text, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_core::{ChatTemplate, Message};

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    if let Ok(t) = ChatTemplate::new(src, "<s>", "</s>") {
        let msgs = [Message::new("system", "be brief"), Message::new("user", "hi <|im_end|>")];
        let _ = t.render(&msgs, true, None);
    }
});
