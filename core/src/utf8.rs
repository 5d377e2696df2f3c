//! Incremental UTF-8: turn a stream of token bytes into text deltas that are
//! always whole characters.

use alloc::string::String;
use alloc::vec::Vec;

/// Bytes to text as they arrive: complete UTF-8 sequences out, a split one held until its end
/// comes.
///
/// ```
/// let mut s = tern_core::runtime::Utf8Stream::new();
/// assert_eq!(s.push(&[0xE2, 0x82]), ""); // half of "€"
/// assert_eq!(s.push(&[0xAC, b'!']), "€!");
/// assert_eq!(s.finish(), "");
/// ```
#[derive(Default, Debug, Clone)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append bytes; return the text that is now complete.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match core::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let good = e.valid_up_to();
                    out.push_str(core::str::from_utf8(&self.pending[..good]).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete sequence at the end: hold it back.
                        None => {
                            self.pending.drain(..good);
                            return out;
                        }
                        // Invalid bytes: emit U+FFFD for them, go on.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..good + bad);
                        }
                    }
                }
            }
        }
    }

    /// End of stream: whatever is held back is not valid UTF-8.
    pub fn finish(&mut self) -> String {
        let out = if self.pending.is_empty() { String::new() } else { String::from(char::REPLACEMENT_CHARACTER) };
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_back_partial_sequences() {
        let crab = "🦀".as_bytes();
        let mut s = Utf8Stream::new();
        assert_eq!(s.push(b"a"), "a");
        assert_eq!(s.push(&crab[..1]), "");
        assert_eq!(s.push(&crab[1..3]), "");
        assert_eq!(s.push(&crab[3..]), "🦀");
        assert_eq!(s.push(&[0xff, b'b']), "\u{fffd}b");
        assert_eq!(s.push(&crab[..2]), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }
}
