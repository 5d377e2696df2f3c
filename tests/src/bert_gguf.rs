//! An HF BERT checkpoint (a sentence-transformers directory) written as a
//! GGUF in llama.cpp's `bert` conventions, as its convert_hf_to_gguf.py
//! writes one: the tensor names, the "phantom space" WordPiece vocabulary
//! (word-initial pieces `▁`-prefixed, continuations bare, control tokens
//! as they are), `bert.*` hyper-parameters, `bert.pooling_type`. For the
//! GGUF tests and for llama.cpp's llama-embedding as a peer.

use std::path::Path;

use safetensors::SafeTensors;
use serde_json::Value;
use tern_core::backend::quant::GgmlType;
use tern_core::runtime::write::{gguf, TensorData};
use tern_core::runtime::Value as V;

/// The GGUF name of an HF BERT tensor (None: one llama.cpp drops).
fn gguf_name(hf: &str, classifier: bool) -> Option<String> {
    let top = match hf {
        "embeddings.word_embeddings.weight" => "token_embd.weight",
        "embeddings.position_embeddings.weight" => "position_embd.weight",
        "embeddings.token_type_embeddings.weight" => "token_types.weight",
        "embeddings.LayerNorm.weight" => "token_embd_norm.weight",
        "embeddings.LayerNorm.bias" => "token_embd_norm.bias",
        "pooler.dense.weight" if classifier => "cls.weight",
        "pooler.dense.bias" if classifier => "cls.bias",
        "classifier.weight" => "cls.output.weight",
        "classifier.bias" => "cls.output.bias",
        _ => "",
    };
    if !top.is_empty() {
        return Some(top.into());
    }
    let rest = hf.strip_prefix("encoder.layer.")?;
    let (layer, part) = rest.split_once('.')?;
    let (what, kind) = part.rsplit_once('.')?;
    let name = match what {
        "attention.self.query" => "attn_q",
        "attention.self.key" => "attn_k",
        "attention.self.value" => "attn_v",
        "attention.output.dense" => "attn_output",
        "attention.output.LayerNorm" => "attn_output_norm",
        "intermediate.dense" => "ffn_up",
        "output.dense" => "ffn_down",
        "output.LayerNorm" => "layer_output_norm",
        _ => return None,
    };
    Some(format!("blk.{layer}.{name}.{kind}"))
}

/// The GGUF of the checkpoint in `dir` (f32 tensors), pooling as
/// llama.cpp numbers it (1 mean, 2 CLS; 0 none for a cross-encoder).
pub fn bert_gguf(dir: &Path, pooling_type: u32) -> Vec<u8> {
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
    let cfg: Value = serde_json::from_slice(&read("config.json")).unwrap();
    let u = |k: &str| V::U32(cfg[k].as_u64().unwrap_or_else(|| panic!("config.json {k}")) as u32);
    let classifier = cfg["architectures"][0] == "BertForSequenceClassification";
    let tok: Value = serde_json::from_slice(&read("tokenizer.json")).unwrap();
    let vocab = tok["model"]["vocab"].as_object().unwrap();
    let mut tokens = vec![String::new(); vocab.len()];
    for (t, id) in vocab {
        tokens[id.as_u64().unwrap() as usize] = t.clone();
    }
    let control: Vec<usize> = (tok["added_tokens"].as_array().unwrap().iter())
        .filter(|a| a["special"] == true)
        .map(|a| a["id"].as_u64().unwrap() as usize)
        .collect();
    let types: Vec<V> = (0..tokens.len()).map(|i| V::I32(if control.contains(&i) { 3 } else { 1 })).collect();
    let phantom: Vec<String> = (tokens.iter().enumerate())
        .map(|(i, t)| match t.strip_prefix("##") {
            _ if control.contains(&i) => t.clone(),
            Some(cont) => cont.to_string(),
            None => format!("▁{t}"),
        })
        .collect();
    let id = |t: &str| V::U32(vocab[t].as_u64().unwrap() as u32);
    let mut md: Vec<(&str, V)> = vec![
        ("general.architecture", V::Str("bert")),
        ("general.name", V::Str("bert")),
        ("bert.context_length", u("max_position_embeddings")),
        ("bert.embedding_length", u("hidden_size")),
        ("bert.feed_forward_length", u("intermediate_size")),
        ("bert.block_count", u("num_hidden_layers")),
        ("bert.attention.head_count", u("num_attention_heads")),
        ("bert.attention.layer_norm_epsilon", V::F32(cfg["layer_norm_eps"].as_f64().unwrap() as f32)),
        ("bert.attention.causal", V::Bool(false)),
        ("bert.pooling_type", V::U32(pooling_type)),
        ("tokenizer.ggml.model", V::Str("bert")),
        ("tokenizer.ggml.pre", V::Str("default")),
        ("tokenizer.ggml.token_type_count", u("type_vocab_size")),
        ("tokenizer.ggml.tokens", V::Array(phantom.iter().map(|t| V::Str(t)).collect::<Vec<_>>().into())),
        ("tokenizer.ggml.token_type", V::Array(types.into())),
        ("tokenizer.ggml.unknown_token_id", id("[UNK]")),
        ("tokenizer.ggml.seperator_token_id", id("[SEP]")),
        ("tokenizer.ggml.padding_token_id", id("[PAD]")),
        ("tokenizer.ggml.cls_token_id", id("[CLS]")),
        ("tokenizer.ggml.mask_token_id", id("[MASK]")),
        ("tokenizer.ggml.bos_token_id", id("[CLS]")),
        ("tokenizer.ggml.eos_token_id", id("[SEP]")),
        ("tokenizer.ggml.add_bos_token", V::Bool(true)),
        ("tokenizer.ggml.add_eos_token", V::Bool(true)),
    ];
    if classifier {
        md.push(("bert.classifier.output_labels", V::Array(vec![V::Str("LABEL_0")].into())));
    }
    let weights = read("model.safetensors");
    let st = SafeTensors::deserialize(&weights).unwrap();
    let mut names: Vec<(String, String)> =
        st.names().into_iter().filter_map(|n| Some((gguf_name(n, classifier)?, n.to_string()))).collect();
    names.sort();
    let tensors: Vec<TensorData> = (names.iter())
        .map(|(g, hf)| {
            let t = st.tensor(hf).unwrap();
            assert_eq!(t.dtype(), safetensors::Dtype::F32, "{hf}");
            TensorData {
                name: g,
                dims: t.shape().iter().rev().map(|&d| d as u64).collect(),
                ty: GgmlType::F32,
                data: t.data().to_vec(),
            }
        })
        .collect();
    gguf(&md, &tensors)
}
