#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): where a decode matvec's
# time goes beside its bytes. bench/matvec_bench times each heuristic kernel
# in a chain of dispatches with a barrier between each, as a decode step runs
# them, on shapes from a near-empty 4096 x 128 (the chain's fixed cost per
# dispatch: launch, drain, the workgroup's serial latencies) to the Qwen3-8B
# layers', f16 and q8_0 / q4_k with f32 and int8 activations (--xq). With
# MATVEC_B set (a second matvec_bench in $HALO_BIN, e.g. one built from a
# kernel change) the same lines follow for it, A then B then A.
# Writes $OUT/fixed-cost.txt.
# usage: [MATVEC_B=name] tools/gpu/fixed-cost.sh [ITERS]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
iters=${1:-20}
shapes="--shape 4096x128 --shape 4096x1024 --shape 4096x4096 --shape 4096x6144 --shape 4096x24576 --shape 12288x4096"
bench_times() { # BENCH
	echo "== $1"
	"$HALO_BIN/$1" --dtype f16,q8_0,q4_k --only zzz $shapes "$iters"
	"$HALO_BIN/$1" --dtype q8_0,q4_k --xq --only zzz $shapes "$iters"
}
{
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
	"$HALO_BIN/read_bw"
	bench_times matvec_bench
	if [ -n "${MATVEC_B:-}" ]; then
		bench_times "$MATVEC_B"
		bench_times matvec_bench
	fi
} > "$out/fixed-cost.txt" 2>&1
