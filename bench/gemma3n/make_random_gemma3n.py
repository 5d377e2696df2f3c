"""A real-shape Gemma 3n GGUF with random weights, for speed and for
llama.cpp to load beside tern (a matmul's speed does not depend on what its
weights learned): Gemma 3n E2B's shapes (30 layers, 2048 wide, 8/2 heads of
256, MLPs of 8192, per-layer inputs of 256 over a 262144-token table, AltUp's
4 streams, LAuReL of rank 64, the last 10 layers sharing K/V, the first 10
sparse), with the keys llama.cpp's Gemma3NModel converter writes
(`shared_kv_layers` a float, as the published files). Written in f16 with
gguf-py, streamed tensor by tensor; `bench/moe/make.sh gemma3n-e2b` then
quantizes it with the peer build's llama-quantize.

    python make_random_gemma3n.py OUT.gguf VOCAB.gguf

VOCAB.gguf: Gemma 3 270M's (its 262144-token SentencePiece vocabulary).
Weights are slices of one pool of N(0, 0.02) values at varying offsets;
norms are ones; AltUp's coefficients N(0, 0.1).
"""
import os
import sys
from statistics import NormalDist

import numpy as np
import gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from random_gguf import copy_tokenizer, pool  # noqa: E402

L, E, H, HKV, D, FF, P, R, A, SHARED, SPARSE = 30, 2048, 8, 2, 256, 8192, 256, 64, 4, 10, 10

def main(out, vocab_path):
    w = gguf.GGUFWriter(out, "gemma3n")
    w.add_name("random gemma-3n-e2b shape")
    w.add_context_length(32768)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length([FF] * L)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_key_length(D)
    w.add_value_length(D)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_sliding_window(512)
    w.add_altup_active_idx(0)
    w.add_altup_num_inputs(A)
    w.add_embedding_length_per_layer_input(P)
    w.add_float32("gemma3n.attention.shared_kv_layers", float(SHARED))
    w.add_activation_sparsity_scale([NormalDist().inv_cdf(0.95) if l < SPARSE else -float("inf") for l in range(L)])
    w.add_sliding_window_pattern([(l + 1) % 5 != 0 for l in range(L)])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    n_vocab = copy_tokenizer(w, vocab_path)

    f16, f32 = np.float16, np.float32
    # (name, numpy shape (ggml's reversed), dtype, kind): kind "w" pool, "1" ones, "c" N(0, 0.1)
    t = [("token_embd.weight", (n_vocab, E), f16, "w"), ("per_layer_token_embd.weight", (n_vocab, L * P), f16, "w"),
         ("per_layer_model_proj.weight", (L * P, E), f16, "w"), ("per_layer_proj_norm.weight", (P,), f32, "1"),
         ("altup_proj.weight", (A - 1, E, E), f16, "w"), ("altup_unembd_proj.weight", (A - 1, E, E), f16, "w")]
    for i in range(L):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", (E,), f32, "1"), (b + "attn_q.weight", (H * D, E), f16, "w"),
              (b + "attn_k.weight", (HKV * D, E), f16, "w"), (b + "attn_v.weight", (HKV * D, E), f16, "w"),
              (b + "attn_output.weight", (E, H * D), f16, "w"), (b + "attn_q_norm.weight", (D,), f32, "1"),
              (b + "attn_k_norm.weight", (D,), f32, "1"), (b + "post_attention_norm.weight", (E,), f32, "1"),
              (b + "ffn_norm.weight", (E,), f32, "1"), (b + "ffn_gate.weight", (FF, E), f16, "w"),
              (b + "ffn_up.weight", (FF, E), f16, "w"), (b + "ffn_down.weight", (E, FF), f16, "w"),
              (b + "post_ffw_norm.weight", (E,), f32, "1"), (b + "altup_router.weight", (A, E), f16, "w"),
              (b + "altup_router_norm.weight", (E,), f32, "1"), (b + "altup_predict_coef.weight", (A * A, A), f32, "c"),
              (b + "altup_correct_coef.weight", (A, A), f32, "c"), (b + "altup_correct_scale.weight", (E,), f32, "1"),
              (b + "laurel_l.weight", (R, E), f16, "w"), (b + "laurel_r.weight", (E, R), f16, "w"),
              (b + "laurel_post_norm.weight", (E,), f32, "1"), (b + "inp_gate.weight", (P, E), f16, "w"),
              (b + "proj.weight", (E, P), f16, "w"), (b + "post_norm.weight", (E,), f32, "1")]
    t += [("output_norm.weight", (E,), f32, "1")]
    for name, shape, dtype, _ in t:
        w.add_tensor_info(name, shape, np.dtype(dtype), int(np.prod(shape)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(1)
    for k, (name, shape, dtype, kind) in enumerate(t):
        x = {"1": lambda: np.ones(shape, dtype=dtype), "c": lambda: rng.normal(0.0, 0.1, shape).astype(dtype),
             "w": lambda: pool(shape, k)}[kind]()
        w.write_tensor_data(x)
        print(f"\r{k + 1}/{len(t)} {name}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    w.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
