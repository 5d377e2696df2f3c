//! GGUF v2/v3 reader over a byte slice: header, metadata, tensor directory.
//! Every count, length and offset is checked against the file before use;
//! tensor data are zero-copy views into the input.

pub(crate) mod keys;
pub(crate) mod model;
#[cfg(test)]
mod model_tests;
mod reader;
mod rope;
#[cfg(test)]
mod tests;
#[cfg(any(test, feature = "testing"))]
pub mod tiny;
mod value;
#[cfg(any(test, feature = "testing"))]
pub mod write;

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::backend::quant::GgmlType;
use crate::error::{Error, Result};
use crate::tensors::{Located, Naming, TensorDir};
use reader::Reader;
pub use value::{Array, Value};

/// ggml's limit on tensor dimensions.
const MAX_DIMS: u32 = 4;
const DEFAULT_ALIGNMENT: u64 = 32;

/// A tensor of a GGUF file, its bytes a view into the file.
#[derive(Debug, Clone)]
pub struct TensorInfo<'a> {
    /// Its name.
    pub name: &'a str,
    /// ggml order: `dims[0]` is the contiguous (row) dimension.
    pub dims: Vec<u64>,
    /// Its type.
    pub ty: GgmlType,
    /// Offset from the start of the data section.
    pub offset: u64,
    /// Its bytes.
    pub data: &'a [u8],
}

impl TensorInfo<'_> {
    /// Elements (the product of the dimensions).
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
    /// Elements per row (`dims[0]`) and number of rows (product of the rest).
    pub fn rows(&self) -> (usize, usize) {
        let n = self.dims.first().copied().unwrap_or(1) as usize;
        (n, self.dims.iter().skip(1).product::<u64>() as usize)
    }
}

/// A parsed GGUF file: metadata and tensor directory, borrowing the bytes.
#[derive(Debug)]
pub struct Gguf<'a> {
    /// The format version (2 or 3).
    pub version: u32,
    /// Alignment of the tensor data (`general.alignment`, else 32).
    pub alignment: u64,
    /// Metadata in file order.
    pub metadata: Vec<(&'a str, Value<'a>)>,
    index: BTreeMap<&'a str, usize>,
    /// Tensors in file order.
    pub tensors: Vec<TensorInfo<'a>>,
    tensor_index: BTreeMap<&'a str, usize>,
    /// File offset of the data section.
    pub data_offset: u64,
}

impl<'a> Gguf<'a> {
    /// Parse the header, metadata and tensor directory of a GGUF file, checking every count, size
    /// and offset against the file.
    ///
    /// ```
    /// use tern_core::{runtime::Gguf, Error};
    /// assert!(matches!(Gguf::parse(b"GG"), Err(Error::Truncated { .. })));
    /// assert!(matches!(Gguf::parse(b"NOPE and more bytes than a header needs......"), Err(Error::BadMagic { .. })));
    /// ```
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        let magic = r.take(4, "magic")?;
        if magic != b"GGUF" {
            let mut found = [0u8; 4];
            found.copy_from_slice(magic);
            return Err(Error::BadMagic { found });
        }
        let version = r.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(Error::UnsupportedVersion { version });
        }
        // A tensor entry needs at least: name len 8, n_dims 4, type 4, offset 8.
        let n_tensors = r.count("tensor count", 24)?;
        // A metadata entry needs at least: key len 8, type 4, value 1.
        let n_kv = r.count("metadata count", 13)?;

        let mut metadata = Vec::with_capacity(n_kv as usize);
        let mut index = BTreeMap::new();
        for _ in 0..n_kv {
            let key = r.string("metadata key")?;
            let type_offset = r.offset();
            let type_id = r.u32("metadata value type")?;
            if type_id > 12 {
                return Err(Error::UnknownValueType { offset: type_offset, type_id });
            }
            let value = Value::read(&mut r, type_id, 0)?;
            if index.insert(key, metadata.len()).is_some() {
                return Err(Error::DuplicateKey { key: key.to_string() });
            }
            metadata.push((key, value));
        }

        let alignment = match index.get("general.alignment").map(|&i| &metadata[i].1) {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() => a,
                _ => {
                    return Err(Error::InvalidValue {
                        field: "general.alignment",
                        offset: 0,
                        detail: alloc::format!("{v:?} is not a power of two"),
                    })
                }
            },
        };

        let mut raw = Vec::with_capacity(n_tensors as usize);
        for _ in 0..n_tensors {
            raw.push(read_tensor_info(&mut r)?);
        }

        let data_offset = align_up(r.offset(), alignment).ok_or(Error::InvalidValue {
            field: "data section offset",
            offset: r.offset(),
            detail: "overflows".into(),
        })?;
        let data_len = (bytes.len() as u64).saturating_sub(data_offset);
        let data = if data_offset <= bytes.len() as u64 { &bytes[data_offset as usize..] } else { &[][..] };

        let mut tensors = Vec::with_capacity(raw.len());
        let mut tensor_index = BTreeMap::new();
        for (name, dims, type_id, offset) in raw {
            let ty = GgmlType::from_id(type_id)
                .ok_or_else(|| Error::UnknownTensorType { tensor: name.to_string(), type_id })?;
            let len = tensor_bytes(name, &dims, ty)?;
            if offset % alignment != 0 {
                return Err(Error::TensorMisaligned { tensor: name.to_string(), offset, alignment });
            }
            let end = offset.checked_add(len);
            if end.is_none_or(|e| e > data_len) {
                return Err(Error::TensorOutOfBounds { tensor: name.to_string(), offset, len, data_len });
            }
            if tensor_index.insert(name, tensors.len()).is_some() {
                return Err(Error::DuplicateTensor { name: name.to_string() });
            }
            let view = &data[offset as usize..(offset + len) as usize];
            tensors.push(TensorInfo { name, dims, ty, offset, data: view });
        }

        Ok(Gguf { version, alignment, metadata, index, tensors, tensor_index, data_offset })
    }

    /// The value of metadata key `key`.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.index.get(key).map(|&i| &self.metadata[i].1)
    }

    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo<'a>> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    // Typed accessors: absent → None, present with the wrong type → error.

    /// An integer key (any integer type), if present; an error if of another type.
    pub fn get_u64(&self, key: &str) -> Result<Option<u64>> {
        self.typed(key, "an unsigned integer", Value::as_u64)
    }
    /// A float key, if present; an error if of another type.
    pub fn get_f32(&self, key: &str) -> Result<Option<f32>> {
        self.typed(key, "a float", Value::as_f32)
    }
    /// A string key, if present; an error if of another type.
    pub fn get_str(&self, key: &str) -> Result<Option<&'a str>> {
        self.typed(key, "a string", Value::as_str)
    }
    /// A boolean key, if present; an error if of another type.
    pub fn get_bool(&self, key: &str) -> Result<Option<bool>> {
        self.typed(key, "a bool", Value::as_bool)
    }
    /// An array key, if present; an error if of another type.
    pub fn get_array(&self, key: &str) -> Result<Option<&Array<'a>>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_array().map(Some).ok_or(Error::KeyType { key: key.to_string(), expected: "an array" }),
        }
    }

    fn typed<T>(&self, key: &str, expected: &'static str, f: impl Fn(&Value<'a>) -> Option<T>) -> Result<Option<T>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => f(v).map(Some).ok_or(Error::KeyType { key: key.to_string(), expected }),
        }
    }

    /// An integer key that must be present.
    pub fn require_u64(&self, key: &str) -> Result<u64> {
        self.get_u64(key)?.ok_or_else(|| Error::MissingKey { key: key.into() })
    }
    /// A string key that must be present.
    pub fn require_str(&self, key: &str) -> Result<&'a str> {
        self.get_str(key)?.ok_or_else(|| Error::MissingKey { key: key.into() })
    }
}

fn read_tensor_info<'a>(r: &mut Reader<'a>) -> Result<(&'a str, Vec<u64>, u32, u64)> {
    let name = r.string("tensor name")?;
    let dims_offset = r.offset();
    let n_dims = r.u32("tensor n_dims")?;
    if n_dims == 0 || n_dims > MAX_DIMS {
        return Err(Error::InvalidValue {
            field: "tensor n_dims",
            offset: dims_offset,
            detail: alloc::format!("tensor {name}: {n_dims} dimensions (1..={MAX_DIMS} allowed)"),
        });
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    for _ in 0..n_dims {
        dims.push(r.u64("tensor dimension")?);
    }
    let type_id = r.u32("tensor type")?;
    let offset = r.u64("tensor offset")?;
    Ok((name, dims, type_id, offset))
}

fn tensor_bytes(name: &str, dims: &[u64], ty: GgmlType) -> Result<u64> {
    let shape_err = |detail: String| Error::TensorShape { tensor: name.to_string(), detail };
    let (bs, ts) = ty.block();
    let ne0 = dims[0];
    if !ne0.is_multiple_of(bs as u64) {
        return Err(shape_err(alloc::format!("row of {ne0} is not a multiple of the {} block of {bs}", ty.name())));
    }
    let overflow = || shape_err(alloc::format!("dimensions {dims:?} overflow"));
    let mut n = (ne0 / bs as u64).checked_mul(ts as u64).ok_or_else(overflow)?;
    for &d in &dims[1..] {
        n = n.checked_mul(d).ok_or_else(overflow)?;
    }
    Ok(n)
}

fn align_up(x: u64, a: u64) -> Option<u64> {
    Some(x.checked_add(a - 1)? / a * a)
}

impl TensorDir for Gguf<'_> {
    fn naming(&self) -> Naming {
        Naming::Gguf
    }
    fn get(&self, name: &str) -> Option<Located<'_>> {
        let t = self.tensor(name)?;
        let start = (self.data_offset + t.offset) as usize;
        Some(Located { buf: 0, start, data: t.data, ty: t.ty, dims: t.dims.clone() })
    }
    fn names(&self) -> Vec<&str> {
        self.tensors.iter().map(|t| t.name).collect()
    }
}

impl core::fmt::Display for TensorInfo<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} {:?} {}", self.name, self.dims, self.ty.name())
    }
}
