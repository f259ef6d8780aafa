#!/bin/sh
# On the GPU machine: a change to the int8-activation matvecs, old against
# new in one call. Pack first (here): PACK_TESTS=0 PACK_VALIDATION=0
# [PACK_SPEED=1 PACK_SPEED_DTYPES="q4_k+xq"] sh tools/gpu/pack.sh, then add
# the older build's stripped halo and bench/matvec_bench as halo_old and
# matvec_bench_old to .devrun/bin.tar.xz's halo-bin/. Runs the read ceiling,
# both builds' heuristic matvecs (matvec_bench --xq, q4_k and q8_0, T = 1..8,
# with the driver's compile statistics: --stats),
# the 36-layer Qwen3-8B shape's decode in q4_k, new / old / new
# (tools/gpu/ab-bench.sh), the new build's decode profile, and with a packed
# speed bundle Nsight Compute on its cuda twin (tools/gpu/ncu-decode.sh).
# Writes $OUT/matvec.txt, $OUT/ab/, $OUT/profile-*.txt, $OUT/ncu-*.
# usage: tools/gpu/xq-ab.sh [TG] [NCU_KERNELS]   (NCU_KERNELS: ncu-decode.sh's launches, default 40:
# fewer profile only the prompt's kernels)
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tg=${1:-128}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
"$HALO_BIN/read_bw" | tee "$out/read_bw.txt"
for b in matvec_bench_old matvec_bench; do
	echo "== $b"
	"$HALO_BIN/$b" --stats --dtype q4_k,q8_0 --xq --only zzz 20
done > "$out/matvec.txt" 2>&1
HALO_COMPILE_FLAGS="--quant q4_k" OUT="$out/ab" sh tools/gpu/ab-bench.sh "$tg" 0 36
OUT="$out" sh tools/gpu/profile.sh 8 64 36 --quant q4_k > /dev/null 2>&1
if ls .devrun/speed/*.halo.xz > /dev/null 2>&1; then
	OUT="$out" sh tools/gpu/ncu-decode.sh ${2:+"$2"} > "$out/ncu.log" 2>&1 || tail -3 "$out/ncu.log"
fi
