#!/bin/sh
# halo compile --targets ref,vulkan,hip,cuda on the dense qwen3 fixture,
# whose every kernel template has a twin under kernels/hip: the bundle is
# written with gfx1151 code objects and sm_90 PTX, and two compiles give the
# same bytes (bundles are deterministic with the HIP targets too). Skipped
# (77) without clang-19, the HIP dialect's compiler.
# usage: gpu_targets_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="gpu targets"
. "$(dirname "$0")/test_lib.sh"
command -v clang-19 >/dev/null || { echo "SKIP: clang-19 is not installed"; exit 77; }
fix=$root/tests/fixtures/qwen3_tiny

for i in 1 2; do
	expect 0 "wrote" compile --hf "$fix" --targets ref,vulkan,hip,cuda -o "$work/q$i.halo"
done
cmp -s "$work/q1.halo" "$work/q2.halo" || fail "two compiles with --targets ref,vulkan,hip,cuda differ"
grep -aq 'amdgcn-amd-amdhsa--gfx1151' "$work/q1.halo" || fail "the bundle has no gfx1151 code object"
grep -aq '\.target sm_90' "$work/q1.halo" || fail "the bundle has no sm_90 PTX"

finish
