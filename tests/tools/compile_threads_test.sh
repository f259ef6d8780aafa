#!/bin/sh
# halo compile converts weights and compiles kernels on every core it may run
# on; the bundle must not depend on how many: one core (taskset) against all
# of them, for a checkpoint converted to f16 and for seeded random weights,
# and quantized (q8_0 from a checkpoint, q4_k and f8e4m3 from random weights
# at K = 256).
# usage: compile_threads_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="compile threads"
. "$(dirname "$0")/test_lib.sh"
command -v taskset >/dev/null || { echo "FAIL: taskset (util-linux) is missing" >&2; exit 1; }

i=0
for args in "--hf $root/tests/fixtures/qwen3_next_tiny --dtype f16" \
	"--hf $root/tests/fixtures/qwen4_exp_tiny --random-weights 9 --dtype f16" \
	"--hf $root/tests/fixtures/qwen3_tiny --quant q8_0" \
	"--hf $root/tests/models/quant_k256/qwen3_next --random-weights 3 --targets ref --quant q4_k" \
	"--hf $root/tests/models/quant_k256/qwen3_next --random-weights 3 --targets ref --quant f8e4m3"; do
	i=$((i + 1))
	# shellcheck disable=SC2086 # args holds several flags
	taskset -c 0 "$halo" compile $args -o "$work/one$i.halo" 2>"$work/err" || fail "one core: $(cat "$work/err")"
	# shellcheck disable=SC2086
	"$halo" compile $args -o "$work/all$i.halo" 2>"$work/err" || fail "all cores: $(cat "$work/err")"
	cmp -s "$work/one$i.halo" "$work/all$i.halo" || fail "one core and all cores gave different bundles for: $args"
done

finish
