#!/bin/sh
# On the GPU machine (after `PACK_TESTS=0 PACK_VALIDATION=0 PACK_SPEED=LAYERS
# sh tools/gpu/pack.sh` here): one bundle on the Vulkan and the cuda backends
# side by side (issue 13: decode through cuda beside Vulkan, the slower a
# lead for the other), as a llama-bench-style table with the fraction of
# the read ceiling measured in the same call. The bundle is the Qwen3-8B
# shape cut to LAYERS layers, compiled here with the cuda target (the GPU
# machine has no clang-19 to make PTX) from periodic random f16 weights,
# which is what lets it travel; the kernels' times do not depend on the
# values. Writes to $OUT (or /tmp).
# Each format pack.sh packed (PACK_SPEED_DTYPES) is one bundle and one table
# (FORMAT+xq, int8 activations, on Vulkan alone).
# HALO names the halo binary to time (default $HALO_BIN/halo: an A/B packs
# an older build beside it), BACKENDS the backends (default "vulkan cuda").
# usage: [HALO=path] [BACKENDS=...] tools/gpu/backend-speed.sh [TG] [PP]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tg=${1:-128}
pp=${2:-512}
cfg=.devrun/speed/cfg
layers=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["num_hidden_layers"])' "$cfg/config.json")
ceiling=$("$HALO_BIN/read_bw" | tee "$out/read_bw.txt" | sed -n 's/read ceiling: \([0-9]*\) GB.*/\1/p')
bundle=/tmp/halo-speed.halo
for packed in .devrun/speed/qwen3_8b.*.halo.xz; do
	dtype=${packed#.devrun/speed/qwen3_8b.}
	dtype=${dtype%.halo.xz}
	xz -dc "$packed" > "$bundle"
	active=$(python3 tools/gpu/dense_active_bytes.py "$cfg" "${dtype%+xq}")
	backends=${BACKENDS:-vulkan cuda}
	for backend in $backends; do
		python3 tools/gpu/model_bench.py "${HALO:-$HALO_BIN/halo}" "$bundle" "qwen3-8b-shape-${layers}L" "$active" "$ceiling" \
			"$out/speed_${dtype}_$backend.json" --tg "$tg" --pp "$pp" --reps 3 --dtype "$dtype" --backend "$backend" |
			tee "$out/speed_${dtype}_$backend.md"
	done
done
