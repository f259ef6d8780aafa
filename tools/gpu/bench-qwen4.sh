#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): Qwen3.8 Flash
# (qwen4_exp) at its published dims with seeded random f16 weights, cut to
# the 4 layers of tools/gpu/bench/qwen4_exp/config.json (3 GDN, PLE on the
# second, 1 QSA) plus the MTP head: 512 experts top 10 per layer, vocab
# 248320. Plain decode with the top kernels (halo run --profile), then
# speculative decoding with accept-all and reject-last drafts for K = 1..4
# (bench/spec_bench), and the card's copy bandwidth as the ceiling.
# usage: tools/gpu/bench-qwen4.sh [N_PREDICT]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
n=${1:-64}
bundle=/tmp/qwen4_exp_f16.halo
t0=$(date +%s.%N)
"$HALO_BIN/halo" compile --hf tools/gpu/bench/qwen4_exp --random-weights 1 --dtype f16 -o "$bundle"
t1=$(date +%s.%N)
echo "compile: $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes"
tokens=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens $tokens --n-predict "$n" > /tmp/gen.txt
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens $tokens --n-predict 32 --profile > /dev/null
"$HALO_BIN/spec_bench" "$bundle" vulkan "$n" 1,2,3,4
python3 tools/gpu/copy_bw.py
