//! GGUF metadata values: every scalar type, strings and (nested) arrays.
//! An array read from a file stays a view into its bytes (validated once,
//! decoded element by element on demand), so a metadata array costs no
//! memory beyond the file's: a 100 MB token list is not 3 GB of values.

use alloc::vec::Vec;

use super::reader::Reader;
use crate::error::{Error, Result};

/// A metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    /// `uint8`.
    U8(u8),
    /// `int8`.
    I8(i8),
    /// `uint16`.
    U16(u16),
    /// `int16`.
    I16(i16),
    /// `uint32`.
    U32(u32),
    /// `int32`.
    I32(i32),
    /// `uint64`.
    U64(u64),
    /// `int64`.
    I64(i64),
    /// `float32`.
    F32(f32),
    /// `float64`.
    F64(f64),
    /// `bool`.
    Bool(bool),
    /// A UTF-8 string.
    Str(&'a str),
    /// An array (a view into the file).
    Array(Array<'a>),
}

/// A GGUF array: a view into the file's bytes, or values built in memory
/// (for writing files).
#[derive(Debug, Clone, PartialEq)]
pub struct Array<'a>(Repr<'a>);

#[derive(Debug, Clone, PartialEq)]
enum Repr<'a> {
    /// `len` elements of type `elem` at `bytes`, already validated.
    View {
        elem: u32,
        len: u64,
        bytes: &'a [u8],
        depth: u32,
    },
    Owned(Vec<Value<'a>>),
}

impl<'a> From<Vec<Value<'a>>> for Array<'a> {
    fn from(v: Vec<Value<'a>>) -> Self {
        Array(Repr::Owned(v))
    }
}

impl<'a> Array<'a> {
    /// Elements.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::View { len, .. } => *len as usize,
            Repr::Owned(v) => v.len(),
        }
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements' type id (0 for an empty array built in memory).
    pub fn elem_type(&self) -> u32 {
        match &self.0 {
            Repr::View { elem, .. } => *elem,
            Repr::Owned(v) => v.first().map_or(0, Value::type_id),
        }
    }

    /// The elements in order, decoded as they are reached.
    pub fn iter(&self) -> impl Iterator<Item = Value<'a>> + '_ {
        let (view, owned) = match &self.0 {
            Repr::View { elem, len, bytes, depth } => (Some((*elem, *len, Reader::new(bytes), *depth)), None),
            Repr::Owned(v) => (None, Some(v.iter().cloned())),
        };
        let decoded = view.into_iter().flat_map(|(elem, len, mut r, depth)| {
            // validated when the file was parsed: decoding cannot fail
            (0..len).map_while(move |_| Value::read(&mut r, elem, depth + 1).ok())
        });
        decoded.chain(owned.into_iter().flatten())
    }

    /// Element `i`: direct for fixed-size elements, a walk for strings and
    /// arrays.
    pub fn get(&self, i: usize) -> Option<Value<'a>> {
        match &self.0 {
            Repr::View { elem, len, bytes, depth } if (i as u64) < *len => match fixed_size(*elem) {
                Some(size) => Value::read(&mut Reader::new(&bytes[i * size as usize..]), *elem, depth + 1).ok(),
                None => self.iter().nth(i),
            },
            Repr::View { .. } => None,
            Repr::Owned(v) => v.get(i).cloned(),
        }
    }
}

/// Nesting deeper than this is rejected (it only serves to exhaust the stack).
const MAX_DEPTH: u32 = 8;

/// The smallest number of bytes one value of a type occupies in the file.
fn min_size(type_id: u32) -> u64 {
    fixed_size(type_id).unwrap_or(match type_id {
        8 => 8,
        _ => 12,
    })
}

/// The size of a fixed-size type (not strings and arrays).
fn fixed_size(type_id: u32) -> Option<u64> {
    match type_id {
        0 | 1 | 7 => Some(1),
        2 | 3 => Some(2),
        4..=6 => Some(4),
        10..=12 => Some(8),
        _ => None,
    }
}

impl<'a> Value<'a> {
    pub(crate) fn read(r: &mut Reader<'a>, type_id: u32, depth: u32) -> Result<Self> {
        let offset = r.offset();
        Ok(match type_id {
            0 => Value::U8(r.u8("u8 value")?),
            1 => Value::I8(r.u8("i8 value")? as i8),
            2 => Value::U16(r.u16("u16 value")?),
            3 => Value::I16(r.u16("i16 value")? as i16),
            4 => Value::U32(r.u32("u32 value")?),
            5 => Value::I32(r.u32("i32 value")? as i32),
            6 => Value::F32(f32::from_bits(r.u32("f32 value")?)),
            7 => match r.u8("bool value")? {
                0 => Value::Bool(false),
                1 => Value::Bool(true),
                b => {
                    return Err(Error::InvalidValue {
                        field: "bool value",
                        offset,
                        detail: alloc::format!("{b} is neither 0 nor 1"),
                    })
                }
            },
            8 => Value::Str(r.string("string value")?),
            9 => {
                if depth >= MAX_DEPTH {
                    return Err(Error::InvalidValue {
                        field: "array",
                        offset,
                        detail: alloc::format!("nested deeper than {MAX_DEPTH}"),
                    });
                }
                let elem_offset = r.offset();
                let elem = r.u32("array element type")?;
                if elem > 12 {
                    return Err(Error::UnknownValueType { offset: elem_offset, type_id: elem });
                }
                let n = r.count("array length", min_size(elem))?;
                let start = r.pos;
                match fixed_size(elem) {
                    // `count` checked that n * size bytes remain
                    Some(size) if elem != 7 => {
                        r.take(n * size, "array")?;
                    }
                    _ => {
                        for _ in 0..n {
                            Value::read(r, elem, depth + 1)?;
                        }
                    }
                }
                Value::Array(Array(Repr::View { elem, len: n, bytes: &r.bytes[start..r.pos], depth }))
            }
            10 => Value::U64(r.u64("u64 value")?),
            11 => Value::I64(r.u64("i64 value")? as i64),
            12 => Value::F64(f64::from_bits(r.u64("f64 value")?)),
            t => return Err(Error::UnknownValueType { offset, type_id: t }),
        })
    }

    /// Any non-negative integer value, widened.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v as u64),
            Value::U16(v) => Some(v as u64),
            Value::U32(v) => Some(v as u64),
            Value::U64(v) => Some(v),
            Value::I8(v) if v >= 0 => Some(v as u64),
            Value::I16(v) if v >= 0 => Some(v as u64),
            Value::I32(v) if v >= 0 => Some(v as u64),
            Value::I64(v) if v >= 0 => Some(v as u64),
            _ => None,
        }
    }

    /// The value as an i64, if an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(v as i64),
            Value::I16(v) => Some(v as i64),
            Value::I32(v) => Some(v as i64),
            Value::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// The value as an f32, if a float.
    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Value::F32(v) => Some(v),
            Value::F64(v) => Some(v as f32),
            _ => None,
        }
    }

    /// The value as a string, if one.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a bool, if one.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The value as an array, if one.
    pub fn as_array(&self) -> Option<&Array<'a>> {
        match self {
            Value::Array(v) => Some(v),
            _ => None,
        }
    }

    /// The GGUF type id of the value.
    pub fn type_id(&self) -> u32 {
        match self {
            Value::U8(_) => 0,
            Value::I8(_) => 1,
            Value::U16(_) => 2,
            Value::I16(_) => 3,
            Value::U32(_) => 4,
            Value::I32(_) => 5,
            Value::F32(_) => 6,
            Value::Bool(_) => 7,
            Value::Str(_) => 8,
            Value::Array(_) => 9,
            Value::U64(_) => 10,
            Value::I64(_) => 11,
            Value::F64(_) => 12,
        }
    }

    /// The GGUF name of the value's type.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::U8(_) => "u8",
            Value::I8(_) => "i8",
            Value::U16(_) => "u16",
            Value::I16(_) => "i16",
            Value::U32(_) => "u32",
            Value::I32(_) => "i32",
            Value::U64(_) => "u64",
            Value::I64(_) => "i64",
            Value::F32(_) => "f32",
            Value::F64(_) => "f64",
            Value::Bool(_) => "bool",
            Value::Str(_) => "string",
            Value::Array(_) => "array",
        }
    }
}
