#!/usr/bin/env python3
"""A GGUF file of a dense Qwen3 config (HF config.json) with seeded random f16
weights, for timing llama.cpp on the same shape as halo's
`halo compile --hf CONFIG --random-weights`: the side-by-side of
tools/gpu/llama-side.sh. Speed only: the values are random (normal, std
0.02, drawn once into an 8 MiB pool and written at rotating offsets), the norms 1.
The vocabulary is "no_vocab" with the config's vocab_size (llama-bench draws
random token ids; nothing is tokenized).

Written from the GGUF v3 layout (header, key/values, tensor infos, data
aligned to 32 bytes; a tensor's dims innermost first), with no llama.cpp code.
usage: gguf_random.py CONFIG_DIR OUT.gguf
"""
import json
import os
import random
import struct
import sys

ALIGN = 32
T_F32, T_F16 = 0, 1
V_UINT32, V_FLOAT32, V_STRING = 4, 6, 8
POOL = 1 << 22  # random f16 values, 8 MiB


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    if vtype == V_STRING:
        payload = gstr(value)
    elif vtype == V_UINT32:
        payload = struct.pack("<I", value)
    else:
        payload = struct.pack("<f", value)
    return gstr(key) + struct.pack("<I", vtype) + payload


def tensors(c):
    """(name, dims innermost first, type) of every tensor, in file order."""
    h, f, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = c.get("head_dim", h // c["num_attention_heads"])
    q, kvd = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    out = [("token_embd.weight", (h, v), T_F16)]
    for i in range(c["num_hidden_layers"]):
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", (h,), T_F32), (b + "attn_q.weight", (h, q), T_F16),
                (b + "attn_k.weight", (h, kvd), T_F16), (b + "attn_v.weight", (h, kvd), T_F16),
                (b + "attn_q_norm.weight", (hd,), T_F32), (b + "attn_k_norm.weight", (hd,), T_F32),
                (b + "attn_output.weight", (q, h), T_F16), (b + "ffn_norm.weight", (h,), T_F32),
                (b + "ffn_gate.weight", (h, f), T_F16), (b + "ffn_up.weight", (h, f), T_F16),
                (b + "ffn_down.weight", (f, h), T_F16)]
    out.append(("output_norm.weight", (h,), T_F32))
    if not c.get("tie_word_embeddings", False):
        out.append(("output.weight", (h, v), T_F16))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gguf_random.py CONFIG_DIR OUT.gguf")
    with open(os.path.join(sys.argv[1], "config.json")) as fp:
        c = json.load(fp)
    if c.get("model_type") != "qwen3":
        sys.exit(f"{sys.argv[1]}/config.json: model_type {c.get('model_type')!r}, expected 'qwen3' (dense)")
    hd = c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
    theta = c.get("rope_parameters", {}).get("rope_theta", c.get("rope_theta", 1e6))
    meta = [kv("general.architecture", V_STRING, "qwen3"), kv("general.name", V_STRING, "halo-random"),
            kv("general.file_type", V_UINT32, 1),
            kv("qwen3.block_count", V_UINT32, c["num_hidden_layers"]),
            kv("qwen3.context_length", V_UINT32, c.get("max_position_embeddings", 40960)),
            kv("qwen3.embedding_length", V_UINT32, c["hidden_size"]),
            kv("qwen3.feed_forward_length", V_UINT32, c["intermediate_size"]),
            kv("qwen3.attention.head_count", V_UINT32, c["num_attention_heads"]),
            kv("qwen3.attention.head_count_kv", V_UINT32, c["num_key_value_heads"]),
            kv("qwen3.attention.key_length", V_UINT32, hd), kv("qwen3.attention.value_length", V_UINT32, hd),
            kv("qwen3.rope.freq_base", V_FLOAT32, float(theta)),
            kv("qwen3.attention.layer_norm_rms_epsilon", V_FLOAT32, float(c.get("rms_norm_eps", 1e-6))),
            kv("qwen3.vocab_size", V_UINT32, c["vocab_size"]), kv("tokenizer.ggml.model", V_STRING, "no_vocab")]
    ts = tensors(c)
    infos, off, sizes = [], 0, []
    for name, dims, t in ts:
        n = 1
        for d in dims:
            n *= d
        size = n * (2 if t == T_F16 else 4)
        infos.append(gstr(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) +
                     struct.pack("<IQ", t, off))
        sizes.append(size)
        off += (size + ALIGN - 1) // ALIGN * ALIGN
    head = struct.pack("<IIQQ", 0x46554747, 3, len(ts), len(meta)) + b"".join(meta) + b"".join(infos)
    rng = random.Random(0)
    pool = struct.pack(f"<{POOL}e", *(rng.gauss(0.0, 0.02) for _ in range(POOL)))
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "wb") as fp:
        fp.write(head + b"\0" * (-len(head) % ALIGN))
        at = 0
        for (_, _, t), size in zip(ts, sizes):
            if t == T_F32:
                fp.write(struct.pack("<f", 1.0) * (size // 4))
            else:
                left = size
                while left:
                    n = min(left, len(pool) - at)
                    fp.write(pool[at:at + n])
                    left -= n
                    at = (at + n) % len(pool)
                at = (at + 2 * 4099) % len(pool)  # the next tensor starts elsewhere in the pool
            fp.write(b"\0" * (-size % ALIGN))
    os.replace(tmp, sys.argv[2])


if __name__ == "__main__":
    main()
