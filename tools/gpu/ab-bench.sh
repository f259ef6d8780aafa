#!/bin/sh
# On the GPU machine: tools/gpu/bench.sh's table for two builds of halo on the
# same card in one call, alternated new, old, new (a change's effect beside
# the card's own drift). Pack the older build beside the new one first:
# after tools/gpu/pack.sh here, add its stripped halo as halo_old to
# .devrun/bin.tar.xz's halo-bin/ (bench/results-*.txt name the builds).
# Writes $OUT/new1, $OUT/old, $OUT/new2 (each bench.sh's files).
# usage: tools/gpu/ab-bench.sh [TG] [PP] [LAYERS]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
bin=$HALO_BIN
[ -x "$bin/halo_old" ] || { echo "ab-bench: no $bin/halo_old packed" >&2; exit 1; }
tg=${1:-128}
pp=${2:-512}
layers=${3:-36}
cp "$bin/halo" "$bin/halo_new"
run() { # NAME BINARY
	cp "$bin/$2" "$bin/halo"
	echo "== $1 ($2)"
	OUT="$out/$1" sh tools/gpu/bench.sh "$tg" "$pp" "$layers" 0 | grep "^|"
}
rc=0
run new1 halo_new || rc=1
run old halo_old || rc=1
run new2 halo_new || rc=1
cp "$bin/halo_new" "$bin/halo"
exit $rc
