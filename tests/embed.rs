//! Embeddings from all-MiniLM-L6-v2 (BERT, mean pooling, normalised) against
//! sentence-transformers' own vectors (oracle/embed, make_embed_oracle.py)
//! on 130 texts — short, past the 256-token maximum, code, other scripts:
//! the WordPiece ids equal HF's, the exact path's cosine ≥ 0.99999 and the
//! quantized path's ≥ 0.999; each query's top-5 documents rank as the
//! oracle's; an input's vector is the same bits alone or among others.

use tern_core::encoder::{Encoder, Pooling};
use tern_core::tokenizer::Tokenizer;
use tern_tests::*;

fn minilm() -> (Encoder<Vec<u8>>, Tokenizer, usize) {
    let dir = tern::models_dir().join("all-minilm-l6-v2");
    assert!(dir.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", dir.display());
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let pooling = Pooling::from_sentence_transformers(&read("modules.json"), &read("1_Pooling/config.json")).unwrap();
    let enc = Encoder::from_hf(
        &read("config.json"),
        None,
        vec![("model.safetensors".into(), read("model.safetensors"))],
        pooling,
    )
    .unwrap();
    let tok = Tokenizer::from_hf(&read("tokenizer.json"), Some(&read("tokenizer_config.json")), None, &[]).unwrap();
    let st: serde_json::Value = serde_json::from_slice(&read("sentence_bert_config.json")).unwrap();
    (enc, tok, st["max_seq_length"].as_u64().unwrap() as usize)
}

fn oracle() -> (serde_json::Value, Vec<f32>) {
    let j = read_json("embed/minilm.json");
    let raw = std::fs::read(oracle_dir().join("embed/minilm.f32")).unwrap();
    let v = raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    (j, v)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let d = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(&p, &q)| p as f64 * q as f64).sum::<f64>();
    d(a, b) / (d(a, a).sqrt() * d(b, b).sqrt())
}

/// The model's input for `text`: its ids with [CLS]/[SEP], truncated to
/// `max` keeping the final [SEP] (as HF's tokenizer truncates).
fn input(tok: &Tokenizer, text: &str, max: usize) -> Vec<u32> {
    let mut ids = tok.encode(text, true).unwrap();
    if ids.len() > max {
        let last = *ids.last().unwrap();
        ids.truncate(max - 1);
        ids.push(last);
    }
    ids
}

#[test]
fn minilm_vectors_equal_sentence_transformers() {
    let (enc, tok, max) = minilm();
    let (j, want) = oracle();
    let dim = j["dim"].as_u64().unwrap() as usize;
    assert_eq!((dim, max), (384, j["max_seq_length"].as_u64().unwrap() as usize));
    let texts: Vec<&str> = j["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(texts.len(), 130);
    for exact in [true, false] {
        let e = tern::engine(threads(), exact).unwrap();
        let mut worst = (1.0f64, "");
        let mut got = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let ids = input(&tok, text, max);
            assert_eq!(ids, tern_tests::ids(&j["ids"][i]), "text {i} {text:?}: WordPiece ids differ from HF's");
            let v = enc.embed(&e, &ids).unwrap();
            let c = cosine(&v, &want[i * dim..(i + 1) * dim]);
            if c < worst.0 {
                worst = (c, text);
            }
            got.push(v);
        }
        println!("exact {exact}: worst cosine {:.7} ({:?})", worst.0, &worst.1[..worst.1.len().min(40)]);
        assert!(worst.0 >= if exact { 0.99999 } else { 0.999 }, "cosine {} on {:?}", worst.0, worst.1);
        // retrieval: each query's top-5 documents as the oracle's
        let (qs, ds) = (&j["retrieval"]["queries"], &j["retrieval"]["documents"]);
        let idx = |v: &serde_json::Value| {
            v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as usize).collect::<Vec<_>>()
        };
        let (qs, ds) = (idx(qs), idx(ds));
        for &q in &qs {
            let top = |vec: &dyn Fn(usize) -> Vec<f32>| {
                let mut r: Vec<(f64, usize)> = ds.iter().map(|&d| (cosine(&vec(q), &vec(d)), d)).collect();
                r.sort_by(|a, b| b.0.total_cmp(&a.0));
                r.iter().take(5).map(|x| x.1).collect::<Vec<_>>()
            };
            let ours = top(&|i| got[i].clone());
            let theirs = top(&|i| want[i * dim..(i + 1) * dim].to_vec());
            assert_eq!(ours, theirs, "query {q} {:?}", texts[q]);
        }
    }
}
