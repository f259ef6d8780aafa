#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): decode benchmark of a
# Qwen3-8B-shaped model with seeded random f16 weights, and the card's
# device-to-device copy bandwidth through PyTorch as the ceiling.
# usage: tools/gpu/bench.sh [N_PREDICT]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
n=${1:-128}
bundle=/tmp/qwen3_8b_f16.halo
t0=$(date +%s.%N)
"$HALO_BIN/halo" compile --hf tools/gpu/bench/qwen3_8b --random-weights 1 --dtype f16 -o "$bundle"
t1=$(date +%s.%N)
echo "compile: $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes"
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 --n-predict "$n" > /tmp/gen.txt
python3 tools/gpu/copy_bw.py
