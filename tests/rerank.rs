//! Reranking with a cross-encoder (BertForSequenceClassification: pair
//! input with token types, the pooler, a one-logit head) against
//! transformers' logits (oracle/rerank, make_rerank_oracle.py) on 128
//! pairs — each retrieval query against every document, odd texts, pairs
//! past the 512-token maximum: HF's ids and types after `longest_first`
//! truncation; the exact path within 1e-4 of every logit and each query's
//! documents in the oracle's order; quantized to Q8_0, the same best
//! document; a pair's score the same bits alone or among others.
//!
//! The model is all-MiniLM-L6-v2 with its own pooler and a seeded,
//! untrained head (no trained cross-encoder ships in a registry package we
//! found): the arithmetic is a cross-encoder's, the scores mean nothing.

use tern_core::runtime::Seq;
use tern_tests::*;

fn reranker() -> tern::Embedder {
    let dir = tern::models_dir().join("minilm-rerank-test");
    assert!(dir.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", dir.display());
    tern::Embedder::load(&dir).unwrap()
}

#[test]
fn cross_encoder_scores_equal_transformers() {
    let j = read_json("rerank/rerank.json");
    let texts_json = read_json("embed/minilm.json");
    let texts: Vec<&str> = texts_json["texts"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let pairs = j["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 128);
    let models = [reranker(), reranker().quantize(tern_core::backend::quant::GgmlType::Q8_0).unwrap()];
    assert_eq!(models[0].core().max_len, j["max_length"].as_u64().unwrap() as usize);
    for (model, exact) in models.iter().zip([true, false]) {
        let (e, core) = (tern::engine(threads(), exact).unwrap(), model.core());
        let mut inputs = Vec::new();
        for p in pairs {
            let (q, d) =
                (texts[p["query"].as_u64().unwrap() as usize], texts[p["document"].as_u64().unwrap() as usize]);
            let (ids, types) = core.tokenizer.encode_pair(q, d, core.max_len).unwrap();
            assert_eq!(ids, tern_tests::ids(&p["ids"]), "{q:?} / {d:?}: ids differ from HF's");
            assert_eq!(types, tern_tests::ids(&p["types"]), "{q:?} / {d:?}: token types differ from HF's");
            inputs.push((ids, types));
        }
        let seqs: Vec<Seq> = inputs.iter().map(|(ids, types)| Seq { ids, types: Some(types) }).collect();
        let got: Vec<f32> = core.encoder().unwrap().classify(&e, &seqs).unwrap().into_iter().map(|l| l[0]).collect();
        let want: Vec<f32> = pairs.iter().map(|p| p["logit"].as_f64().unwrap() as f32).collect();
        let worst = got.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0f32, f32::max);
        println!("exact {exact}: largest logit difference {worst:.2e}");
        if exact {
            assert!(worst <= 1e-4, "logits differ by {worst}");
        }
        // a pair's score alone is the same bits as in the batch
        for i in [0, 57, 127] {
            let alone = core.encoder().unwrap().classify(&e, &seqs[i..i + 1]).unwrap()[0][0];
            assert_eq!(alone.to_bits(), got[i].to_bits(), "pair {i}");
        }
        // each query's ten documents: in the oracle's order (exact), the
        // same best (quantized)
        let order = |s: &[f32]| {
            let mut r: Vec<usize> = (0..s.len()).collect();
            r.sort_by(|&a, &b| s[b].total_cmp(&s[a]));
            r
        };
        for q in 0..10 {
            let (ours, theirs) = (order(&got[q * 10..q * 10 + 10]), order(&want[q * 10..q * 10 + 10]));
            match exact {
                true => assert_eq!(ours, theirs, "query {q}"),
                false => assert_eq!(ours[0], theirs[0], "query {q}: {ours:?} vs {theirs:?}"),
            }
        }
    }
}

/// The Rust API's rerank is the classifier's logit per document; bad input
/// is a clear error.
#[test]
fn rerank_api_and_bad_input() {
    let model = reranker();
    let docs = ["Tokyo is the capital and largest city of Japan.", "Cats are carnivores and need meat in their diet."];
    let scores = model.rerank("What is the capital of Japan?", &docs).unwrap();
    let core = model.core();
    let e = tern::engine(threads(), false).unwrap();
    for (d, s) in docs.iter().zip(&scores) {
        let (ids, types) = core.tokenizer.encode_pair("What is the capital of Japan?", d, core.max_len).unwrap();
        let want = core.encoder().unwrap().classify(&e, &[Seq { ids: &ids, types: Some(&types) }]).unwrap()[0][0];
        assert_eq!(s.to_bits(), want.to_bits());
    }
    let err = |r: tern::Result<Vec<f32>>| r.unwrap_err().to_string();
    assert!(err(model.rerank("q", &[])).contains("no inputs"));
    assert!(err(model.rerank("q", &vec!["d"; 10_000])).contains("10000 inputs"));
    // an embedding model does not rerank; a cross-encoder does not embed
    let minilm = tern::Embedder::load(tern::models_dir().join("all-minilm-l6-v2")).unwrap();
    assert!(err(minilm.rerank("q", &["d"])).contains("cross-encoder"));
    let e = model.embed(&["x"]).unwrap_err().to_string();
    assert!(e.contains("no pooling"), "{e}");
    // token types the model has no embedding for
    let bad = core
        .encoder()
        .unwrap()
        .classify(&tern::engine(threads(), true).unwrap(), &[Seq { ids: &[101, 102], types: Some(&[0, 7]) }]);
    assert!(bad.unwrap_err().to_string().contains("token type 7"));
}
