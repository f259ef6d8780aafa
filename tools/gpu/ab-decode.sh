#!/bin/sh
# On the GPU machine: decode speed (halo bench's tg) of two builds of halo on
# the same card in one call, alternated new, old, new, each compiling its own
# bundle (their plans may differ) from the same seeded random weights of
# HF_DIR (a config.json: tools/gpu/bench/*). Pack the older build as halo_old
# beside the new one (tools/gpu/ab-bench.sh says how). tg TG from an empty
# context and from DEPTH tokens (bench -d: attention over a long cache; 0:
# none).
# HALO_COMPILE_FLAGS: more `halo compile` flags (--quant q4_k --act-quant q8).
# OLD_MODEL: the model file the old build compiles (--model), where the
# working tree's uses ops it does not know (git show REV:models/NAME.yaml).
# OLD_BIN (default halo_old) and OLD_FLAGS: the "old" side as another
# binary or as this one with more compile flags (OLD_BIN=halo
# OLD_FLAGS=--no-rope-fusion: a fusion's A/B in one build).
# Prints each build's table; writes $OUT/<run>.md.
# usage: tools/gpu/ab-decode.sh HF_DIR [TG] [DEPTH] [CTX]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
hf=$1
tg=${2:-128}
depth=${3:-4096}
ctx=${4:-8192}
old_bin=${OLD_BIN:-halo_old}
[ -x "$HALO_BIN/$old_bin" ] || { echo "ab-decode: no $HALO_BIN/$old_bin packed" >&2; exit 1; }
run() { # NAME BINARY [halo compile flags...]
	name=$1 bin=$2
	shift 2
	bundle=/tmp/ab-decode.halo
	rm -f "$bundle"
	# shellcheck disable=SC2086 # flags split on purpose
	"$HALO_BIN/$bin" compile --hf "$hf" --random-weights 1 --dtype f16 --ctx "$ctx" ${HALO_COMPILE_FLAGS:-} "$@" \
		-o "$bundle" > "$out/$name.compile.txt" 2>&1 || { tail -n 3 "$out/$name.compile.txt"; return 1; }
	echo "== $name ($bin, $hf ${HALO_COMPILE_FLAGS:-} $*)"
	"$HALO_BIN/$bin" bench "$bundle" -p 0 -n "$tg" -r 3 | tee "$out/$name.md"
	[ "$depth" -eq 0 ] || "$HALO_BIN/$bin" bench "$bundle" -p 0 -n "$tg" -d "$depth" -r 3 | grep "^|.*tg" |
		tee -a "$out/$name.md"
}
rc=0
run new1 halo || rc=1
# shellcheck disable=SC2086 # empty without OLD_MODEL, OLD_FLAGS split on purpose
run old "$old_bin" ${OLD_MODEL:+--model "$OLD_MODEL"} ${OLD_FLAGS:-} || rc=1
run new2 halo || rc=1
exit $rc
