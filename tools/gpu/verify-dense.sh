#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): verify(K+1) steps
# against decode(1) on the Qwen3-8B-shaped dense model (tools/gpu/bench/
# qwen3_8b, seeded random f16 weights) cut to LAYERS layers, with the
# tuning DB at TUNING when given (bench/spec_bench: a bundle without a draft
# head runs its verify-only part). Writes to $OUT (or /tmp).
# usage: tools/gpu/verify-dense.sh [LAYERS] [N_PREDICT] [TUNING]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
layers=${1:-4}
n=${2:-128}
bundle=/tmp/qwen3_8b_verify.halo
cfg=/tmp/qwen3_8b_verify_cfg
python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b "$cfg" "$layers"
"$HALO_BIN/halo" compile --hf "$cfg" --random-weights 1 --dtype f16 -o "$bundle" 2>&1 | tail -1 |
	tee "$out/dense_compile.txt"
"$HALO_BIN/spec_bench" "$bundle" vulkan "$n" 1,2,3,4 ${3:-} | tee "$out/dense_verify.txt"
