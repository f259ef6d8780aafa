#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the backend op suite
# (tests/ops/backend_ops.c) on the Vulkan and cuda backends against ref,
# every variant of both swept, on the case bundles pack.sh compiled here with
# the cuda-sm90 target (code for every candidate) (.devrun/ops_cuda.tar.xz: the GPU machine has no
# clang-19 to make PTX). A missing driver or device fails here
# (HALO_REQUIRE_GPU=1). The log goes to $OUT/backend-ops.txt.
# Packing: `PACK_TESTS=0 PACK_OPS=1 sh tools/gpu/pack.sh`. Every case with
# every cuda variant and the validation layer is over a run's 64 MiB: either
# PACK_OPS_CASES="..." (some cases), or PACK_VALIDATION=0 and
# OPS_BACKENDS=ref,cuda here (no Vulkan half, which needs the layer).
# usage: tools/gpu/backend-ops.sh [CASE...]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
rm -rf /tmp/ops_cuda && mkdir -p /tmp/ops_cuda
xz -dc .devrun/ops_cuda.tar.xz | tar -C /tmp/ops_cuda -xf -
rc=0
# No case named: the ones packed (all of them only without PACK_OPS_CASES).
if [ $# -eq 0 ]; then
	for f in /tmp/ops_cuda/*.halo; do set -- "$@" "$(basename "$f" .halo)"; done
fi
HALO_REQUIRE_GPU=1 "$HALO_BIN/backend_ops" --read /tmp/ops_cuda "${OPS_BACKENDS:-ref,vulkan,cuda}" "$@" \
	> "$out/backend-ops.txt" 2>&1 ||
	rc=$?
cat "$out/backend-ops.txt"
exit "$rc"
