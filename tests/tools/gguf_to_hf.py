"""Test-only: turn a GGUF (qwen2 or llama) into an HF directory — every
tensor dequantized to float32 by gguf-py (independent of tern's
dequantizer) and saved as safetensors, sharded at 1 GiB with an index —
beside the oracle's config.json and tokenizer files. llama's Q/K rows,
which llama.cpp's converter permuted for its rotation, are put back in HF
order; qwen2's carry over as they are.

    python gguf_to_hf.py MODEL.gguf ORACLE_HF_DIR OUT_DIR
"""
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
LAYER = {
    "attn_norm.weight": "input_layernorm.weight",
    "attn_q.weight": "self_attn.q_proj.weight",
    "attn_k.weight": "self_attn.k_proj.weight",
    "attn_v.weight": "self_attn.v_proj.weight",
    "attn_q.bias": "self_attn.q_proj.bias",
    "attn_k.bias": "self_attn.k_proj.bias",
    "attn_v.bias": "self_attn.v_proj.bias",
    "attn_output.weight": "self_attn.o_proj.weight",
    "ffn_norm.weight": "post_attention_layernorm.weight",
    "ffn_gate.weight": "mlp.gate_proj.weight",
    "ffn_up.weight": "mlp.up_proj.weight",
    "ffn_down.weight": "mlp.down_proj.weight",
}
SHARD_BYTES = 1 << 30


def hf_name(g: str) -> str:
    if g in NAMES:
        return NAMES[g]
    _, i, rest = g.split(".", 2)
    return f"model.layers.{i}.{LAYER[rest]}"


def unpermute(w: np.ndarray, n_head: int) -> np.ndarray:
    """Undo convert_hf_to_gguf's permute: (n_head, 2, half, cols) <- (n_head, half, 2, cols)."""
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_shard(path: Path, tensors) -> None:
    header, offset = {}, 0
    for name, arr in tensors:
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, arr in tensors:
            f.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())


def main(model: str, oracle_hf: str, out: str) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(model)
    arch = reader.get_field("general.architecture").contents()
    assert arch in ("qwen2", "llama"), arch
    n_head = reader.get_field(f"{arch}.attention.head_count").contents()
    n_head_kv = reader.get_field(f"{arch}.attention.head_count_kv").contents()
    shards, cur, size = [], [], 0
    for t in reader.tensors:
        arr = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        arr = arr.reshape([int(d) for d in reversed(t.shape)])  # ggml dims → row-major shape
        if arch == "llama" and t.name.endswith("attn_q.weight"):
            arr = unpermute(arr, n_head)
        elif arch == "llama" and t.name.endswith("attn_k.weight"):
            arr = unpermute(arr, n_head_kv)
        if cur and size + arr.nbytes > SHARD_BYTES:
            shards.append(cur)
            cur, size = [], 0
        cur.append((hf_name(t.name), arr))
        size += arr.nbytes
    shards.append(cur)
    weight_map = {}
    for i, tensors in enumerate(shards):
        fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_shard(out / fname, tensors)
        weight_map.update({n: fname for n, _ in tensors})
    index = {"metadata": {"total_size": sum(a.nbytes for s in shards for _, a in s)}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    for f in ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"]:
        shutil.copy(Path(oracle_hf) / f, out / f)


if __name__ == "__main__":
    main(*sys.argv[1:])
