#!/usr/bin/env python3
# Weight bytes one decoded token reads on a dense Qwen3-shaped model
# (tools/gpu/bench/qwen3_8b and its cuts): every layer matrix once and the
# head, in FORMAT's bytes per weight (the embedding row aside; q4_k keeps
# the head in q8_0, codegen/quant_policy.c). The GPU scripts divide by the
# time per token for the fraction of the read ceiling.
# usage: dense_active_bytes.py CONFIG_DIR [f16|q8_0|q4_k|f8e4m3]
import json, os, sys

c = json.load(open(os.path.join(sys.argv[1], "config.json")))
fmt = sys.argv[2] if len(sys.argv) > 2 else "f16"
h, f, L, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
q, kv = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
per = {"f16": 2.0, "q8_0": 34 / 32, "q4_k": 144 / 256, "f8e4m3": 132 / 128}[fmt]
head = {"f16": 2.0, "q8_0": 34 / 32, "q4_k": 34 / 32, "f8e4m3": 132 / 128}[fmt]
print(int(per * L * (h * (q + 2 * kv) + q * h + 3 * h * f) + head * v * h))
