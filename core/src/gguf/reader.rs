//! A bounds-checked little-endian cursor over the bytes of a GGUF file.

use crate::error::{Error, Result};

pub(crate) struct Reader<'a> {
    pub bytes: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub fn take(&mut self, n: u64, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() as u64 {
            return Err(Error::Truncated { what, offset: self.offset(), need: n, file_len: self.bytes.len() as u64 });
        }
        let s = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let s = self.take(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }
    pub fn u16(&mut self, what: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    pub fn u32(&mut self, what: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    pub fn u64(&mut self, what: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count that will drive an allocation or a loop: each of the `count`
    /// items needs at least `min_item_bytes`, so the rest of the file bounds it.
    pub fn count(&mut self, field: &'static str, min_item_bytes: u64) -> Result<u64> {
        let offset = self.offset();
        let count = self.u64(field)?;
        let need = count.checked_mul(min_item_bytes);
        match need {
            Some(n) if n <= self.remaining() as u64 => Ok(count),
            _ => Err(Error::CountTooLarge { field, offset, count }),
        }
    }

    /// A GGUF string: u64 length, then UTF-8 bytes.
    pub fn string(&mut self, field: &'static str) -> Result<&'a str> {
        let len = self.count(field, 1)?;
        let offset = self.offset();
        let bytes = self.take(len, field)?;
        core::str::from_utf8(bytes).map_err(|_| Error::InvalidUtf8 { field, offset })
    }
}
