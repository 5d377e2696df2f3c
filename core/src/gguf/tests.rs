//! Malformed GGUF input: every corruption gives its typed error, never a
//! panic or an allocation the file cannot justify.

use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use super::write::{gguf, type_id, TensorData};
use super::{Gguf, Value};
use crate::backend::quant::GgmlType;
use crate::error::Error;

fn arr(v: Vec<Value>) -> Value {
    Value::Array(v.into())
}

fn sample() -> Vec<u8> {
    let md = [
        ("general.architecture", Value::Str("llama")),
        ("a.u8", Value::U8(7)),
        ("a.i16", Value::I16(-3)),
        ("a.f64", Value::F64(0.5)),
        ("a.bool", Value::Bool(true)),
        ("a.nested", arr(vec![arr(vec![Value::U32(1), Value::U32(2)]), arr(vec![])])),
        ("a.strings", arr(vec![Value::Str("x"), Value::Str("yz")])),
    ];
    let t = [
        TensorData { name: "w", dims: vec![32, 2], ty: GgmlType::Q8_0, data: vec![0; 68] },
        TensorData { name: "v", dims: vec![3], ty: GgmlType::F32, data: vec![0; 12] },
    ];
    gguf(&md, &t)
}

/// Offsets in `sample()`: where the tensor directory starts.
fn tensor_dir_offset(b: &[u8]) -> usize {
    let g = Gguf::parse(b).unwrap();
    // The data section follows the directory, aligned; find the directory
    // by its first name, which is written right after the metadata.
    let pat = [&1u64.to_le_bytes()[..], b"w"].concat();
    let pos = b.windows(pat.len()).position(|w| w == pat).unwrap();
    assert!(pos < g.data_offset as usize);
    pos
}

#[test]
fn parses_every_value_type() {
    let b = sample();
    let g = Gguf::parse(&b).unwrap();
    assert_eq!(g.version, 3);
    assert_eq!(g.get("a.u8"), Some(&Value::U8(7)));
    assert_eq!(g.get("a.i16").unwrap().as_i64(), Some(-3));
    assert_eq!(g.get_f32("a.f64").unwrap(), Some(0.5));
    assert_eq!(g.get_bool("a.bool").unwrap(), Some(true));
    let nested = g.get_array("a.nested").unwrap().unwrap();
    assert_eq!(nested.get(0).unwrap().as_array().unwrap().get(1), Some(Value::U32(2)));
    assert_eq!(nested.get(1).unwrap().as_array().unwrap().len(), 0);
    let strings: Vec<Value> = g.get_array("a.strings").unwrap().unwrap().iter().collect();
    assert_eq!(strings, [Value::Str("x"), Value::Str("yz")]);
    assert_eq!(g.tensors.len(), 2);
    let w = g.tensor("w").unwrap();
    assert_eq!((w.ty, w.data.len(), w.rows()), (GgmlType::Q8_0, 68, (32, 2)));
    assert_eq!(g.tensor("v").unwrap().offset, 96);
    assert!(matches!(g.get_u64("a.bool"), Err(Error::KeyType { .. })));
}

#[test]
fn truncated_anywhere_is_an_error() {
    let b = sample();
    for len in 0..b.len() {
        let r = Gguf::parse(&b[..len]);
        assert!(r.is_err(), "parsing {len} of {} bytes succeeded", b.len());
    }
    // one check per section
    assert!(matches!(Gguf::parse(&b[..2]), Err(Error::Truncated { what: "magic", .. })));
    assert!(matches!(Gguf::parse(&b[..6]), Err(Error::Truncated { what: "version", .. })));
    assert!(matches!(Gguf::parse(&b[..30]), Err(Error::Truncated { .. } | Error::CountTooLarge { .. })));
    let dir = tensor_dir_offset(&b);
    assert!(matches!(Gguf::parse(&b[..dir + 5]), Err(Error::Truncated { .. } | Error::CountTooLarge { .. })));
    assert!(matches!(Gguf::parse(&b[..b.len() - 1]), Err(Error::TensorOutOfBounds { tensor, .. }) if tensor == "v"));
}

fn patch(b: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut b = b.to_vec();
    b[at..at + bytes.len()].copy_from_slice(bytes);
    b
}

#[test]
fn header_errors() {
    let b = sample();
    assert_eq!(Gguf::parse(&patch(&b, 0, b"GGML")).unwrap_err(), Error::BadMagic { found: *b"GGML" });
    assert_eq!(Gguf::parse(&patch(&b, 4, &1u32.to_le_bytes())).unwrap_err(), Error::UnsupportedVersion { version: 1 });
    let huge = u64::MAX.to_le_bytes();
    assert!(matches!(
        Gguf::parse(&patch(&b, 8, &huge)).unwrap_err(),
        Error::CountTooLarge { field: "tensor count", offset: 8, .. }
    ));
    assert!(matches!(
        Gguf::parse(&patch(&b, 16, &huge)).unwrap_err(),
        Error::CountTooLarge { field: "metadata count", offset: 16, .. }
    ));
    // a count just above what the file could hold is rejected too
    let n = (b.len() as u64 / 13 + 1).to_le_bytes();
    assert!(matches!(Gguf::parse(&patch(&b, 16, &n)).unwrap_err(), Error::CountTooLarge { .. }));
}

#[test]
fn metadata_errors() {
    let b = sample();
    // the first key's length
    let huge = (1u64 << 40).to_le_bytes();
    assert!(matches!(
        Gguf::parse(&patch(&b, 24, &huge)).unwrap_err(),
        Error::CountTooLarge { field: "metadata key", offset: 24, .. }
    ));
    // the first value's type: after key length (8) + "general.architecture" (20)
    let type_at = 24 + 8 + 20;
    assert_eq!(
        Gguf::parse(&patch(&b, type_at, &13u32.to_le_bytes())).unwrap_err(),
        Error::UnknownValueType { offset: type_at as u64, type_id: 13 }
    );
    // the string value itself: not UTF-8
    let str_at = type_at + 4 + 8;
    assert_eq!(
        Gguf::parse(&patch(&b, str_at, &[0xff])).unwrap_err(),
        Error::InvalidUtf8 { field: "string value", offset: str_at as u64 }
    );
    // a bool that is neither 0 nor 1
    let key = b.windows(6).position(|w| w == b"a.bool").unwrap();
    assert!(matches!(
        Gguf::parse(&patch(&b, key + 6 + 4, &[2])).unwrap_err(),
        Error::InvalidValue { field: "bool value", .. }
    ));
    // an array claiming more elements than bytes remain
    let key = b.windows(9).position(|w| w == b"a.strings").unwrap();
    assert!(matches!(
        Gguf::parse(&patch(&b, key + 9 + 4 + 4, &(1u64 << 50).to_le_bytes())).unwrap_err(),
        Error::CountTooLarge { field: "array length", .. }
    ));
    // duplicate key
    let dup = gguf(&[("k", Value::U8(1)), ("k", Value::U8(2))], &[]);
    assert_eq!(Gguf::parse(&dup).unwrap_err(), Error::DuplicateKey { key: "k".to_string() });
    // arrays nested too deep
    let mut v = Value::U8(0);
    for _ in 0..12 {
        v = arr(vec![v]);
    }
    let deep = gguf(&[("deep", v)], &[]);
    assert!(matches!(Gguf::parse(&deep).unwrap_err(), Error::InvalidValue { field: "array", .. }));
    // alignment that is not a power of two
    let bad = gguf(&[("general.alignment", Value::U32(24))], &[]);
    assert!(matches!(Gguf::parse(&bad).unwrap_err(), Error::InvalidValue { field: "general.alignment", .. }));
}

#[test]
fn tensor_directory_errors() {
    let b = sample();
    let dir = tensor_dir_offset(&b);
    // layout of the first entry: name len 8, "w" 1, n_dims 4, dims 2×8, type 4, offset 8
    let (n_dims_at, type_at, off_at) = (dir + 9, dir + 9 + 4 + 16, dir + 9 + 4 + 16 + 4);
    for n in [0u32, 5] {
        assert!(matches!(
            Gguf::parse(&patch(&b, n_dims_at, &n.to_le_bytes())).unwrap_err(),
            Error::InvalidValue { field: "tensor n_dims", .. }
        ));
    }
    assert_eq!(
        Gguf::parse(&patch(&b, type_at, &99u32.to_le_bytes())).unwrap_err(),
        Error::UnknownTensorType { tensor: "w".to_string(), type_id: 99 }
    );
    // Q8_0 → Q4_K: a row of 32 is not a whole 256-block
    assert!(matches!(
        Gguf::parse(&patch(&b, type_at, &type_id(GgmlType::Q4_K).to_le_bytes())).unwrap_err(),
        Error::TensorShape { .. }
    ));
    assert!(matches!(
        Gguf::parse(&patch(&b, off_at, &(1u64 << 20).to_le_bytes())).unwrap_err(),
        Error::TensorOutOfBounds { tensor, .. } if tensor == "w"
    ));
    assert!(matches!(
        Gguf::parse(&patch(&b, off_at, &u64::MAX.to_le_bytes())).unwrap_err(),
        Error::TensorMisaligned { .. } | Error::TensorOutOfBounds { .. }
    ));
    assert!(matches!(
        Gguf::parse(&patch(&b, off_at, &8u64.to_le_bytes())).unwrap_err(),
        Error::TensorMisaligned { offset: 8, alignment: 32, .. }
    ));
    // dimensions whose product overflows
    assert!(matches!(
        Gguf::parse(&patch(&b, n_dims_at + 4 + 8, &u64::MAX.to_le_bytes())).unwrap_err(),
        Error::TensorShape { .. }
    ));
    // a row whose byte size wraps: [2^62] F32 is 2^64 bytes, not 0
    let wrap = patch(&b, n_dims_at + 4 + 16 + 4 + 8 + 8 + 1 + 4, &(1u64 << 62).to_le_bytes());
    let v = Gguf::parse(&wrap);
    assert!(matches!(&v, Err(Error::TensorShape { tensor, .. }) if tensor == "v"), "{v:?}");
    let t = |name| TensorData { name, dims: vec![4], ty: GgmlType::F32, data: vec![0; 16] };
    let dup = gguf(&[], &[t("x"), t("x")]);
    assert_eq!(Gguf::parse(&dup).unwrap_err(), Error::DuplicateTensor { name: "x".to_string() });
}

/// Pseudo-random byte flips: never a panic.
#[test]
fn random_corruption_never_panics() {
    let b = sample();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut c = b.clone();
        for k in 0..1 + (x % 4) as usize {
            let at = ((x >> (8 * k)) as usize) % c.len();
            c[at] = (x >> 32) as u8 ^ c[at].rotate_left(k as u32);
        }
        let _ = Gguf::parse(&c);
    }
}
