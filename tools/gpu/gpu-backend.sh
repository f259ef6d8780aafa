#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the cuda backend
# (runtime/drivers: the HIP-dialect twins as PTX through the CUDA driver)
# against the ref backend on each fixture bundle pack.sh compiled with the
# cuda-sm90 target (.devrun/<fixture>_cuda.halo.xz): prefill and decode
# logits within the qwen3 oracle's tolerance, the same greedy tokens
# (tests/runtime/test_gpu_backend.c). A missing driver or device fails here
# (HALO_REQUIRE_GPU=1). Every fixture runs even after one fails; the exit
# status is 1 if any did. Writes to $OUT.
# usage: tools/gpu/gpu-backend.sh
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
: > "$out/gpu-backend.txt"
rc=0
for b in .devrun/*_cuda.halo.xz; do
	f=$(basename "$b" _cuda.halo.xz)
	xz -dc "$b" > "/tmp/${f}_cuda.halo"
	HALO_REQUIRE_GPU=1 "$HALO_BIN/test_gpu_backend" oracle cuda "$f" "/tmp/${f}_cuda.halo" \
		>> "$out/gpu-backend.txt" 2>&1 || rc=1
done
cat "$out/gpu-backend.txt"
exit "$rc"
