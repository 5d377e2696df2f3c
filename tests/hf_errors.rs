//! Broken HF directories: each is a copy of a tiny oracle model with one
//! thing spoiled, and loading it must fail with an error naming what (and,
//! for tensors, every problem at once) — never a panic.

use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors};
use tern_tests::hfdir::{copy, edit_json, edit_shard};

fn load_err(dir: &Path) -> String {
    let msg = match tern::load(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e.to_string(),
    };
    std::fs::remove_dir_all(dir).ok();
    msg
}

const SHARD2: &str = "model-00002-of-00003.safetensors";
const INDEX: &str = "model.safetensors.index.json";

#[test]
fn missing_unexpected_and_misshaped_tensors_are_reported_together() {
    let d = copy("tiny-qwen2", "three");
    edit_shard(&d.join(SHARD2), |m| {
        m.remove("model.layers.0.mlp.up_proj.weight");
        m.insert("model.layers.0.mlp.extra.weight".into(), (Dtype::F32, vec![4], vec![0; 16]));
        let n = m.get_mut("model.layers.0.input_layernorm.weight").unwrap();
        (n.1, n.2) = (vec![32], n.2[..128].to_vec());
    });
    edit_json(&d.join(INDEX), |v| {
        let map = v["weight_map"].as_object_mut().unwrap();
        map.remove("model.layers.0.mlp.up_proj.weight");
        map.insert("model.layers.0.mlp.extra.weight".into(), SHARD2.into());
    });
    let msg = load_err(&d);
    assert!(msg.starts_with("3 tensor problems"), "{msg}");
    for want in [
        "missing tensor model.layers.0.mlp.up_proj.weight",
        "unexpected tensor model.layers.0.mlp.extra.weight",
        "tensor model.layers.0.input_layernorm.weight: dims [32], expected [64]",
    ] {
        assert!(msg.contains(want), "{want:?} not in:\n{msg}");
    }
}

#[test]
fn shards_and_index_must_agree() {
    // the index puts a tensor in another shard than the one holding it
    let d = copy("tiny-qwen2", "moved");
    edit_json(&d.join(INDEX), |v| v["weight_map"]["lm_head.weight"] = SHARD2.into());
    let msg = load_err(&d);
    assert!(msg.contains("lm_head.weight") && msg.contains(SHARD2), "{msg}");

    // a shard beside the index that it does not name
    let d = copy("tiny-qwen2", "stray");
    std::fs::copy(d.join(SHARD2), d.join("model-00004-of-00004.safetensors")).unwrap();
    let msg = load_err(&d);
    assert!(msg.contains("model-00004-of-00004.safetensors: (file): a shard"), "{msg}");

    // the index names a shard that is not there
    let d = copy("tiny-qwen2", "absent");
    std::fs::remove_file(d.join("model-00003-of-00003.safetensors")).unwrap();
    let msg = load_err(&d);
    assert!(msg.contains("model-00003-of-00003.safetensors"), "{msg}");

    // a file name that leaves the directory
    let d = copy("tiny-qwen2", "escape");
    edit_json(&d.join(INDEX), |v| v["weight_map"]["lm_head.weight"] = "../model-00003-of-00003.safetensors".into());
    let msg = load_err(&d);
    assert!(msg.contains("is not a .safetensors file of this directory"), "{msg}");

    // a tensor in two shards
    let d = copy("tiny-qwen2", "twice");
    let head = {
        let b = std::fs::read(d.join("model-00003-of-00003.safetensors")).unwrap();
        let st = SafeTensors::deserialize(&b).unwrap();
        let t = st.tensor("lm_head.weight").unwrap();
        (t.dtype(), t.shape().to_vec(), t.data().to_vec())
    };
    edit_shard(&d.join(SHARD2), |m| {
        m.insert("lm_head.weight".into(), head);
    });
    let msg = load_err(&d);
    assert!(msg.contains("tensor lm_head.weight (in"), "{msg}");
}

#[test]
fn bad_files_name_the_file_and_field() {
    let d = copy("tiny-llama", "arch");
    edit_json(&d.join("config.json"), |v| v["architectures"] = serde_json::json!(["DeepseekV3ForCausalLM"]));
    let msg = load_err(&d);
    assert!(msg.contains("unsupported architecture \"DeepseekV3ForCausalLM\""), "{msg}");

    let d = copy("tiny-gemma2", "softcap");
    edit_json(&d.join("config.json"), |v| v["attn_logit_softcapping"] = 0.0.into());
    let msg = load_err(&d);
    assert!(msg.contains("attn_logit_softcapping") && msg.contains("above 0"), "{msg}");

    let d = copy("tiny-llama", "field");
    edit_json(&d.join("config.json"), |v| v["num_attention_heads"] = "four".into());
    assert_eq!(load_err(&d), "config.json: num_attention_heads: \"four\" is not a positive integer below 2^31");

    let d = copy("tiny-llama", "truncated");
    let p = d.join("model.safetensors");
    let b = std::fs::read(&p).unwrap();
    std::fs::write(&p, &b[..b.len() - 100]).unwrap();
    let msg = load_err(&d);
    assert!(msg.starts_with("model.safetensors: header:"), "{msg}");

    let d = copy("tiny-qwen3", "dtype");
    edit_shard(&d.join("model.safetensors"), |m| {
        let t = m.get_mut("model.layers.2.mlp.up_proj.weight").unwrap();
        t.0 = Dtype::F16;
    });
    let msg = load_err(&d);
    assert!(msg.contains("model.layers.2.mlp.up_proj.weight: dtype F16, but config.json says BF16"), "{msg}");

    let d = copy("tiny-qwen3", "noconfig");
    std::fs::remove_file(d.join("config.json")).unwrap();
    let msg = load_err(&d);
    assert!(msg.contains("config.json") && msg.contains("a model directory needs it"), "{msg}");
}
