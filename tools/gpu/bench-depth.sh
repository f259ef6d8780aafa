#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): decode and prompt speed
# at two context depths (issue 11: decode attention must stay fast at 32k):
# the Qwen3-8B-shaped dense model (tools/gpu/bench/qwen3_8b, seeded random
# f16 weights) cut to LAYERS layers, compiled for a context of DEEP + 1024
# tokens, timed by `halo bench -d` (llama-bench's depth: the context already
# holds D tokens, prefilled untimed before every run) at depth SHALLOW and
# DEEP, beside the read ceiling (bench/read_bw). The KV cache's bytes read by
# one decode step at depth D (every layer's K and V rows 0..D, f32) are
# printed with the weights' for the fraction of the ceiling. Writes to $OUT.
# usage: tools/gpu/bench-depth.sh [LAYERS] [SHALLOW] [DEEP] [TG]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
layers=${1:-8}
shallow=${2:-1024}
deep=${3:-32768}
tg=${4:-64}
bundle=/tmp/qwen3_8b_depth.halo
cfg=/tmp/qwen3_8b_depth_cfg
python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b "$cfg" "$layers"
"$HALO_BIN/read_bw" | tee "$out/read_bw.txt"
"$HALO_BIN/halo" compile --hf "$cfg" --random-weights 1 --dtype f16 --ctx $((deep + 1024)) -o "$bundle" 2>&1 |
	tail -2 | tee "$out/depth_compile.txt"
echo "weight bytes per decoded token: $(python3 tools/gpu/dense_active_bytes.py "$cfg")" | tee -a "$out/depth_compile.txt"
python3 -c '
import json; c = json.load(open("'"$cfg"'/config.json"))
L, kv = c["num_hidden_layers"], c["num_key_value_heads"] * c["head_dim"]
for d in ('"$shallow"', '"$deep"'):
    print("KV bytes read per decoded token at depth %d: %d" % (d, L * 2 * kv * 4 * d))' | tee -a "$out/depth_compile.txt"
for d in "$shallow" "$deep"; do
	"$HALO_BIN/halo" bench "$bundle" -p 512 -n "$tg" -d "$d" -r 2 | tee "$out/depth_$d.md"
done
