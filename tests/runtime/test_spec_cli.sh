#!/bin/sh
# `halo run --spec` as users call it: flag errors exit 2; --spec mtp on a
# bundle without the MTP head's 'draft' entry, or with more drafts than its
# verify entry takes (halo compile --draft-max), is refused before anything runs
# (exit 1, naming the bundle and the missing entry, nothing on stdout);
# --spec none is plain decoding. With the Qwen3-Next fixture's MTP head,
# --spec mtp prints plain greedy decoding's tokens and the spec: stats; the
# converter's --no-mtp leaves the head out, and --mtp-from attaches a drafter
# sidecar: one that fits gives the bytes of the bundle with the head built
# in, one whose config differs is refused naming the key and both values.
# --draft-vocab narrows the head (a bundle of the target's own tokens) and
# is refused past the vocabulary or on a model without a head.
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
expect 2 "--draft-n and --draft-fixed need --spec mtp" run "$bundle" --backend ref --tokens 1,2 --draft-n 2
expect 2 "--draft-n and --draft-fixed need --spec mtp" run "$bundle" --backend ref --tokens 1,2 --draft-fixed
expect 2 "--draft-n wants 1..7" run "$bundle" --backend ref --tokens 1,2 --spec mtp --draft-n 8
expect 2 "--draft-n wants 1..7" run "$bundle" --backend ref --tokens 1,2 --spec mtp --draft-n 0
expect 2 "--draft-max wants 1..7" compile --hf "$root/tests/fixtures/qwen3_tiny" -o "$work/x.halo" --draft-max 8
expect 2 "--draft-max wants 1..7" compile --hf "$root/tests/fixtures/qwen3_tiny" -o "$work/x.halo" --draft-max 0
expect 2 "--draft-vocab wants a positive token count, not '0'" compile --hf "$root/tests/fixtures/qwen3_tiny" \
	-o "$work/x.halo" --draft-vocab 0
# a model file without a draft head declares no draft_vocab to narrow
expect 1 "a draft vocabulary was asked for, but the model file declares no param 'draft_vocab'" \
	compile --hf "$root/tests/fixtures/qwen3_tiny" --targets ref -o "$work/x.halo" --draft-vocab 100
expect 1 "--spec mtp refused: $bundle: no 'draft' entry point" run "$bundle" --backend ref --tokens 1,2 --spec mtp
[ -s "$out" ] && { echo "FAIL: a refused --spec mtp run printed tokens: $(cat "$out")" >&2; fails=$((fails + 1)); }
expect 1 "none.halo: cannot open" run "$work/none.halo" --backend ref --tokens 1,2 --spec mtp
plain=$("$halo" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 12 2>/dev/null)
none=$("$halo" run "$bundle" --backend ref --tokens 1,2,3 --n-predict 12 --spec none 2>/dev/null)
[ -n "$plain" ] && [ "$plain" = "$none" ] ||
	{ echo "FAIL: --spec none gave '$none', plain decoding '$plain'" >&2; fails=$((fails + 1)); }
# the MTP head
next=$root/tests/fixtures/qwen3_next_tiny nb=$work/next.halo
"$halo" compile --hf "$next" --targets ref -o "$nb" >/dev/null 2>"$err" ||
	{ echo "FAIL: compile qwen3_next: $(cat "$err")" >&2; exit 1; }
plain=$("$halo" run "$nb" --backend ref --tokens 5,6,7,8 --n-predict 24 2>/dev/null)
same_as_plain() { # WHAT
	[ -n "$plain" ] && [ "$plain" = "$(cat "$out")" ] ||
		{ echo "FAIL: $1 gave '$(cat "$out")', plain decoding '$plain'" >&2; fails=$((fails + 1)); }
}
expect 0 "spec: .* rounds, K <= 3" run "$nb" --backend ref --tokens 5,6,7,8 --n-predict 24 --spec mtp --draft-n 3
same_as_plain "--spec mtp --draft-n 3"
expect 0 "spec: time: draft .* verify .* accept" run "$nb" --backend ref --tokens 5,6,7,8 --n-predict 24 \
	--spec mtp --draft-n 4 --draft-fixed
same_as_plain "--spec mtp --draft-n 4 --draft-fixed"
# the default --draft-max 4 verifies 5 tokens; more drafts need a bundle compiled for them
expect 1 "its 'verify' entry takes at most 5 tokens; 5 drafts need 6" \
	run "$nb" --backend ref --tokens 1,2 --spec mtp --draft-n 5
expect 0 "per-token state slots" compile --hf "$next" --targets ref --draft-max 6 -o "$work/k6.halo"
expect 0 "spec: .* rounds, K <= 6" run "$work/k6.halo" --backend ref --tokens 5,6,7,8 --n-predict 24 \
	--spec mtp --draft-n 6 --draft-fixed
same_as_plain "--spec mtp --draft-n 6 on a --draft-max 6 bundle"
# a narrowed head drafts from the first ids alone: the tokens stay plain greedy's
expect 1 "qwen3_next.yaml:.*a draft vocabulary of 100000 tokens was asked for; the vocabulary has" \
	compile --hf "$next" --targets ref --draft-vocab 100000 -o "$work/dv.halo"
[ -e "$work/dv.halo" ] && { echo "FAIL: a refused compile left $work/dv.halo" >&2; fails=$((fails + 1)); }
expect 0 "wrote" compile --hf "$next" --targets ref --draft-vocab 96 -o "$work/dv.halo"
expect 0 "spec: .* rounds, K <= 3" run "$work/dv.halo" --backend ref --tokens 5,6,7,8 --n-predict 24 \
	--spec mtp --draft-n 3
same_as_plain "--spec mtp --draft-n 3 on a --draft-vocab 96 bundle"
expect 0 "wrote" compile --hf "$next" --targets ref --no-mtp -o "$work/nomtp.halo"
expect 1 "--spec mtp refused: $work/nomtp.halo: no 'draft' entry point" \
	run "$work/nomtp.halo" --backend ref --tokens 1,2 --spec mtp
expect 2 "exclude each other" compile --hf "$next" --no-mtp --mtp-from "$next" -o "$work/x.halo"
# a sidecar that fits: the fixture's own mtp.* tensors
expect 0 "wrote" compile --hf "$next" --targets ref --mtp-from "$next" -o "$work/side.halo"
cmp -s "$nb" "$work/side.halo" ||
	{ echo "FAIL: a fitting sidecar gave other bytes than the built-in head" >&2; fails=$((fails + 1)); }
# a sidecar whose config does not fit
mkdir -p "$work/bad"
sed 's/"hidden_size": 64/"hidden_size": 48/' "$next/config.json" > "$work/bad/config.json"
expect 1 "does not fit target .*hidden_size 64 (target) vs 48 (drafter)" \
	compile --hf "$next" --mtp-from "$work/bad" -o "$work/bad.halo"
[ -e "$work/bad.halo" ] && { echo "FAIL: a refused compile left $work/bad.halo" >&2; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] && echo "spec cli: ok"
[ "$fails" -eq 0 ]
