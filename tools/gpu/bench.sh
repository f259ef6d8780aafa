#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the Qwen3-8B-shaped dense
# model (tools/gpu/bench/qwen3_8b, seeded random f16 weights) as a
# llama-bench-style table, pp512 and tg128, beside the read ceiling
# (bench/read_bw) measured in the same call; the top kernels of a profiled
# decode; then `halo tune` and the same table with the tuned choices.
# Tables and JSON go to $OUT when set.
# usage: tools/gpu/bench.sh [TG] [PP]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
tg=${1:-128}
pp=${2:-512}
bundle=/tmp/qwen3_8b_f16.halo
ceiling=$("$HALO_BIN/read_bw" | tee "$out/read_bw.txt" | sed -n 's/read ceiling: \([0-9]*\) GB.*/\1/p')
t0=$(date +%s.%N)
"$HALO_BIN/halo" compile --hf tools/gpu/bench/qwen3_8b --random-weights 1 --dtype f16 -o "$bundle"
t1=$(date +%s.%N)
echo "compile: $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes"
# Weight bytes per decoded token: every matrix once, the embedding row aside.
active=$(python3 -c '
import json; c = json.load(open("tools/gpu/bench/qwen3_8b/config.json"))
h, f, L, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
q, kv = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
print(2 * (L * (h * (q + 2 * kv) + q * h + 3 * h * f) + v * h))')
echo "weight bytes per decoded token: $active"
python3 tools/gpu/model_bench.py "$HALO_BIN/halo" "$bundle" qwen3-8b-shape "$active" "$ceiling" \
	"$out/qwen3_8b_heuristic.json" --tg "$tg" --pp "$pp" --reps 2 | tee "$out/qwen3_8b_heuristic.md"
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens 1,2,3,4,5,6,7,8 --n-predict 32 --profile \
	2>&1 >/dev/null | tail -12
if "$HALO_BIN/halo" tune "$bundle" --db "$out/tuning.json" --budget 120 > "$out/tune.txt"; then
	cat "$out/tune.txt"
	python3 tools/gpu/model_bench.py "$HALO_BIN/halo" "$bundle" qwen3-8b-shape "$active" "$ceiling" \
		"$out/qwen3_8b_tuned.json" --tg "$tg" --pp "$pp" --tuning "$out/tuning.json" | tee "$out/qwen3_8b_tuned.md"
fi
