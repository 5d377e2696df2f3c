//! A decoder as an embedding model, pooled as Qwen3-Embedding and gte-Qwen2
//! are (the last token's final hidden state, normalised): SmolLM2 in
//! transformers' layout with sentence-transformers' modules beside it,
//! against sentence-transformers' own vectors (oracle/embed,
//! make_decoder_embed_oracle.py) on 130 texts: HF's ids, the exact path's
//! cosine ≥ 0.99999 and each query's top-5 documents as the oracle's; the
//! GGUF the directory came from, told to pool the same way, on its default
//! path; an input's vector the same bits alone or among others.

use std::path::PathBuf;

use tern_core::{Pooling, PoolingMode};
use tern_tests::*;

/// target/test-models/smollm2-hf-f32 with the oracle's sentence-transformers
/// files beside it (the same as make_decoder_embed_oracle.py writes).
fn st_dir() -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-models/smollm2-hf-f32");
    assert!(src.exists(), "{} is missing: run scripts/make-test-models.sh (CI does)", src.display());
    let dir = std::env::temp_dir().join(format!("tern-smollm2-last-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("1_Pooling")).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap();
        let to = dir.join(f.file_name());
        if !to.exists() {
            std::os::unix::fs::symlink(f.path(), to).unwrap();
        }
    }
    let write = |name: &str, json: &str| std::fs::write(dir.join(name), json).unwrap();
    write(
        "modules.json",
        r#"[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
            {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
            {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#,
    );
    write(
        "1_Pooling/config.json",
        r#"{"word_embedding_dimension":576,"pooling_mode_cls_token":false,"pooling_mode_mean_tokens":false,
            "pooling_mode_lasttoken":true}"#,
    );
    write("sentence_bert_config.json", r#"{"max_seq_length":128,"do_lower_case":false}"#);
    dir
}

#[test]
fn smollm2_last_token_vectors_equal_sentence_transformers() {
    let dir = st_dir();
    let model = tern::Embedder::load(&dir).unwrap();
    let j = read_json("embed/smollm2-last.json");
    let raw = std::fs::read(oracle_dir().join("embed/smollm2-last.f32")).unwrap();
    let want: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    let texts_json = read_json("embed/minilm.json");
    let texts: Vec<&str> = texts_json["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let dim = j["dim"].as_u64().unwrap() as usize;
    assert_eq!((model.dim(), model.core().max_len), (dim, 128));
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(model.core().input(t).unwrap(), ids(&j["ids"][i]), "text {i} {t:?}: ids differ from HF's");
    }
    // the GGUF the directory was widened from, told how to pool
    let pooling = Pooling { mode: PoolingMode::Last, normalize: true };
    let gguf = tern::Embedder::load_with(model_path("smollm2-135m-instruct-q4_1.gguf"), Some(pooling)).unwrap();
    for (m, exact) in [(&model, true), (&gguf, false)] {
        let e = tern::engine(threads(), exact).unwrap();
        let got = m.core().embed(&e, &texts).unwrap();
        let mut worst = (1.0f64, 0);
        for (i, v) in got.iter().enumerate() {
            if !exact && ids(&j["ids"][i]).len() == 128 {
                continue; // the GGUF records no 128-token maximum: the texts the oracle kept whole
            }
            let c = cosine(v, &want[i * dim..(i + 1) * dim]);
            if c < worst.0 {
                worst = (c, i);
            }
        }
        let short: String = texts[worst.1].chars().take(40).collect();
        println!("exact {exact}: worst cosine {:.7} (text {} {short:?})", worst.0, worst.1);
        // the GGUF's Q4_1 weights are the directory's; what differs is the
        // 8-bit activations and the f16 cache of the default path
        assert!(worst.0 >= if exact { 0.99999 } else { 0.998 }, "cosine {} on text {}", worst.0, worst.1);
        if exact {
            // each query's top-5 documents as the oracle's
            for (q, ours, theirs) in top5s(&texts_json, &|i| got[i].clone(), &|i| want[i * dim..(i + 1) * dim].to_vec())
            {
                assert_eq!(ours, theirs, "query {q} {:?}", texts[q]);
            }
            // alone, each the same bits as among all 130
            for i in [0, 81, 100, 129] {
                assert!(bits_equal(&m.core().embed(&e, &texts[i..i + 1]).unwrap()[0], &got[i]), "text {i}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A GGUF that names its pooling as llama.cpp writes it for an embedding
/// model (`{arch}.pooling_type`: 3, last) embeds without being told, the
/// same bits as being told; 1 (mean) gives other vectors.
#[test]
fn a_gguf_pooling_type_chooses_the_pooling() {
    use tern_core::runtime::write::{gguf, TensorData};
    use tern_core::{runtime::Gguf, runtime::Value};
    let bytes = std::fs::read(model_path("smollm2-135m-instruct-q4_1.gguf")).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let tensors: Vec<TensorData> = (g.tensors.iter())
        .map(|t| TensorData { name: t.name, dims: t.dims.clone(), ty: t.ty, data: t.data.to_vec() })
        .collect();
    let with = |pooling_type: u32| {
        let mut md = g.metadata.clone();
        md.push(("llama.pooling_type", Value::U32(pooling_type)));
        let path = std::env::temp_dir().join(format!("tern-smollm2-pool{pooling_type}-{}.gguf", std::process::id()));
        std::fs::write(&path, gguf(&md, &tensors)).unwrap();
        let m = tern::Embedder::load(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        m
    };
    let told = Pooling { mode: PoolingMode::Last, normalize: true };
    let told = tern::Embedder::load_with(model_path("smollm2-135m-instruct-q4_1.gguf"), Some(told)).unwrap();
    let texts = ["The cat sits outside.", "def add(a, b): return a + b"];
    let want = told.embed(&texts).unwrap();
    let last = with(3).embed(&texts).unwrap();
    assert!(want.iter().zip(&last).all(|(a, b)| bits_equal(a, b)));
    let mean = with(1).embed(&texts).unwrap();
    assert!(cosine(&mean[0], &last[0]) < 0.99, "mean pooling gave the last token's vector");
}

/// A decoder without a pooling choice, bad ids, and a rerank asked of a
/// decoder: clear errors.
#[test]
fn decoder_embedders_refuse_bad_input() {
    let e = tern::Embedder::load(model_path("smollm2-135m-instruct-q4_1.gguf")).err().unwrap().to_string();
    assert!(e.contains("choose a pooling"), "{e}");
    let pooling = Pooling { mode: PoolingMode::Last, normalize: true };
    let m = tern::Embedder::load_with(model_path("smollm2-135m-instruct-q4_1.gguf"), Some(pooling)).unwrap();
    assert!(m.embed_ids(&[]).unwrap_err().to_string().contains("no tokens"));
    assert!(m.embed_ids(&[1, 60_000]).unwrap_err().to_string().contains("60000"));
    let e = m.rerank("q", &["d"]).unwrap_err().to_string();
    assert!(e.contains("cross-encoder"), "{e}");
    assert_eq!(m.embed(&["hi"]).unwrap()[0].len(), 576);
}
