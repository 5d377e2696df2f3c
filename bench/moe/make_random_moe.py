"""Real-shape mixture-of-experts GGUF files with random weights, for speed
only (a matmul's speed does not depend on what its weights learned):
written in f16 with gguf-py, streamed tensor by tensor (never the whole
model in memory), then `llama-quantize` from the peer build makes the
Q4_K_M that both engines run (bench/moe/make.sh).

    python make_random_moe.py SHAPE OUT.gguf VOCAB.gguf [q4_k]

With `q4_k`, every matrix is written as random Q4_K blocks directly (no
f16, no llama-quantize): Qwen3-30B-A3B's f16 would take 61 GB, its Q4_K
17 GB (the routers stay f32, as the converter keeps them).

SHAPE: olmoe-1b-7b (OLMoE-1B-7B-0924: 16 layers, 2048 wide, 64 experts of
1024, 8 a token) or qwen3-30b-a3b (48 layers, 2048 wide, 128 experts of
768, 8 a token, GQA 32/4, head_dim 128). The tokenizer is copied from
VOCAB.gguf (SmolLM2's 49152-token BPE: llama.cpp's loader wants one) and
sets the vocabulary size. Weights are slices of one pool of N(0, 0.02)
values at varying offsets; the routers N(0, 1) so that tokens spread over
the experts as a trained router's do.
"""
import os
import sys

import numpy as np
import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from random_gguf import copy_tokenizer, pool, q4_k  # noqa: E402

SHAPES = {
    "olmoe-1b-7b": dict(arch="olmoe", n_layer=16, n_embd=2048, n_head=16, n_head_kv=16, head_dim=128,
                        n_ff_exp=1024, n_expert=64, n_used=8, qk_norm="whole", ctx=4096, eps=1e-5,
                        rope_base=10000.0),
    "qwen3-30b-a3b": dict(arch="qwen3moe", n_layer=48, n_embd=2048, n_head=32, n_head_kv=4, head_dim=128,
                          n_ff_exp=768, n_expert=128, n_used=8, qk_norm="head", ctx=40960, eps=1e-6,
                          rope_base=1000000.0),
}

def main(shape_name, out, vocab_path, kind="f16"):
    s = SHAPES[shape_name]
    w = gguf.GGUFWriter(out, s["arch"])
    w.add_name(f"random {shape_name}")
    w.add_context_length(s["ctx"])
    w.add_embedding_length(s["n_embd"])
    w.add_block_count(s["n_layer"])
    w.add_feed_forward_length(s["n_ff_exp"])
    w.add_expert_feed_forward_length(s["n_ff_exp"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(s["eps"])
    w.add_expert_count(s["n_expert"])
    w.add_expert_used_count(s["n_used"])
    quant = kind == "q4_k"
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_K_S if quant else gguf.LlamaFileType.MOSTLY_F16)
    n_vocab = copy_tokenizer(w, vocab_path)

    e, q, kv, f, x = s["n_embd"], s["n_head"] * s["head_dim"], s["n_head_kv"] * s["head_dim"], s["n_ff_exp"], s["n_expert"]
    qn, kn = (q, kv) if s["qk_norm"] == "whole" else (s["head_dim"], s["head_dim"])
    # (name, numpy shape, dtype, std): numpy shapes are ggml's reversed
    tensors = [("token_embd.weight", (n_vocab, e), np.float16, 0.02)]
    for i in range(s["n_layer"]):
        b = f"blk.{i}."
        tensors += [
            (b + "attn_norm.weight", (e,), np.float32, None),
            (b + "attn_q.weight", (q, e), np.float16, 0.02),
            (b + "attn_k.weight", (kv, e), np.float16, 0.02),
            (b + "attn_v.weight", (kv, e), np.float16, 0.02),
            (b + "attn_output.weight", (e, q), np.float16, 0.02),
            (b + "attn_q_norm.weight", (qn,), np.float32, None),
            (b + "attn_k_norm.weight", (kn,), np.float32, None),
            (b + "ffn_norm.weight", (e,), np.float32, None),
            (b + "ffn_gate_inp.weight", (x, e), np.float32, 1.0),
            (b + "ffn_gate_exps.weight", (x, f, e), np.float16, 0.02),
            (b + "ffn_up_exps.weight", (x, f, e), np.float16, 0.02),
            (b + "ffn_down_exps.weight", (x, e, f), np.float16, 0.02),
        ]
    tensors += [("output_norm.weight", (e,), np.float32, None), ("output.weight", (n_vocab, e), np.float16, 0.02)]
    for name, shape, dtype, _ in tensors:
        if quant and dtype == np.float16:
            byte_shape = (*shape[:-1], shape[-1] // 256 * 144)
            nbytes = int(np.prod(byte_shape))
            w.add_tensor_info(name, byte_shape, np.dtype(np.uint8), nbytes, raw_dtype=gguf.GGMLQuantizationType.Q4_K)
        else:
            w.add_tensor_info(name, shape, np.dtype(dtype), int(np.prod(shape)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(1)
    for k, (name, shape, dtype, std) in enumerate(tensors):
        if std is None:  # norms: ones
            t = np.ones(shape, dtype=dtype)
        elif dtype == np.float32:  # routers: their own random values
            t = rng.normal(0.0, std, shape).astype(np.float32)
        else:
            t = q4_k(shape, k) if quant else pool(shape, k)
        w.write_tensor_data(t)
        print(f"\r{k + 1}/{len(tensors)} {name}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    w.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
