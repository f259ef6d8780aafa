#!/bin/sh
# halo compile --targets ref,vulkan,hip,cuda on each model's tiny fixture
# (dense qwen3, qwen3_next, qwen3_5_moe, qwen4_exp, deepseek_v4: every kernel
# template has a twin under kernels/hip): the bundle is written with gfx1151 code
# objects and sm_90 PTX, and two compiles of qwen3 give the same bytes
# (bundles are deterministic with the HIP targets too; the others compile
# once, for time): the second compile without the kernel cache
# (codegen/kernel_cache.h), so clang runs again whatever the first found
# there. Skipped (77) without clang-19, the HIP dialect's compiler. Slow
# with a cold cache: each compile runs clang-19 twice on each choice's
# kernel (its first candidate: the one the cuda and hip backends run).
# usage: gpu_targets_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="gpu targets"
. "$(dirname "$0")/test_lib.sh"
command -v clang-19 >/dev/null || { echo "SKIP: clang-19 is not installed"; exit 77; }

for f in qwen3_tiny qwen3_next_tiny qwen3_5_moe_tiny qwen4_exp_tiny deepseek_v4_tiny; do
	expect 0 "wrote" compile --hf "$root/tests/fixtures/$f" --targets ref,vulkan,hip,cuda -o "$work/$f.1.halo"
	if [ "$f" = qwen3_tiny ]; then
		wrap="env HALO_KERNEL_CACHE=off"
		expect 0 "wrote" compile --hf "$root/tests/fixtures/$f" --targets ref,vulkan,hip,cuda -o "$work/$f.2.halo"
		wrap=
		cmp -s "$work/$f.1.halo" "$work/$f.2.halo" ||
			fail "$f: two compiles with --targets ref,vulkan,hip,cuda differ"
	fi
	grep -aq 'amdgcn-amd-amdhsa--gfx1151' "$work/$f.1.halo" || fail "$f: the bundle has no gfx1151 code object"
	grep -aq '\.target sm_90' "$work/$f.1.halo" || fail "$f: the bundle has no sm_90 PTX"
	rm -f "$work/$f.1.halo" "$work/$f.2.halo"
done

finish
