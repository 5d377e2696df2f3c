//! Embeddings from all-MiniLM-L6-v2 (BERT, mean pooling, normalised) against
//! sentence-transformers' own vectors (oracle/embed, make_embed_oracle.py)
//! on 130 texts — short, past the 256-token maximum, code, other scripts:
//! the WordPiece ids equal HF's; the exact path's cosine ≥ 0.99999 and each
//! query's top-5 documents rank as the oracle's; quantized to Q8_0 at load,
//! on the default path (8-bit activations, except into V and the attention
//! output: encoder/forward.rs),
//! cosine ≥ 0.999 and the same best document; an input's vector is the
//! same bits alone or among others.

use tern_tests::*;

fn minilm() -> tern::Embedder {
    let dir = tern::models_dir().join("all-minilm-l6-v2");
    assert!(dir.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", dir.display());
    tern::Embedder::load(&dir).unwrap()
}

fn oracle() -> (serde_json::Value, Vec<f32>) {
    let j = read_json("embed/minilm.json");
    let raw = std::fs::read(oracle_dir().join("embed/minilm.f32")).unwrap();
    let v = raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    (j, v)
}

#[test]
fn minilm_vectors_equal_sentence_transformers() {
    let models = [minilm(), minilm().quantize(tern_core::backend::quant::GgmlType::Q8_0).unwrap()];
    let max = models[0].core().max_len;
    let (j, want) = oracle();
    let dim = j["dim"].as_u64().unwrap() as usize;
    assert_eq!((dim, max), (384, j["max_seq_length"].as_u64().unwrap() as usize));
    let texts: Vec<&str> = j["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert_eq!(texts.len(), 130);
    // the f32 weights on the exact path; quantized to Q8_0 at load, on the
    // 8-bit-activation path
    for (model, exact) in models.iter().zip([true, false]) {
        let (e, enc) = (tern::engine(threads(), exact).unwrap(), model.core().encoder().unwrap());
        let mut worst = (1.0f64, "");
        let mut got = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let ids = model.core().input(text).unwrap();
            assert_eq!(ids, tern_tests::ids(&j["ids"][i]), "text {i} {text:?}: WordPiece ids differ from HF's");
            let v = enc.embed(&e, &[&ids]).unwrap().remove(0);
            let c = cosine(&v, &want[i * dim..(i + 1) * dim]);
            if c < worst.0 {
                worst = (c, text);
            }
            got.push(v);
        }
        // all 130 at once (several forward passes of shared matrix
        // products): each vector the same bits as its text's alone
        let all = model.core().embed(&e, &texts).unwrap();
        for (i, (a, b)) in all.iter().zip(&got).enumerate() {
            assert!(bits_equal(a, b), "text {i}: batched differs from alone");
        }
        println!("exact {exact}: worst cosine {:.7} ({:?})", worst.0, &worst.1[..worst.1.len().min(40)]);
        // quantized: 8-bit activations except into V and the attention
        // output (encoder/forward.rs; Q8_0 weights with f32 activations
        // everywhere: 0.99955)
        assert!(worst.0 >= if exact { 0.99999 } else { 0.999 }, "cosine {} on {:?}", worst.0, worst.1);
        // retrieval: each query's top-5 documents as the oracle's
        for (q, ours, theirs) in top5s(&j, &|i| got[i].clone(), &|i| want[i * dim..(i + 1) * dim].to_vec()) {
            match exact {
                true => assert_eq!(ours, theirs, "query {q} {:?}", texts[q]),
                false => assert_eq!(ours[0], theirs[0], "query {q} {:?}: {ours:?} vs {theirs:?}", texts[q]),
            }
        }
    }
}

/// An input's vector is the same bits alone or among others; bad input is a
/// clear error, never a panic.
#[test]
fn vectors_do_not_depend_on_the_batch_and_bad_input_is_refused() {
    let model = minilm();
    let texts = ["The cat sits outside.", "A man is playing guitar.", "The new movie is awesome."];
    let all = model.embed(&texts).unwrap();
    for (i, t) in texts.iter().enumerate() {
        assert!(bits_equal(&model.embed(&[t]).unwrap()[0], &all[i]), "{t}");
    }
    let err = |r: tern::Result<Vec<Vec<f32>>>| r.unwrap_err().to_string();
    assert!(err(model.embed(&[])).contains("no inputs"));
    let many = vec!["x"; 10_000];
    assert!(err(model.embed(&many)).contains("10000 inputs"));
    assert!(model.embed_ids(&[]).unwrap_err().to_string().contains("0 tokens"));
    assert!(model.embed_ids(&[101, 40_000, 102]).unwrap_err().to_string().contains("40000"));
    let long = vec![101u32; 513];
    assert!(model.embed_ids(&long).unwrap_err().to_string().contains("512"));
    // a long text is truncated to the model's 256 tokens, as HF's tokenizer does
    assert_eq!(model.core().input(&"word ".repeat(1000)).unwrap().len(), 256);
    // a generation model has no pooling to embed with
    let e = tern::Embedder::load(oracle_dir().join("tiny/tiny-llama")).err().unwrap().to_string();
    assert!(e.contains("pool"), "{e}");
}

/// MiniLM written as a GGUF in llama.cpp's `bert` conventions (tests/src/
/// bert_gguf.rs) loads as the same model: the WordPiece built from the
/// phantom-space vocabulary gives HF's ids on every text (GGUF records no
/// 256-token maximum: the untruncated ones), and the vectors are the same
/// bits as the directory's on both paths; the cross-encoder's GGUF (no
/// pooling) reranks as its directory does.
#[test]
fn bert_gguf_equals_the_directory() {
    let models = tern::models_dir();
    let path = std::env::temp_dir().join(format!("tern-minilm-{}.gguf", std::process::id()));
    std::fs::write(&path, tern_tests::bert_gguf::bert_gguf(&models.join("all-minilm-l6-v2"), 1)).unwrap();
    let (gguf, dir) = (tern::Embedder::load(&path).unwrap(), minilm());
    assert_eq!((gguf.dim(), gguf.core().max_len), (384, 512));
    let (j, _) = oracle();
    let texts: Vec<&str> = j["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let mut whole = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let want = tern_tests::ids(&j["ids"][i]);
        if want.len() < 256 {
            assert_eq!(gguf.core().input(t).unwrap(), want, "text {i} {t:?}");
            whole.push(*t);
        }
    }
    assert!(whole.len() > 110, "{}", whole.len());
    for exact in [true, false] {
        let e = tern::engine(threads(), exact).unwrap();
        let (a, b) = (gguf.core().embed(&e, &whole).unwrap(), dir.core().embed(&e, &whole).unwrap());
        assert!(a.iter().zip(&b).all(|(a, b)| bits_equal(a, b)), "exact {exact}");
    }
    let rr = std::env::temp_dir().join(format!("tern-rerank-{}.gguf", std::process::id()));
    std::fs::write(&rr, tern_tests::bert_gguf::bert_gguf(&models.join("minilm-rerank-test"), 0)).unwrap();
    let docs = ["Tokyo is the capital of Japan.", "Cats eat meat.", "Le chat est assis dehors."];
    let (a, b) = (tern::Embedder::load(&rr).unwrap(), tern::Embedder::load(models.join("minilm-rerank-test")).unwrap());
    assert_eq!(a.rerank("capital of Japan?", &docs).unwrap(), b.rerank("capital of Japan?", &docs).unwrap());
    // a generation GGUF (no pooling_type) embeds only if told how to pool
    // (tests/embed_decoder.rs)
    let e = tern::Embedder::load(model_path("smollm2-135m-instruct-q4_1.gguf")).err().unwrap().to_string();
    assert!(e.contains("choose a pooling"), "{e}");
    let _ = (std::fs::remove_file(&path), std::fs::remove_file(&rr));
}
