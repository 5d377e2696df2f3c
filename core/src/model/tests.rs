//! A tiny synthetic llama (made with the GGUF writer): load-time checks name
//! what is wrong, and the forward pass keeps its invariants without any
//! model file.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use crate::error::Error;
use crate::gguf::write::{gguf, TensorData};
use crate::gguf::Value;
use crate::kernels::Scalar;
use crate::model::{Engine, Logits, Model};
use crate::parallel::Serial;
use crate::quant::GgmlType;

const E: u64 = 64;
const FF: u64 = 128;
const VOCAB: u64 = 32;
const LAYERS: usize = 2;

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

struct Spec {
    arch: &'static str,
    block_count: Value<'static>,
    drop: Option<String>,
    retype: Option<(String, GgmlType)>,
}

fn build(spec: Spec) -> Vec<u8> {
    let a = spec.arch;
    let k = |s: &str| -> &'static str { String::leak(format!("{a}.{s}")) };
    let md = vec![
        ("general.architecture", Value::Str(a)),
        (k("embedding_length"), Value::U32(E as u32)),
        (k("block_count"), spec.block_count.clone()),
        (k("feed_forward_length"), Value::U32(FF as u32)),
        (k("attention.head_count"), Value::U32(4)),
        (k("attention.head_count_kv"), Value::U32(2)),
        (k("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        (k("rope.freq_base"), Value::F32(10000.0)),
    ];
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
    t.retain(|x| Some(&x.0) != spec.drop.as_ref());
    if let Some((name, ty)) = &spec.retype {
        for x in t.iter_mut().filter(|x| &x.0 == name) {
            x.2 = *ty;
            let rows: u64 = x.1[1..].iter().product();
            x.3 = vec![0; ty.row_bytes(x.1[0] as usize).unwrap() * rows as usize];
        }
    }
    let tensors: Vec<TensorData> =
        t.iter().map(|(n, d, ty, b)| TensorData { name: n, dims: d.clone(), ty: *ty, data: b.clone() }).collect();
    gguf(&md, &tensors)
}

fn ok_spec() -> Spec {
    Spec { arch: "llama", block_count: Value::U32(LAYERS as u32), drop: None, retype: None }
}

#[test]
fn load_errors_name_what_is_wrong() {
    let err = |s: Spec| Model::load_gguf(build(s)).err().unwrap();
    assert_eq!(err(Spec { arch: "gpt2", ..ok_spec() }), Error::UnsupportedArch { arch: "gpt2".into() });
    assert_eq!(
        err(Spec { block_count: Value::Str("two"), ..ok_spec() }),
        Error::KeyType { key: "llama.block_count".into(), expected: "an unsigned integer" }
    );
    assert_eq!(
        err(Spec { drop: Some("blk.1.ffn_down.weight".into()), ..ok_spec() }),
        Error::MissingTensor { name: "blk.1.ffn_down.weight".into() }
    );
    // IQ4_NL has 32-element blocks, so the shape is fine but no kernel exists
    assert_eq!(
        err(Spec { retype: Some(("blk.0.attn_q.weight".into(), GgmlType::IQ4_NL)), ..ok_spec() }),
        Error::UnsupportedTensorType {
            arch: "llama".into(),
            tensor: "blk.0.attn_q.weight".into(),
            type_name: "IQ4_NL"
        }
    );
    assert!(matches!(
        err(Spec { retype: Some(("output_norm.weight".into(), GgmlType::Q8_0)), ..ok_spec() }),
        Error::TensorShape { .. } | Error::UnsupportedTensorType { .. }
    ));
}

#[test]
fn cached_decode_equals_full_recompute_on_both_paths() {
    let m = Model::load_gguf(build(ok_spec())).unwrap();
    assert!(m.weights.tied_output);
    let seq = [3u32, 17, 5, 30, 0, 9, 9];
    for exact in [true, false] {
        let e = Engine { kernels: &Scalar, par: &Serial, exact };
        let mut full = m.session(16, 3); // batches of 3: prefill crosses batch edges
        let all = full.forward(&m, &e, &seq, Logits::All).unwrap().to_vec();
        let mut s = m.session(16, 4);
        let mut rows = s.forward(&m, &e, &seq[..4], Logits::All).unwrap().to_vec();
        for &t in &seq[4..] {
            rows.extend_from_slice(s.forward(&m, &e, &[t], Logits::Last).unwrap());
        }
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&rows), bits(&all), "exact={exact}");
        assert!(all.iter().all(|v| v.is_finite()));
    }
}

#[test]
fn bad_tokens_and_full_context_are_errors() {
    let m = Model::load_gguf(build(ok_spec())).unwrap();
    let e = Engine { kernels: &Scalar, par: &Serial, exact: false };
    let mut s = m.session(4, 4);
    assert_eq!(s.forward(&m, &e, &[1, 32], Logits::Last).unwrap_err(), Error::TokenOutOfRange { id: 32, n_vocab: 32 });
    s.forward(&m, &e, &[1, 2, 3], Logits::None).unwrap();
    assert_eq!(s.forward(&m, &e, &[1, 2], Logits::Last).unwrap_err(), Error::ContextFull { n_ctx: 4, needed: 5 });
    assert_eq!(s.n_past(), 3);
}
