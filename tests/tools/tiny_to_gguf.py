"""Test-only: write a tiny bf16 or f32 oracle model (an HF directory saved
by transformers: Qwen3ForCausalLM, Phi3ForCausalLM, GemmaForCausalLM,
Gemma2ForCausalLM or MistralForCausalLM) as a GGUF file with the `gguf`
package (gguf-py), the way llama.cpp's converter lays out a qwen3, phi3,
gemma, gemma2 or llama model:
matrices kept in their saved dtype, norms in f32; Phi-3's fused qkv_proj
as attn_qkv and gate_up_proj as ffn_up, its rotated dimensions and sliding
window as keys, LongRoPE's factors as rope_factors_long/short tensors with
the original context and attention factor as keys; Gemma 2's norms stored
as 1 + w, its four norms per layer under their GGUF names, its window and
softcaps as keys; Gemma's norms as 1 + w under Llama's names, its
head_dim as the key length; YaRN as Qwen's converter writes it (type, factor,
original context); Mistral's Q and K rows permuted for ggml's RoPE, its
window as `llama.attention.sliding_window`; mixtures of experts (Qwen2-MoE,
Qwen3-MoE, OLMoE, and Mixtral as `llama`) as llama.cpp's converter writes
them: each layer's experts stacked into `ffn_{gate,up,down}_exps`, the
router as `ffn_gate_inp`, Qwen2-MoE's shared expert as `ffn_*_shexp` and
its gate as the vector `ffn_gate_inp_shexp`, the counts and widths as
`expert_*` keys; Gemma 3n as llama.cpp's Gemma3NModel converter writes it
(norms as w, AltUp's projections stacked into `altup_proj` and
`altup_unembd_proj`, the per-layer widths, sliding-window pattern and
Φ⁻¹(sparsity) as arrays, `shared_kv_layers` as a float as the published
files have it, the windowed layers' RoPE base as `rope.freq_base_swa`); no
tokenizer (the oracle models have none).

    python tiny_to_gguf.py HF_DIR OUT.gguf [VOCAB.gguf]

With VOCAB.gguf (SmolLM2's byte-level BPE, Gemma 3's SentencePiece), its
tokenizer cut to the model's vocabulary size (the first tokens, the merges
among them) goes in too, for the packages that want one (npm's tests of the
mixtures and of Gemma 3n).
"""
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

NAMES = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "self_attn.qkv_proj.weight": "attn_qkv.weight",
    "mlp.gate_up_proj.weight": "ffn_up.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight",
    "block_sparse_moe.gate.weight": "ffn_gate_inp.weight",
    "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
    "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
    "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
    "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight",
}

# one expert's matrices, by their transformers name (after `experts.E.`)
EXPERT = {"gate_proj.weight": "gate", "up_proj.weight": "up", "down_proj.weight": "down",
          "w1.weight": "gate", "w3.weight": "up", "w2.weight": "down"}


# Gemma's norms around attention and the MLP
GEMMA_LAYER = {
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "pre_feedforward_layernorm.weight": "ffn_norm.weight",
    "post_feedforward_layernorm.weight": "post_ffw_norm.weight",
}


# Gemma 3n's own tensors: the model's, and a layer's (after `layers.N.`)
GEMMA3N = {
    "model.embed_tokens_per_layer.weight": "per_layer_token_embd.weight",
    "model.per_layer_model_projection.weight": "per_layer_model_proj.weight",
    "model.per_layer_projection_norm.weight": "per_layer_proj_norm.weight",
}
GEMMA3N_LAYER = dict(GEMMA_LAYER, **{
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "altup.modality_router.weight": "altup_router.weight",
    "altup.router_norm.weight": "altup_router_norm.weight",
    "altup.prediction_coefs.weight": "altup_predict_coef.weight",
    "altup.correction_coefs.weight": "altup_correct_coef.weight",
    "altup.correct_output_scale": "altup_correct_scale.weight",
    "laurel.linear_left.weight": "laurel_l.weight",
    "laurel.linear_right.weight": "laurel_r.weight",
    "laurel.post_laurel_norm.weight": "laurel_post_norm.weight",
    "per_layer_input_gate.weight": "inp_gate.weight",
    "per_layer_projection.weight": "proj.weight",
    "post_per_layer_input_norm.weight": "post_norm.weight",
})


# llama.cpp's Gemma converters store norm weights as 1 + w
GEMMAS = ("gemma", "gemma2")


def gguf_name(hf: str, arch: str) -> str:
    if hf in NAMES:
        return NAMES[hf]
    if hf in GEMMA3N:
        return GEMMA3N[hf]
    _, _, i, rest = hf.split(".", 3)
    layer = dict(LAYER, **GEMMA_LAYER) if arch == "gemma2" else dict(LAYER, **GEMMA3N_LAYER) if arch == "gemma3n" else LAYER
    return f"blk.{i}.{layer[rest]}"


def permute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's LlamaModel.permute: each head's rows reordered so that
    ggml's adjacent-pair RoPE rotates what transformers' rotate_half does."""
    return rows.reshape(n_head, 2, rows.shape[0] // n_head // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def read_safetensors(path: Path):
    """(name, dtype, shape, raw bytes) of each tensor, without torch."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8 : 8 + n])
    header.pop("__metadata__", None)
    for name, t in header.items():
        s, e = t["data_offsets"]
        yield name, t["dtype"], t["shape"], raw[8 + n + s : 8 + n + e]


def copy_vocab(w, vocab_path: str, n_vocab: int) -> None:
    """The tokenizer keys of `vocab_path`, its first `n_vocab` tokens and
    the merges whose parts and result are among them."""
    r = gguf.GGUFReader(vocab_path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()[:n_vocab]
    kept = set(tokens)
    for name, field in r.fields.items():
        if not name.startswith("tokenizer."):
            continue
        v = field.contents()
        if name == "tokenizer.ggml.tokens":
            v = tokens
        elif name in ("tokenizer.ggml.token_type", "tokenizer.ggml.scores"):
            v = v[:n_vocab]
        elif name == "tokenizer.ggml.merges":
            v = [m for m in v if all(p in kept for p in m.split(" ")) and m.replace(" ", "") in kept]
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, v, field.types[0], sub)


def main(src: str, out: str, vocab: str | None = None) -> None:
    src = Path(src)
    cfg = json.loads((src / "config.json").read_text())
    arch = {"Qwen3ForCausalLM": "qwen3", "Phi3ForCausalLM": "phi3", "Gemma2ForCausalLM": "gemma2",
            "GemmaForCausalLM": "gemma", "MistralForCausalLM": "llama", "MixtralForCausalLM": "llama",
            "Qwen2MoeForCausalLM": "qwen2moe", "Qwen3MoeForCausalLM": "qwen3moe",
            "OlmoeForCausalLM": "olmoe", "Gemma3nForCausalLM": "gemma3n"}[cfg["architectures"][0]]
    w = gguf.GGUFWriter(out, arch)
    w.add_name(src.name)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    n_expert = cfg.get("num_experts") or cfg.get("num_local_experts")
    if n_expert:
        w.add_expert_count(n_expert)
        w.add_expert_used_count(cfg["num_experts_per_tok"])
        if "moe_intermediate_size" in cfg:
            w.add_expert_feed_forward_length(cfg["moe_intermediate_size"])
        if "shared_expert_intermediate_size" in cfg:
            w.add_expert_shared_feed_forward_length(cfg["shared_expert_intermediate_size"])
    if arch == "gemma3n":  # llama.cpp's Gemma3NModel converter
        from statistics import NormalDist
        w.add_sliding_window(cfg["sliding_window"])
        w.add_final_logit_softcapping(cfg["final_logit_softcapping"])
        w.add_altup_active_idx(cfg["altup_active_idx"])
        w.add_altup_num_inputs(cfg["altup_num_inputs"])
        w.add_embedding_length_per_layer_input(cfg["hidden_size_per_layer_input"])
        w.add_float32(f"{arch}.attention.shared_kv_layers", float(cfg["num_kv_shared_layers"]))
        w.add_activation_sparsity_scale([NormalDist().inv_cdf(p) if p > 0 else -math.inf
                                         for p in cfg["activation_sparsity_pattern"]])
        w.add_sliding_window_pattern([t == "sliding_attention" for t in cfg["layer_types"]])
        w.add_rope_freq_base_swa(cfg["rope_parameters"]["sliding_attention"]["rope_theta"])
        cfg = dict(cfg, rope_parameters=cfg["rope_parameters"]["full_attention"])
    if arch in ("qwen3", "qwen3moe", "gemma", "gemma2", "gemma3n"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "gemma2":  # llama.cpp's Gemma2 converter: window and softcaps as keys
        assert cfg["query_pre_attn_scalar"] == head_dim, "llama.cpp scales gemma2 scores by head_dim^-1/2"
        w.add_sliding_window(cfg["sliding_window"])
        w.add_attn_logit_softcapping(cfg["attn_logit_softcapping"])
        w.add_final_logit_softcapping(cfg["final_logit_softcapping"])
    elif arch == "llama" and cfg.get("sliding_window"):  # the window as a key (llama.cpp's llama reads
        w.add_sliding_window(cfg["sliding_window"])  # none; tern windows every layer)
    elif arch == "phi3":  # llama.cpp's Phi3 converter: rotated dims and the window as keys
        rot = cfg["rope_parameters"].get("partial_rotary_factor", 1.0)
        w.add_rope_dimension_count(int(rot * cfg["hidden_size"]) // cfg["num_attention_heads"])
        if cfg.get("sliding_window"):
            w.add_sliding_window(cfg["sliding_window"])
    rope = cfg["rope_parameters"]
    w.add_rope_freq_base(rope["rope_theta"])
    if rope.get("rope_type") == "longrope":  # llama.cpp's Phi3 converter: factors as tensors
        orig = cfg["original_max_position_embeddings"]
        scale = cfg["max_position_embeddings"] / orig
        w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0)
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_tensor("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    if rope.get("rope_type") == "yarn":  # llama.cpp's Qwen2/Qwen3 converter's keys
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rope["factor"])
        w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    if vocab:
        copy_vocab(w, vocab, cfg["vocab_size"])
    f32 = cfg.get("dtype", cfg.get("torch_dtype")) == "float32"
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if f32 else gguf.LlamaFileType.MOSTLY_BF16)
    experts = {}  # (layer, which) -> {expert: array}
    altup = {}  # (gguf name, stream) -> array
    for name, dtype, shape, data in read_safetensors(src / "model.safetensors"):
        assert dtype == ("F32" if f32 else "BF16"), (name, dtype)
        if ".altup_projections." in name or ".altup_unembed_projections." in name:  # stacked below
            assert f32, "AltUp's projections are written from float32 checkpoints"
            stacked = "altup_proj.weight" if ".altup_projections." in name else "altup_unembd_proj.weight"
            altup[(stacked, int(name.split(".")[2]))] = np.frombuffer(data, dtype=np.float32).reshape(shape)
            continue
        if ".experts." in name:  # stacked below, as llama.cpp's converter does
            assert f32, "experts are written from float32 checkpoints"
            layer, rest = name.split(".layers.")[1].split(".", 1)
            e, part = rest.split(".experts.")[1].split(".", 1)
            x = np.frombuffer(data, dtype=np.float32).reshape(shape)
            experts.setdefault((int(layer), EXPERT[part]), {})[int(e)] = x
            continue
        if name.endswith("shared_expert_gate.weight"):  # [1, n_embd] -> the vector [n_embd]
            shape = shape[1:]
        if f32:
            x = np.frombuffer(data, dtype=np.float32).reshape(shape)
            if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
                x = permute(x, cfg["num_attention_heads"] if "q_proj" in name else cfg["num_key_value_heads"])
            w.add_tensor(gguf_name(name, arch), x + np.float32(1) if arch in GEMMAS and len(shape) == 1 else x)
            continue
        bits = np.frombuffer(data, dtype=np.uint16).reshape(shape)
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = cfg["num_attention_heads"] if "q_proj" in name else cfg["num_key_value_heads"]
            bits = permute(bits, heads)
        if len(shape) == 1:  # norms in f32, exactly the bf16 values (Gemma's plus 1, in f32)
            norm = (bits.astype(np.uint32) << 16).view(np.float32)
            w.add_tensor(gguf_name(name, arch), norm + np.float32(1) if arch in GEMMAS else norm)
        else:
            # raw bytes, one row per row; the writer derives the element shape
            w.add_tensor(gguf_name(name, arch), bits.view(np.uint8).reshape(shape[0], -1),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
    for stacked in sorted({n for n, _ in altup}):
        w.add_tensor(stacked, np.stack([altup[(stacked, k)] for k in range(len(altup) // 2)]))
    for (layer, which), by_expert in sorted(experts.items()):
        stacked = np.stack([by_expert[e] for e in range(len(by_expert))])
        w.add_tensor(f"blk.{layer}.ffn_{which}_exps.weight", stacked)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
