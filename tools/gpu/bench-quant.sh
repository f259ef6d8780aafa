#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the Qwen3-8B-shaped model
# (tools/gpu/bench/qwen3_8b, seeded random weights, LAYERS of its 36 layers)
# compiled f16, --quant q8_0, q4_k and f8e4m3, each as a llama-bench-style
# table (pp and tg, heuristic kernels) beside the read ceiling measured in the
# same call; the fraction of the ceiling counts the bytes each format stores
# per decoded token (values and scales; under q4_k the head is q8_0, under
# f8e4m3 fp8 with an f32 scale per 128 of a row: docs/quantization.md). Writes $OUT/quant_<dtype>.md/.json, compile times
# and bundle sizes to $OUT/quant_compile.txt. FORMATS picks the formats
# (default "f16 q8_0 q4_k f8e4m3", with f32 activations: --act-quant none;
# FORMAT+xq: with --act-quant q8).
# usage: [FORMATS=...] tools/gpu/bench-quant.sh [TG] [PP] [LAYERS]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tg=${1:-128}
pp=${2:-512}
layers=${3:-12}
cfg=/tmp/qwen3_8b_quant_cfg
python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b "$cfg" "$layers"
model="qwen3-8b-shape-${layers}L"
[ "$layers" -eq 36 ] && model="qwen3-8b-shape"
ceiling=$("$HALO_BIN/read_bw" | sed -n 's/read ceiling: \([0-9]*\) GB.*/\1/p')
for fmt in ${FORMATS:-f16 q8_0 q4_k f8e4m3}; do
	bundle=/tmp/qwen3_8b_$fmt.halo
	quant=""
	[ "$fmt" = f16 ] || quant="--quant ${fmt%+xq}"
	# FORMAT: f32 activations whatever compile's default; FORMAT+xq: int8
	if [ "$fmt" = "${fmt%+xq}" ]; then quant="$quant --act-quant none"; else quant="$quant --act-quant q8"; fi
	t0=$(date +%s.%N)
	"$HALO_BIN/halo" compile --hf "$cfg" --random-weights 1 --dtype f16 $quant -o "$bundle" 2> /tmp/compile_$fmt.log
	t1=$(date +%s.%N)
	# bytes read per decoded token: every layer matrix and the head, in the format's bytes per weight
	active=$(python3 tools/gpu/dense_active_bytes.py "$cfg" "${fmt%+xq}")
	echo "$fmt: compile $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes, $active bytes read per token" |
		tee -a "$out/quant_compile.txt"
	tail -2 /tmp/compile_$fmt.log >> "$out/quant_compile.txt"
	python3 tools/gpu/model_bench.py "$HALO_BIN/halo" "$bundle" "$model" "$active" "$ceiling" \
		"$out/quant_$fmt.json" --tg "$tg" --pp "$pp" --reps 3 --dtype "$fmt" --no-tuning | tee "$out/quant_$fmt.md"
	rm -f "$bundle"
done
