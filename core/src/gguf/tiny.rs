//! A tiny synthetic llama made with the GGUF writer (2 layers, 64 wide,
//! 32 tokens): for tests that need a whole, valid model file without a
//! download, for the hostile-input tests to corrupt, and for fuzz seeds.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::backend::quant::GgmlType;
use crate::gguf::write::{gguf, TensorData};
use crate::gguf::Value;

/// Embedding width.
pub const E: u64 = 64;
/// Feed-forward width.
pub const FF: u64 = 128;
/// Vocabulary size.
pub const VOCAB: u64 = 32;
/// Layers.
pub const LAYERS: usize = 2;

fn f32_bytes(n: u64, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (((x % 2001) as f32 / 1000.0 - 1.0) * 0.3).to_le_bytes()
        })
        .collect()
}

/// Q8_0 rows: scale 0.01, pseudo-random quants.
fn q8_0_bytes(n: u64, seed: u64) -> Vec<u8> {
    let raw = f32_bytes(n, seed);
    let mut out = Vec::new();
    for blk in raw.chunks(32 * 4) {
        out.extend_from_slice(&half::f16::from_f32(0.01).to_le_bytes());
        out.extend(blk.chunks(4).map(|c| c[0] as i8 as u8));
    }
    out
}

/// What to change in the tiny model.
#[derive(Debug, Clone)]
pub struct Tiny {
    /// `general.architecture`.
    pub arch: &'static str,
    /// Metadata set over the defaults (replacing a key, else appended).
    pub meta: Vec<(String, Value<'static>)>,
    /// A tensor left out.
    pub drop: Option<String>,
    /// A tensor stored in another type (zero bytes of it).
    pub retype: Option<(String, GgmlType)>,
}

impl Default for Tiny {
    fn default() -> Tiny {
        Tiny { arch: "llama", meta: Vec::new(), drop: None, retype: None }
    }
}

/// A gpt2 vocabulary of `n` tokens (`a`, `b`, `ab`, `c3`…, and
/// `<|im_end|>` last, a control token), as GGUF metadata (tests of
/// vocabulary bounds; `Tiny` carries one of `VOCAB`).
#[cfg_attr(test, allow(dead_code))] // for the workspace's tests
pub fn vocab_meta_of(n: usize) -> Vec<(String, Value<'static>)> {
    let mut tokens: Vec<Value> = vec![Value::Str("a"), Value::Str("b"), Value::Str("ab")];
    tokens.extend((3..n - 1).map(|i| Value::Str(String::leak(format!("c{i}")))));
    tokens.push(Value::Str("<|im_end|>"));
    let mut types = vec![Value::I32(1); n - 1];
    types.push(Value::I32(3));
    vec![
        ("tokenizer.ggml.model".into(), Value::Str("gpt2")),
        ("tokenizer.ggml.tokens".into(), Value::Array(tokens.into())),
        ("tokenizer.ggml.token_type".into(), Value::Array(types.into())),
        ("tokenizer.ggml.merges".into(), Value::Array(vec![Value::Str("a b")].into())),
    ]
}

impl Tiny {
    /// With `key` set to `value`.
    pub fn with(mut self, key: &str, value: Value<'static>) -> Tiny {
        self.meta.push((key.into(), value));
        self
    }

    /// The model as a GGUF file.
    pub fn gguf(&self) -> Vec<u8> {
        let a = self.arch;
        let k = |s: &str| format!("{a}.{s}");
        let mut md: Vec<(String, Value)> = vec![
            ("general.architecture".into(), Value::Str(a)),
            (k("embedding_length"), Value::U32(E as u32)),
            (k("block_count"), Value::U32(LAYERS as u32)),
            (k("feed_forward_length"), Value::U32(FF as u32)),
            (k("attention.head_count"), Value::U32(4)),
            (k("attention.head_count_kv"), Value::U32(2)),
            (k("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
            (k("rope.freq_base"), Value::F32(10000.0)),
        ];
        for (key, v) in &self.meta {
            match md.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = v.clone(),
                None => md.push((key.clone(), v.clone())),
            }
        }
        let mut t: Vec<(String, Vec<u64>, GgmlType, Vec<u8>)> = vec![
            ("token_embd.weight".into(), vec![E, VOCAB], GgmlType::F32, f32_bytes(E * VOCAB, 1)),
            ("output_norm.weight".into(), vec![E], GgmlType::F32, f32_bytes(E, 2)),
        ];
        for i in 0..LAYERS as u64 {
            let s = 10 * (i + 1);
            let m = |n: &str, c: u64, r: u64, ty| {
                let data = if ty == GgmlType::Q8_0 { q8_0_bytes(c * r, s) } else { f32_bytes(c * r, s + c) };
                (format!("blk.{i}.{n}"), vec![c, r], ty, data)
            };
            t.push((format!("blk.{i}.attn_norm.weight"), vec![E], GgmlType::F32, f32_bytes(E, s + 1)));
            t.push((format!("blk.{i}.ffn_norm.weight"), vec![E], GgmlType::F32, f32_bytes(E, s + 2)));
            t.push(m("attn_q.weight", E, E, GgmlType::F32));
            t.push(m("attn_k.weight", E, E / 2, GgmlType::F32));
            t.push(m("attn_v.weight", E, E / 2, GgmlType::Q8_0));
            t.push(m("attn_output.weight", E, E, GgmlType::F32));
            t.push(m("ffn_gate.weight", E, FF, GgmlType::Q8_0));
            t.push(m("ffn_up.weight", E, FF, GgmlType::F32));
            t.push(m("ffn_down.weight", FF, E, GgmlType::Q8_0));
        }
        t.retain(|x| Some(&x.0) != self.drop.as_ref());
        if let Some((name, ty)) = &self.retype {
            for x in t.iter_mut().filter(|x| &x.0 == name) {
                x.2 = *ty;
                let rows: u64 = x.1[1..].iter().product();
                x.3 = vec![0; ty.row_bytes(x.1[0] as usize).unwrap_or(0) * rows as usize];
            }
        }
        let tensors: Vec<TensorData> =
            t.iter().map(|(n, d, ty, b)| TensorData { name: n, dims: d.clone(), ty: *ty, data: b.clone() }).collect();
        let md: Vec<(&str, Value)> = md.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        gguf(&md, &tensors)
    }
}
