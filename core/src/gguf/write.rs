//! A minimal GGUF writer: builds files for tests, fuzz seeds and tools.

use alloc::vec::Vec;

use super::Value;
use crate::backend::quant::GgmlType;

/// A tensor to write.
pub struct TensorData<'a> {
    /// Its name.
    pub name: &'a str,
    /// ggml order (row length first).
    pub dims: Vec<u64>,
    /// Its type.
    pub ty: GgmlType,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// GGUF's number of a type.
pub fn type_id(ty: GgmlType) -> u32 {
    (0..40).find(|&i| GgmlType::from_id(i) == Some(ty)).unwrap_or(u32::MAX)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(*x as u8),
        Value::Str(s) => put_str(out, s),
        Value::Array(a) => {
            out.extend_from_slice(&a.elem_type().to_le_bytes());
            out.extend_from_slice(&(a.len() as u64).to_le_bytes());
            for x in a.iter() {
                put_value(out, &x);
            }
        }
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

/// A GGUF v3 file with 32-byte alignment, ending at its last tensor's end.
pub fn gguf(metadata: &[(&str, Value)], tensors: &[TensorData]) -> Vec<u8> {
    const ALIGN: usize = 32;
    let mut out = Vec::new();
    out.extend_from_slice(b"GGUF");
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    out.extend_from_slice(&(metadata.len() as u64).to_le_bytes());
    for (k, v) in metadata {
        put_str(&mut out, k);
        out.extend_from_slice(&v.type_id().to_le_bytes());
        put_value(&mut out, v);
    }
    let mut offset = 0usize;
    for t in tensors {
        put_str(&mut out, t.name);
        out.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&type_id(t.ty).to_le_bytes());
        out.extend_from_slice(&(offset as u64).to_le_bytes());
        offset += t.data.len().div_ceil(ALIGN) * ALIGN;
    }
    out.resize(out.len().div_ceil(ALIGN) * ALIGN, 0);
    for (i, t) in tensors.iter().enumerate() {
        if i > 0 {
            out.resize(out.len().div_ceil(ALIGN) * ALIGN, 0);
        }
        out.extend_from_slice(&t.data);
    }
    out
}
