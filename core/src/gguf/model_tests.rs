//! A tiny synthetic llama (made with the GGUF writer): load-time checks name
//! what is wrong, and the forward pass keeps its invariants without any
//! model file.

use alloc::string::ToString;
use alloc::vec::Vec;

use super::tiny::Tiny;
use crate::backend::quant::GgmlType;
use crate::backend::Scalar;
use crate::error::Error;
use crate::gguf::Value;
use crate::model::{Engine, Logits, Model};
use crate::parallel::Serial;

#[test]
fn load_errors_name_what_is_wrong() {
    let err = |s: Tiny| Model::load_gguf(s.gguf()).err().unwrap();
    let e = err(Tiny { arch: "gpt2", ..Tiny::default() });
    assert!(
        matches!(&e, Error::UnsupportedArch { arch, supported } if arch == "gpt2" && supported.contains("Gemma 3")),
        "{e}"
    );
    assert_eq!(
        err(Tiny::default().with("llama.block_count", Value::Str("two"))),
        Error::KeyType { key: "llama.block_count".into(), expected: "an unsigned integer" }
    );
    assert_eq!(
        err(Tiny { drop: Some("blk.1.ffn_down.weight".into()), ..Tiny::default() }),
        Error::MissingTensor { name: "blk.1.ffn_down.weight".into() }
    );
    // MXFP4 has 32-element blocks, so the shape is fine but no kernel exists
    assert_eq!(
        err(Tiny { retype: Some(("blk.0.attn_q.weight".into(), GgmlType::MXFP4)), ..Tiny::default() }),
        Error::UnsupportedTensorType { arch: "llama".into(), tensor: "blk.0.attn_q.weight".into(), type_name: "MXFP4" }
    );
    assert!(matches!(
        err(Tiny { retype: Some(("output_norm.weight".into(), GgmlType::Q8_0)), ..Tiny::default() }),
        Error::TensorShape { .. } | Error::UnsupportedTensorType { .. }
    ));
}

#[test]
fn an_iq4_nl_matrix_loads_and_runs() {
    let m = Model::load_gguf(
        Tiny { retype: Some(("blk.0.attn_q.weight".into(), GgmlType::IQ4_NL)), ..Tiny::default() }.gguf(),
    )
    .unwrap();
    for exact in [true, false] {
        let e = Engine { kernels: &Scalar, par: &Serial, exact };
        let logits = m.session(8, 8).forward(&m, &e, &[3, 17, 5], Logits::All).unwrap().to_vec();
        assert!(logits.iter().all(|v| v.is_finite()), "exact={exact}");
    }
}

#[test]
fn cached_decode_equals_full_recompute_on_both_paths() {
    let m = Model::load_gguf(Tiny::default().gguf()).unwrap();
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
        // the rows from an index on, whichever batch that index falls in
        for k in [0, 2, 3, 4, 6, 7, 9] {
            let mut part = m.session(16, 3);
            let tail = part.forward(&m, &e, &seq, Logits::From(k)).unwrap();
            assert_eq!(bits(tail), bits(&all[k.min(seq.len()) * m.config.n_vocab..]), "exact={exact} from {k}");
        }
    }
}

#[test]
fn bad_tokens_and_full_context_are_errors() {
    let m = Model::load_gguf(Tiny::default().gguf()).unwrap();
    let e = Engine { kernels: &Scalar, par: &Serial, exact: false };
    let mut s = m.session(4, 4);
    assert_eq!(s.forward(&m, &e, &[1, 32], Logits::Last).unwrap_err(), Error::TokenOutOfRange { id: 32, n_vocab: 32 });
    s.forward(&m, &e, &[1, 2, 3], Logits::None).unwrap();
    assert_eq!(s.forward(&m, &e, &[1, 2], Logits::Last).unwrap_err(), Error::ContextFull { n_ctx: 4, needed: 5 });
    assert_eq!(s.n_past(), 3);
}

/// Hyper-parameters no model has are refused by key before anything is
/// sized by them (a layer count of 2^31-1 used to abort on a 1.7 TB
/// allocation, 10^6 to take a minute and list 9 million missing tensors).
#[test]
fn absurd_hyperparameters_are_refused_by_key() {
    let err = |key: &str, v: Value<'static>| Model::load_gguf(Tiny::default().with(key, v).gguf()).err().unwrap();
    for n in [(1u32 << 31) - 1, 1_000_000, 1025] {
        let e = err("llama.block_count", Value::U32(n));
        assert!(matches!(&e, Error::Hyperparameter { key, .. } if key == "llama.block_count"), "{n}: {e}");
    }
    // within the limit but more layers than the file's bytes can hold
    let e = err("llama.block_count", Value::U32(1000));
    assert!(e.to_string().contains("bytes of weights"), "{e}");
    for (key, v) in [
        ("llama.rope.freq_base", Value::F32(f32::NAN)),
        ("llama.rope.freq_base", Value::F32(f32::INFINITY)),
        ("llama.rope.freq_base", Value::F32(-1.0)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(f32::NAN)),
        ("llama.attention.layer_norm_rms_epsilon", Value::F32(0.0)),
        ("llama.context_length", Value::U32(1 << 30)),
        ("llama.feed_forward_length", Value::U64(1 << 40)),
    ] {
        match err(key, v.clone()) {
            Error::Hyperparameter { key: k, .. } => assert_eq!(k, key),
            e => panic!("{key} = {v:?}: {e}"),
        }
    }
    // a list of problems is cut in the message, not in the error
    let many = Error::Tensors { problems: (0..100).map(|i| Error::MissingTensor { name: i.to_string() }).collect() };
    assert!(many.to_string().lines().count() < 25 && many.to_string().contains("and 80 more"));
}
