#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the Qwen3-8B-shaped dense
# model (tools/gpu/bench/qwen3_8b, seeded random f16 weights) as a
# llama-bench-style table, pp and tg, beside the read ceiling (bench/read_bw)
# measured in the same call; `halo tune` on the bundle and the same table
# with its choices; the top kernels of a profiled tuned decode. LAYERS cuts
# the stack (the full 36 layers take over two minutes to compile): per-layer
# kernels are the full model's, the head weighs more in the total.
# Every step writes to $OUT (or /tmp) as it ends, so a run cut short keeps
# what it finished.
# usage: tools/gpu/bench.sh [TG] [PP] [LAYERS] [TUNE_BUDGET_S]   (TUNE_BUDGET_S 0: no tuning)
# HALO_COMPILE_FLAGS: more `halo compile` flags (--no-merge: one dispatch per
# projection), named in the table's model column.
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tg=${1:-128}
pp=${2:-512}
layers=${3:-36}
budget=${4:-120}
bundle=/tmp/qwen3_8b_f16.halo
cfg=/tmp/qwen3_8b_cfg
python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b "$cfg" "$layers"
model="qwen3-8b-shape"
[ "$layers" -eq 36 ] || model="qwen3-8b-shape-${layers}L"
flags=${HALO_COMPILE_FLAGS:-}
[ -z "$flags" ] || model="$model $flags"

ceiling=$("$HALO_BIN/read_bw" | tee "$out/read_bw.txt" | sed -n 's/read ceiling: \([0-9]*\) GB.*/\1/p')
t0=$(date +%s.%N)
# shellcheck disable=SC2086 # flags are words
"$HALO_BIN/halo" compile --hf "$cfg" --random-weights 1 --dtype f16 $flags -o "$bundle"
t1=$(date +%s.%N)
echo "compile ($layers layers): $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes" |
	tee "$out/compile.txt"
# Weight bytes per decoded token: every matrix once, the embedding row aside,
# in the bytes of the flags' --quant format.
quant=$(echo " $flags " | sed -n 's/.* --quant \([a-z0-9_]*\) .*/\1/p')
# shellcheck disable=SC2086 # the format, or none (f16)
active=$(python3 tools/gpu/dense_active_bytes.py "$cfg" $quant)
echo "weight bytes per decoded token: $active" | tee -a "$out/compile.txt"
bench() { # NAME [halo run flags...]
	name=$1
	shift
	python3 tools/gpu/model_bench.py "$HALO_BIN/halo" "$bundle" "$model" "$active" "$ceiling" \
		"$out/qwen3_8b_$name.json" --tg "$tg" --pp "$pp" --reps 3 --dtype "${quant:-f16}" "$@" | tee "$out/qwen3_8b_$name.md"
}
bench heuristic --no-tuning
[ "$budget" -gt 0 ] || exit 0
if "$HALO_BIN/halo" tune "$bundle" --db "$out/tuning.json" --budget "$budget" > "$out/tune.txt" 2> "$out/tune.log"; then
	cat "$out/tune.txt"
	bench tuned --tuning "$out/tuning.json"
	"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens 1,2,3,4,5,6,7,8 --n-predict 32 --profile \
		--tuning "$out/tuning.json" 2>&1 >/dev/null | tail -14 | tee "$out/profile.txt"
else
	tail -5 "$out/tune.log"
fi
