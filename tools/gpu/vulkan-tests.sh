#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the Vulkan kernel tests
# and the qwen3 oracle test, validation layer on, each failing on any
# validation message. The summary goes to $OUT/vulkan-tests.txt and the logs
# to $OUT/vulkan-test-logs.tar.gz when OUT is set. Names (test_kernels_matmul
# ...) run only those tests.
# usage: tools/gpu/vulkan-tests.sh [TEST...]
set -u
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
logs=/tmp/vulkan-test-logs
mkdir -p "$logs"
"$HALO_BIN/halo" devices
fails=0
tests=""
for name in "$@"; do tests="$tests $HALO_BIN/$name"; done
[ -n "$tests" ] || tests="$(echo "$HALO_BIN"/test_kernels_*) $HALO_BIN/test_qwen3_oracle"
for t in $tests; do
	name=$(basename "$t")
	args=""
	[ "$name" = test_qwen3_oracle ] && args=vulkan
	"$t" $args > "$logs/$name.log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ]; then
		echo "PASS $name ($(grep -c '^ok' "$logs/$name.log") checks)"
	elif [ "$rc" -eq 77 ]; then # meson's skip code: the machine lacks a tool (clang-19)
		echo "SKIP $name: $(tail -1 "$logs/$name.log")"
	else
		echo "FAIL $name"; tail -20 "$logs/$name.log"; fails=$((fails + 1))
	fi
done | tee "$out/vulkan-tests.txt"
fails=$(grep -c '^FAIL' "$out/vulkan-tests.txt" || true)
echo "vulkan-tests: $fails failed" | tee -a "$out/vulkan-tests.txt"
tar -C /tmp -czf "$out/vulkan-test-logs.tar.gz" vulkan-test-logs
[ "$fails" -eq 0 ]
