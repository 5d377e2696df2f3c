use alloc::format;
use alloc::string::{String, ToString};

use super::config::HfConfig;
use super::dir::is_shard_name;
use super::{GenerationDefaults, Index};
use crate::error::Error;

fn config(extra: &str) -> String {
    format!(
        r#"{{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 128,
            "vocab_size": 512 {extra}}}"#
    )
}

fn parse(extra: &str) -> crate::Result<HfConfig> {
    HfConfig::parse(config(extra).as_bytes())
}

#[test]
fn defaults_and_legacy_rope_fields() {
    let c = parse("").unwrap();
    assert_eq!((c.config.arch.name(), c.config.head_dim, c.config.rope_base), ("llama", 16, 10000.0));
    assert_eq!((c.expect.tied, c.expect.qkv_bias), (Some(false), Some(false)));
    let c = parse(r#", "rope_theta": 500000.0, "rope_scaling": {"type": "linear", "factor": 4.0}"#).unwrap();
    assert_eq!((c.config.rope_base, c.config.rope_pos_scale), (500000.0, 0.25));
    let q2 = HfConfig::parse(config("").replace("LlamaForCausalLM", "Qwen2ForCausalLM").as_bytes()).unwrap();
    assert_eq!(q2.expect.qkv_bias, Some(true), "Qwen2 always has q/k/v biases");
}

#[test]
fn llama3_rope_keeps_high_and_scales_low_frequencies() {
    let rope = r#", "head_dim": 128, "hidden_size": 512, "max_position_embeddings": 131072,
        "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}"#;
    let scaled = parse(rope).unwrap().config.rope_inv_freq;
    let plain = parse(r#", "head_dim": 128, "hidden_size": 512, "rope_theta": 500000.0"#).unwrap().config.rope_inv_freq;
    assert_eq!(scaled.len(), 64);
    assert_eq!(scaled[0], plain[0], "wavelength below 8192/4: unchanged");
    assert_eq!(scaled[63], plain[63] / 8.0, "wavelength above 8192: divided by the factor");
    assert!(scaled.iter().zip(&plain).all(|(s, p)| s <= p && *s >= p / 8.0));
    assert!(scaled.windows(2).all(|w| w[1] <= w[0]));
}

/// Gemma 2: `Gemma2Config`'s defaults (softcaps 50 and 30, every other
/// layer windowed); a null softcap is none, not the default.
#[test]
fn gemma2_softcaps_default_and_null() {
    let g2 = |extra: &str| {
        let c = config(extra).replace("LlamaForCausalLM", "Gemma2ForCausalLM");
        HfConfig::parse(c.as_bytes()).unwrap().config
    };
    let c = g2("");
    assert_eq!((c.attn_softcap, c.final_softcap), (Some(50.0), Some(30.0)));
    assert_eq!(c.window.map(|w| (w.size, w.layers)), Some((4096, alloc::vec![true, false])));
    let c = g2(r#", "final_logit_softcapping": null, "attn_logit_softcapping": 20.0"#);
    assert_eq!((c.attn_softcap, c.final_softcap), (Some(20.0), None));
}

#[test]
fn what_tern_cannot_run_is_refused_by_name() {
    let arch = HfConfig::parse(config("").replace("LlamaForCausalLM", "DeepseekV3ForCausalLM").as_bytes());
    assert!(matches!(arch.unwrap_err(), Error::UnsupportedArch { arch, .. } if arch == "DeepseekV3ForCausalLM"));
    let longrope =
        r#", "original_max_position_embeddings": 16, "rope_scaling": {"rope_type": "longrope", "factor": 4.0}"#;
    let longrope = parse(longrope).unwrap_err();
    assert!(longrope.to_string().contains("long_factor must be 8 positive numbers"), "{longrope}");
    let su = parse(r#", "rope_scaling": {"rope_type": "su", "factor": 4.0}"#).unwrap_err();
    assert!(su.to_string().contains("original_max_position_embeddings"), "{su}");
    let yarn = parse(r#", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}"#).unwrap_err();
    assert!(yarn.to_string().contains("yarn needs original_max_position_embeddings"), "{yarn}");
    assert!(parse(r#", "hidden_act": "gelu""#).unwrap_err().to_string().contains("gelu"));
    let e = HfConfig::parse(br#"{"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64}"#).unwrap_err();
    assert_eq!(e.to_string(), "config.json: num_attention_heads: missing");
    let awq = parse(r#", "quantization_config": {"quant_method": "awq", "bits": 4}"#).unwrap_err();
    assert!(awq.to_string().contains("quant_method \"awq\""), "{awq}");
    let e = parse(r#", "dtype": "float8_e4m3fn""#).unwrap_err();
    assert!(e.to_string().starts_with("config.json: dtype:"), "{e}");
}

#[test]
fn index_and_generation_config() {
    let ix = Index::parse(br#"{"weight_map": {"a": "model-00002-of-00002.safetensors", "b": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}}"#).unwrap();
    assert_eq!(ix.files(), ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]);
    for bad in
        [r#"{"weight_map": {"a": "/etc/passwd.safetensors"}}"#, r#"{"weight_map": {}}"#, r#"{"weight_map": {"a": 3}}"#]
    {
        assert!(matches!(Index::parse(bad.as_bytes()), Err(Error::ModelFile { .. })), "{bad}");
    }
    assert!(is_shard_name("model-00001-of-00003.safetensors"));
    assert!(!is_shard_name("model.safetensors") && !is_shard_name("model-a-of-3.safetensors"));
    let g = GenerationDefaults::parse(br#"{"do_sample": true, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05, "eos_token_id": [151645, 151643]}"#).unwrap();
    assert_eq!((g.sampling.temperature, g.sampling.top_k, g.eos_token_ids.len()), (Some(0.7), Some(20), 2));
    let greedy = GenerationDefaults::parse(br#"{"do_sample": false, "temperature": 0.7}"#).unwrap();
    assert_eq!(greedy.sampling.temperature, Some(0.0));
}
