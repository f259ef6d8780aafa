#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the cuda backend
# (runtime/drivers: the HIP-dialect twins as PTX through the CUDA driver)
# against the ref backend on the qwen3 fixture that pack.sh compiled with the
# cuda-sm90 target: prefill and decode logits within the qwen3 oracle's
# tolerance, the same greedy tokens (tests/runtime/test_gpu_backend.c). A
# missing driver or device fails here (HALO_REQUIRE_GPU=1). Writes to $OUT.
# usage: tools/gpu/gpu-backend.sh
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
xz -dc .devrun/qwen3_tiny_cuda.halo.xz > /tmp/qwen3_tiny_cuda.halo
HALO_REQUIRE_GPU=1 "$HALO_BIN/test_gpu_backend" oracle cuda /tmp/qwen3_tiny_cuda.halo 2>&1 |
	tee "$out/gpu-backend.txt"
