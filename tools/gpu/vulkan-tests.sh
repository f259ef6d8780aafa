#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the Vulkan kernel tests
# and the qwen3 oracle test, validation layer on, each failing on any
# validation message. Logs go to $OUT when set.
set -u
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
"$HALO_BIN/halo" devices
fails=0
for t in "$HALO_BIN"/test_kernels_* "$HALO_BIN/test_qwen3_oracle"; do
	name=$(basename "$t")
	args=""
	[ "$name" = test_qwen3_oracle ] && args=vulkan
	if "$t" $args > "$out/$name.log" 2>&1; then
		echo "PASS $name"
	else
		echo "FAIL $name"; tail -20 "$out/$name.log"; fails=$((fails + 1))
	fi
done
echo "vulkan-tests: $fails failed"
[ "$fails" -eq 0 ]
