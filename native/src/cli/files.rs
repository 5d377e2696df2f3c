//! Files the command line reads (prompts, grammars, texts, saved
//! conversations), each with a bound the file cannot talk its way past.

use std::path::Path;

use tern::{Error, Result};

/// The bytes of `path`, read with a bound of `max` whatever the file is —
/// a regular file, a pipe, a device such as `/dev/zero` — so a file past
/// the bound is an error naming the file, its `what` and the limit, never
/// an allocation the file cannot justify.
pub fn read_bounded(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    read_bounded_why(path, max, what, "")
}

/// [`read_bounded`], the error saying `why` the bound is what it is.
pub fn read_bounded_why(path: &Path, max: u64, what: &str, why: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    // (a regular file says its size up front; anything else is read up to the bound)
    let declared = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    if let Some(len) = declared.filter(|&len| len > max) {
        return Err(too_long(path, what, &format!("has {len} bytes,"), max, why));
    }
    let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(max) as usize);
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(too_long(path, what, "goes on", max, why));
    }
    Ok(bytes)
}

/// [`read_bounded_why`] as UTF-8 text.
pub fn read_text(path: &Path, max: u64, what: &str, why: &str) -> Result<String> {
    let bytes = read_bounded_why(path, max, what, why)?;
    String::from_utf8(bytes).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{what} is not UTF-8: {e}")),
    })
}

fn too_long(path: &Path, what: &str, has: &str, max: u64, why: &str) -> Error {
    let why = if why.is_empty() { String::new() } else { format!(" ({why})") };
    invalid(format!("{what} {} {has} past the {max} bytes accepted{why}", path.display()))
}

/// An `InvalidArgument` error saying `what`.
pub fn invalid(what: String) -> Error {
    Error::Core(tern_core::Error::InvalidArgument { what })
}
