#!/bin/sh
# On the GPU machine (after PACK_SPEED=1 PACK_SPEED_DTYPES="f16 q8_0 q8_0+xq
# q4_k q4_k+xq" tools/gpu/pack.sh here): int8 activations (--act-quant q8,
# docs/quantization.md) against the float path. 1. the decode matvecs
# (bench/matvec_bench, q8_0 and q4_k): the float path's heuristic at every
# T, then with --xq the heuristic and every candidate of the space at T = 1,
# 5 and 8 and the fastest at every T; 2. the packed bundles (the Qwen3-8B
# shape cut to the packed layers) on Vulkan, tg only
# (tools/gpu/backend-speed.sh); 3. the f16 bundle again with
# HALO_VK_NO_SPIN=1 (a blocking fence wait), for the fence poll's A/B.
# Full tables in $OUT (matvec_*.txt, speed*/); a summary on stdout.
# usage: tools/gpu/bench-xq.sh [TG]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tg=${1:-128}
"$HALO_BIN/matvec_bench" --dtype q8_0,q4_k --only zzz 20 > "$out/matvec_float.txt"
"$HALO_BIN/matvec_bench" --dtype q8_0,q4_k --xq 20 > "$out/matvec_xq.txt"
head -3 "$out/matvec_float.txt"
echo "float path, heuristic:"
grep heuristic "$out/matvec_float.txt" | grep -E " (1|5|8)  heuristic"
echo "int8 activations, heuristic and best:"
grep -E "heuristic|best" "$out/matvec_xq.txt" | grep -E " (1|5|8)  (heuristic|best)"
OUT=$out/speed BACKENDS=vulkan sh tools/gpu/backend-speed.sh "$tg" 0 > /dev/null
cat "$out"/speed/speed_*.md | grep -E "^\|.*tg" || true
mkdir -p "$out/nospin"
xz -dc .devrun/speed/qwen3_8b.f16.halo.xz > /tmp/halo-nospin.halo
layers=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["num_hidden_layers"])' .devrun/speed/cfg/config.json)
ceiling=$(sed -n 's/read ceiling: \([0-9]*\) GB.*/\1/p' "$out/speed/read_bw.txt")
active=$(python3 tools/gpu/dense_active_bytes.py .devrun/speed/cfg f16)
for mode in spin block spin block; do
	if [ "$mode" = block ]; then export HALO_VK_NO_SPIN=1; else unset HALO_VK_NO_SPIN; fi
	python3 tools/gpu/model_bench.py "$HALO_BIN/halo" /tmp/halo-nospin.halo "qwen3-8b-shape-${layers}L $mode" \
		"$active" "$ceiling" "$out/nospin/$mode.json" --tg "$tg" --pp 0 --reps 3 --dtype f16 --backend vulkan |
		grep -E "^\|.*tg"
done
rm -f /tmp/halo-nospin.halo
