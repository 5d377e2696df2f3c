//! GGUF metadata values: every scalar type, strings and (nested) arrays.

use alloc::vec::Vec;

use super::reader::Reader;
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(&'a str),
    Array(Vec<Value<'a>>),
}

/// Nesting deeper than this is rejected (it only serves to exhaust the stack).
const MAX_DEPTH: u32 = 8;

/// The smallest number of bytes one value of a type occupies in the file.
fn min_size(type_id: u32) -> u64 {
    match type_id {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 | 10 | 11 | 12 => 8,
        9 => 12,
        _ => 1,
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
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(Value::read(r, elem, depth + 1)?);
                }
                Value::Array(v)
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

    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I8(v) => Some(v as i64),
            Value::I16(v) => Some(v as i64),
            Value::I32(v) => Some(v as i64),
            Value::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    pub fn as_f32(&self) -> Option<f32> {
        match *self {
            Value::F32(v) => Some(v),
            Value::F64(v) => Some(v as f32),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Value<'a>]> {
        match self {
            Value::Array(v) => Some(v),
            _ => None,
        }
    }

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
