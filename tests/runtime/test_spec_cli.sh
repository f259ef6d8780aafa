#!/bin/sh
# `halo run --spec` as users call it: flag errors exit 2; --spec mtp on a
# bundle without the MTP head's 'draft' entry is refused before anything runs
# (exit 1, naming the bundle and the missing entry, nothing on stdout);
# --spec none is plain decoding.
# usage: test_spec_cli.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
set -u
halo=$1
root=${HALO_SOURCE_ROOT:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/out err=$work/err bundle=$work/q.halo
fails=0

expect() { # CODE PATTERN ARGS...
	code=$1 pattern=$2
	shift 2
	"$halo" "$@" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" -ne "$code" ] || ! grep -q -- "$pattern" "$err"; then
		echo "FAIL: halo $* -> exit $rc (want $code), stderr lacks '$pattern':" >&2
		head -5 "$out" "$err" >&2
		fails=$((fails + 1))
	fi
}

"$halo" compile --hf "$root/tests/fixtures/qwen3_tiny" --targets ref -o "$bundle" >/dev/null 2>"$err" ||
	{ echo "FAIL: compile: $(cat "$err")" >&2; exit 1; }
expect 2 "--spec is none or mtp, not 'eagle'" run "$bundle" --backend ref --tokens 1,2 --spec eagle
expect 2 "--draft-n needs --spec mtp" run "$bundle" --backend ref --tokens 1,2 --draft-n 2
expect 2 "--draft-n wants 1..4" run "$bundle" --backend ref --tokens 1,2 --spec mtp --draft-n 5
expect 2 "--draft-n wants 1..4" run "$bundle" --backend ref --tokens 1,2 --spec mtp --draft-n 0
expect 1 "--spec mtp refused: $bundle: no 'draft' entry point" run "$bundle" --backend ref --tokens 1,2 --spec mtp
[ -s "$out" ] && { echo "FAIL: a refused --spec mtp run printed tokens: $(cat "$out")" >&2; fails=$((fails + 1)); }
expect 1 "none.halo: cannot open" run "$work/none.halo" --backend ref --tokens 1,2 --spec mtp
plain=$("$halo" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 12 2>/dev/null)
none=$("$halo" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 12 --spec none 2>/dev/null)
[ -n "$plain" ] && [ "$plain" = "$none" ] ||
	{ echo "FAIL: --spec none gave '$none', plain decoding '$plain'" >&2; fails=$((fails + 1)); }
[ "$fails" -eq 0 ] && echo "spec cli: ok"
[ "$fails" -eq 0 ]
