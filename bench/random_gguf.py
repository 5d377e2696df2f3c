"""What the real-shape random-weight GGUF writers share (bench/moe,
bench/gemma3n): a pool of N(0, 0.02) f16 values that tensors are sliced
from at varying offsets (fast, and a matmul's speed does not depend on
what its weights learned), and a vocabulary's tokenizer keys copied over
(llama.cpp's loader wants one)."""
import numpy as np
import gguf

POOL = np.random.default_rng(0).normal(0.0, 0.02, 1 << 26).astype(np.float16)


def pool(shape, seed):
    """A tensor of `shape` from the pool, at an offset `seed` picks."""
    return _from(POOL, int(np.prod(shape)), seed).reshape(shape)


def _from(source, n, seed):
    """`n` values of `source`, read on from an offset `seed` picks (wrapping)."""
    out = np.empty(n, dtype=source.dtype)
    at, done = (seed * 7919 * 4099) % (source.size - 1), 0
    while done < n:
        take = min(n - done, source.size - at)
        out[done:done + take] = source[at:at + take]
        done, at = done + take, 0
    return out


def copy_tokenizer(w, vocab_path):
    """The `tokenizer.*` keys of `vocab_path` written to `w`; its size."""
    vocab = gguf.GGUFReader(vocab_path)
    for name, field in vocab.fields.items():
        if name.startswith("tokenizer."):
            vtype = field.types[0]
            sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
            w.add_key_value(name, field.contents(), vtype, sub)
    return len(vocab.fields["tokenizer.ggml.tokens"].data)


BYTES = np.random.default_rng(2).integers(0, 256, 1 << 26, dtype=np.uint8)
Q4_K_BLOCK = 144  # bytes per 256 weights: f16 d, f16 dmin, 12 bytes of scales, 128 of nibbles


def q4_k(shape, seed):
    """Random Q4_K blocks for a float tensor of `shape` (its last dimension
    a multiple of 256), as bytes `(..., rows, blocks · 144)`: nibbles and
    6-bit scales from a byte pool, each block's d and dmin small f16s — the
    way to write a model too large to write in f16 first."""
    *lead, cols = shape
    row = cols // 256 * Q4_K_BLOCK
    out = _from(BYTES, int(np.prod(lead)) * row, seed)
    blocks = out.reshape(-1, Q4_K_BLOCK)
    blocks[:, 0:2] = np.frombuffer(np.float16(4e-5).tobytes(), dtype=np.uint8)
    blocks[:, 2:4] = np.frombuffer(np.float16(2e-4).tobytes(), dtype=np.uint8)
    return out.reshape(*lead, row)
