#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): Qwen3.8 Flash
# (qwen4_exp) at its published dims with seeded random f16 weights, cut to
# the 4 layers of tools/gpu/bench/qwen4_exp/config.json (3 GDN, PLE on the
# second, 1 QSA) plus the MTP head: 512 experts top 10 per layer, vocab
# 248320. `halo tune` on the bundle (TUNE_BUDGET_S, 0: none), plain decode
# with the top kernels (halo run --profile), then speculative decoding
# (bench/spec_bench: accept-all and reject-last drafts at fixed K, and a
# never-right drafter at adaptive K, for K = 1..4), and the card's copy
# bandwidth as the ceiling. Every step writes to $OUT (or /tmp) as it ends.
# HALO_COMPILE_FLAGS: more `halo compile` flags (--draft-vocab N: the head
# drafts from the first N token ids).
# usage: tools/gpu/bench-qwen4.sh [N_PREDICT] [TUNE_BUDGET_S]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
n=${1:-64}
budget=${2:-0}
bundle=/tmp/qwen4_exp_f16.halo
t0=$(date +%s.%N)
# shellcheck disable=SC2086 # flags split on purpose
"$HALO_BIN/halo" compile --hf tools/gpu/bench/qwen4_exp --random-weights 1 --dtype f16 -o "$bundle" \
	${HALO_COMPILE_FLAGS:-} 2>&1 | tail -2 | tee "$out/compile.txt"
t1=$(date +%s.%N)
echo "compile: $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes" | tee -a "$out/compile.txt"
tuning=--no-tuning db=
if [ "$budget" -gt 0 ] && "$HALO_BIN/halo" tune "$bundle" --db "$out/tuning.json" --budget "$budget" \
	> "$out/tune.txt" 2> "$out/tune.log"; then
	tuning="--tuning $out/tuning.json" db=$out/tuning.json
fi
tokens=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens $tokens --n-predict "$n" $tuning 2>&1 >/dev/null |
	tee "$out/run.txt"
# 256 steps: the GPU's clocks rise over the first tens of milliseconds of a
# fresh process, and a short profile reads mostly the climb
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens $tokens --n-predict 256 --profile $tuning 2>&1 \
	>/dev/null | tail -14 | tee "$out/profile.txt"
"$HALO_BIN/spec_bench" "$bundle" vulkan "$n" 1,2,3,4 $db | tee "$out/spec.txt"
python3 tools/gpu/copy_bw.py | tee "$out/copy_bw.txt"
