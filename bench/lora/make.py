"""A random LoRA adapter for a base GGUF, for timing: rank R on all seven
projections of every layer (attn_q/k/v/output, ffn_gate/up/down), f16, as
llama.cpp's convert_lora_to_gguf.py lays one out (general.type adapter,
adapter.type lora, adapter.lora.alpha = R, `blk.N.<tensor>.weight.lora_a`
[R, inputs] and `.lora_b` [outputs, R]). The numbers are N(0, 0.02²):
their size, not their sense, is what is timed.

    target/pyenv/bin/python bench/lora/make.py BASE.gguf OUT.gguf [RANK=16] [SEED=0]
"""
import sys

import numpy as np
import gguf

PROJ = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]


def main():
    base, out = sys.argv[1], sys.argv[2]
    rank = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    r = gguf.GGUFReader(base)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    w = gguf.GGUFWriter(out, arch)
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", float(rank))
    rng = np.random.default_rng(seed)
    n = 0
    for t in r.tensors:
        parts = t.name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in PROJ or parts[3] != "weight":
            continue
        n_in, n_out = int(t.shape[0]), int(t.shape[1])  # ggml order: [inputs, outputs]
        a = (0.02 * rng.standard_normal((rank, n_in))).astype(np.float16)
        b = (0.02 * rng.standard_normal((n_out, rank))).astype(np.float16)
        w.add_tensor(t.name + ".lora_a", a)
        w.add_tensor(t.name + ".lora_b", b)
        n += 1
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{out}: {n} pairs of rank {rank} for {arch}")


if __name__ == "__main__":
    main()
