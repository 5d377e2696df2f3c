//! OpenAI's tool calling over the chat endpoint, streamed: the text that
//! may be sent before a call could begin. The request shapes and the
//! model's syntax are core's (`tern_core::tools`).

use tern_core::runtime::CALL_OPEN;

/// The length of the text that may be streamed now: all of it before the
/// first call's opening tag, less a tail that could begin one.
pub fn streamable(text: &str) -> usize {
    if let Some(i) = text.find(CALL_OPEN) {
        return i;
    }
    let held = (1..CALL_OPEN.len()).rev().find(|&k| text.len() >= k && text.ends_with(&CALL_OPEN[..k])).unwrap_or(0);
    text.len() - held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_held_back_from_a_possible_tag() {
        assert_eq!(streamable("Hello"), 5);
        assert_eq!(streamable("Hello <tool"), 6);
        assert_eq!(streamable("Hi <tool_call>\n{"), 3);
        assert_eq!(streamable("a < b"), 5);
    }
}
