#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the device's read
# ceiling, then the decode matvec kernels against it at Qwen3-8B and Qwen3.8
# Flash shapes: the heuristic and its variant space at T = 1..8 and, with
# --sweep, a wider tile grid (bench/matvec_bench.c). Output to $OUT when set.
# usage: tools/gpu/matvec.sh [--sweep]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
"$HALO_BIN/read_bw" | tee "$out/read_bw.txt"
"$HALO_BIN/matvec_bench" "$@" 30 | tee "$out/matvec.txt"
