# The shared frame of the CLI tests here, sourced after setting test_name:
#   test_name="cli run"; . "$(dirname "$0")/test_lib.sh"
# It takes the halo binary from $1 and the source tree from HALO_SOURCE_ROOT,
# and gives: halo, root, work (a scratch folder removed on exit), out and err
# (files in it), fail MSG (reports and counts a failure), expect CODE PATTERN
# ARGS... (runs halo ARGS behind $wrap, checks the exit code and that stdout
# or stderr matches PATTERN), and finish (prints "<test_name>: ok" or exits 1).
set -u
halo=$1
root=${HALO_SOURCE_ROOT:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/out err=$work/err
fails=0
wrap= # a command prefix for the next expect calls

fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

expect() { # CODE PATTERN ARGS...
	code=$1 pattern=$2
	shift 2
	$wrap "$halo" "$@" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" -ne "$code" ] || ! cat "$out" "$err" | grep -q -- "$pattern"; then
		echo "FAIL: halo $* -> exit $rc (want $code), output lacks '$pattern':" >&2
		head -5 "$out" "$err" >&2
		fails=$((fails + 1))
	fi
}

finish() {
	[ "$fails" -eq 0 ] || exit 1
	echo "$test_name: ok"
	exit 0
}
