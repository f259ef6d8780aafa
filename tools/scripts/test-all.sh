#!/bin/sh
# Installs what is missing, builds, and runs the whole test suite three ways:
# plain, under AddressSanitizer + UndefinedBehaviorSanitizer, and the libFuzzer
# targets (clang-19) for a bounded time.
set -eu
cd "$(dirname "$0")/../.."
sh tools/scripts/install-deps.sh
# One kernel cache (codegen/kernel_cache.h) for the three passes: the
# fixtures' kernels are compiled by glslang and clang once, in the plain
# pass, and the ASan pass's compiles find them (a Vulkan model test there
# spends most of its time in glslang's allocations otherwise). Entries are
# keyed by compiler, flags and source, so a kept directory is never stale;
# the determinism tests that show the compilers deterministic run without it.
export HALO_KERNEL_CACHE="${HALO_KERNEL_CACHE:-$PWD/build-kernel-cache}"

run_suite() { # build-dir, meson-test args, setup args...
	dir=$1; targs=$2; shift 2
	[ -f "$dir/build.ninja" ] || meson setup "$dir" "$@"
	ninja -C "$dir"
	meson test -C "$dir" --print-errorlogs --num-processes 2 --timeout-multiplier 3 $targs
}

run_suite build-test ""
# The trained models' oracle tests run the code paths of the fixtures' ones on
# larger weights (10 min of CPU under ASan): the plain run covers them. So
# does it the four Qwen families' speculative runs on Vulkan (suite
# spec_vulkan_models: 70-230 s each under ASan even with the kernels cached,
# 256 tokens at K = 1..4 through the kernels: 7.5 min of the pass); their
# ref twins run the same spec and drafter code, and the Vulkan backend's
# verify, keep-slot and chain paths stay in through hc_count (halo run
# --spec mtp on Vulkan, two configs) and draft_chain_vulkan_qwen4_exp.
# DeepSeek V4's Vulkan model runs (suite dsv4_vulkan_models) are in: 3 min
# with the kernels cached, 20 min when each compiled its own. The op suite
# (tests/ops) runs its Vulkan cases
# on the heuristic's picks only: every variant runs the same host code, and
# sweeping them all takes 9 min under ASan instead of about 4. kernels_hip_host
# (suite hip_host) stays out: the twins it runs are shared objects clang++-19
# builds without the sanitizers, and its own loops are the plain pass's. So
# does kernels_hip_codegen (suite clang): clang-19's time, not halo's; the
# emitters it drives run under ASan in gpu_targets.
HALO_OPS_NO_SWEEP=1 run_suite build-asan \
	"--no-suite trained --no-suite spec_vulkan_models --no-suite hip_host --no-suite clang" \
	-Db_sanitize=address,undefined \
	-Db_lundef=false -Dfuzzers=disabled
# The fuzz build compiles everything with clang-19; only its fuzz suite runs.
CC=clang-19 run_suite build-fuzz "--suite fuzz" -Dfuzzers=enabled
echo "test-all: all suites passed"
