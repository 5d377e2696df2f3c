//! SentencePiece's `precompiled_charsmap` (tokenizer.json's `Precompiled`
//! normalizer: T5, XLM-R, ALBERT): checked before the `tokenizers` crate
//! reads it. The blob is a u32 trie size, a darts-clone double-array trie
//! of u32 units, then NUL-terminated replacement strings; the crate sizes
//! its trie by the first word and indexes units and strings as the units
//! say, so a blob from a stranger is refused here unless every unit a
//! lookup can reach and every string it can name lies inside the blob.

use alloc::string::String;
use alloc::vec::Vec;

use base64::Engine;
use tokenizers::normalizers::Precompiled;

use crate::error::{Error, Result};

/// Most bytes of a charsmap (sentencepiece's NFKC one is ~240 KiB).
const MAX_BYTES: usize = 16 << 20;

fn bad(detail: String) -> Error {
    Error::InvalidValue { field: "tokenizer.json precompiled_charsmap", offset: 0, detail }
}

/// The normalizer of a base64 `precompiled_charsmap`.
pub(super) fn precompiled(b64: &str) -> Result<Precompiled> {
    if b64.len() > MAX_BYTES / 3 * 4 + 4 {
        return Err(bad(alloc::format!("{} base64 characters, more than {MAX_BYTES} bytes", b64.len())));
    }
    let blob = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| bad(alloc::format!("base64: {e}")))?;
    check(&blob)?;
    Precompiled::from(&blob).map_err(|e| bad(alloc::format!("{e}")))
}

/// The trie's bounds, as `spm_precompiled`'s lookup walks it: from the
/// root, `pos ^= c` for a byte c ≥ 1 reads `units[pos]`; a unit whose label
/// is c moves on to `pos ^ offset` and, with a leaf, reads the value there,
/// an index into the strings.
fn check(blob: &[u8]) -> Result<()> {
    let size = match blob.get(..4) {
        Some(w) => u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize,
        None => return Err(bad(alloc::format!("{} bytes, no trie size", blob.len()))),
    };
    if size == 0 || size % 4 != 0 || size > blob.len() - 4 {
        return Err(bad(alloc::format!("trie of {size} bytes in a blob of {}", blob.len())));
    }
    let units: Vec<usize> =
        blob[4..4 + size].chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize).collect();
    let strings = core::str::from_utf8(&blob[4 + size..]).map_err(|_| bad("strings are not UTF-8".into()))?;
    let offset = |u: usize| (u >> 10) << ((u & (1 << 9)) >> 6);
    let label = |u: usize| u & ((1 << 31) | 0xFF);
    let fits = |pos: usize| (pos | 0xFF) < units.len();
    if !fits(offset(units[0])) {
        return Err(bad("the root's children lie past the trie".into()));
    }
    for (i, &u) in units.iter().enumerate() {
        if !(1..=0xFF).contains(&label(u)) {
            continue; // never matches a byte: never walked through
        }
        let next = i ^ offset(u);
        if !fits(next) {
            return Err(bad(alloc::format!("unit {i} points past the trie")));
        }
        if (u >> 8) & 1 == 1 {
            let v = units[next] & ((1 << 31) - 1);
            if v > strings.len() || !strings.is_char_boundary(v) {
                return Err(bad(alloc::format!("unit {i} names string offset {v} of {}", strings.len())));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    /// A blob of `units` and `strings`.
    fn blob(units: &[u32], strings: &str) -> Vec<u8> {
        let mut b = ((units.len() * 4) as u32).to_le_bytes().to_vec();
        units.iter().for_each(|u| b.extend_from_slice(&u.to_le_bytes()));
        b.extend_from_slice(strings.as_bytes());
        b
    }

    #[test]
    fn malformed_blobs_are_refused_before_the_crate_reads_them() {
        let e = |b: &[u8]| check(b).unwrap_err().to_string();
        assert!(e(&[1, 0]).contains("no trie size"));
        assert!(e(&[0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0]).contains("trie of 2147483647 bytes"));
        let mut units = [0u32; 256];
        units[0] = 1 << 20; // the root's children at 1024: past 256 units
        assert!(e(&blob(&units, "")).contains("root"));
        units[0] = 0;
        // 'a' with a leaf and offset 0: its value unit is itself, 0x161
        units[0x61] = 0x61 | (1 << 8);
        assert!(e(&blob(&units, "ab\0")).contains("string offset 353 of 3"));
        let ok = Precompiled::from(&blob(&units, &"x".repeat(353))).unwrap();
        assert!(check(&blob(&units, &"x".repeat(353))).is_ok());
        assert_eq!(ok.transform("a"), Some(""));
    }
}
