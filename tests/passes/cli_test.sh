#!/bin/sh
# Smoke tests of `halo` and `halo inspect`: help texts, exit codes (0 ok,
# 1 bad input, 2 bad command line), every format, and clear messages.
# usage: cli_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
set -u
halo=$1
root=${HALO_SOURCE_ROOT:-.}
model=$root/tests/models/hybrid_tiny.yaml
config=$root/tests/models/hybrid_tiny.config.json
out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fails=0

# expect CODE PATTERN ARGS...: exit status CODE and PATTERN in stdout+stderr.
expect() {
	code=$1 pattern=$2
	shift 2
	"$halo" "$@" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" -ne "$code" ] || ! cat "$out" "$err" | grep -q -- "$pattern"; then
		echo "FAIL: halo $* -> exit $rc (want $code), output lacks '$pattern':" >&2
		head -5 "$out" "$err" >&2
		fails=$((fails + 1))
	fi
}

expect 0 "usage: halo <command>" --help
expect 2 "usage: halo <command>"
expect 2 "unknown command 'frobnicate'" frobnicate
expect 0 "--list-passes" inspect --help
expect 0 "place_barriers" inspect --list-passes
expect 2 "unknown option '--bogus'" inspect "$model" --config "$config" --bogus
expect 2 "needs a value" inspect "$model" --config
expect 2 "no model file given" inspect --config "$config"
expect 2 "is required" inspect "$model"
expect 2 "unknown pass 'nope'" inspect "$model" --config "$config" --after nope
expect 2 "unknown format 'xml'" inspect "$model" --config "$config" --format xml
expect 2 "needs --after" inspect "$model" --config "$config" --format schedule --after schedule
expect 2 "applies to --format schedule and memory" inspect "$model" --config "$config" --entry decode
expect 1 "missing.yaml" inspect "$root/missing.yaml" --config "$config"
expect 1 "no entry 'draft'" inspect "$model" --config "$config" --format memory --entry draft
expect 0 "model: hybrid_tiny" inspect "$model" --config "$config" --after dce
expect 0 "digraph" inspect "$model" --config "$config" --format dot
expect 0 "state_write layers.0.gdn.conv_store: state:layers.0.gdn.conv" \
	inspect "$model" --config "$config" --format schedule --entry prefill
expect 0 "activation_bytes:" inspect "$model" --config "$config" --format=memory --entry=decode
if grep -q "entry prefill" "$out"; then
	echo "FAIL: --entry decode also printed prefill" >&2
	fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] && echo "cli_test: ok"
exit "$fails"
