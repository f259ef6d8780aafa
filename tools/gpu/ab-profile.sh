#!/bin/sh
# On the GPU machine: where a decode step's time goes in two builds of halo
# (halo and halo_old, packed beside each other: tools/gpu/ab-decode.sh says
# how) on the same card in one call: each compiles the seeded random weights
# of HF_DIR (a config.json: tools/gpu/bench/*) with its own plan, runs a
# warm-up (the card's first process runs its kernels up to 2.5x slower,
# bench/results-h100-qwen3_8b.txt), then `halo run --profile` over a
# PROMPT-token prompt (default 16; 4096: attention and QSA's selection over
# a long cache) and TG generated tokens (a timestamp after every dispatch:
# compare the two builds' figures, not a figure with a kernel's own time) and
# `halo bench` tg TG from an empty context. One bundle on disk at a time
# (the Qwen3.8 Flash cut's is 29.6 GB).
# HALO_COMPILE_FLAGS: more `halo compile` flags.
# Writes $OUT/<build>.profile.txt and $OUT/<build>.bench.md.
# usage: tools/gpu/ab-profile.sh HF_DIR [TG] [PROMPT]
set -eu
hf=$1 tg=${2:-64} plen=${3:-16} out=${OUT:-/tmp}
ctx=$(( (plen + tg + 2047) / 2048 * 2048 ))
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
mkdir -p "$out"
[ -x "$HALO_BIN/halo_old" ] || { echo "ab-profile: no $HALO_BIN/halo_old packed" >&2; exit 1; }
bundle=/tmp/ab-profile.halo
prompt=$(seq -s, 1 "$plen" | awk -F, -v OFS=, '{ for (i = 1; i <= NF; i++) $i = 1 + ($i - 1) % 1000; print }')
rc=0
for build in new:halo old:halo_old; do
	name=${build%%:*} bin=$HALO_BIN/${build#*:}
	rm -f "$bundle"
	# shellcheck disable=SC2086 # flags split on purpose
	if ! "$bin" compile --hf "$hf" --random-weights 1 --dtype f16 --ctx "$ctx" ${HALO_COMPILE_FLAGS:-} -o "$bundle" \
		> "$out/$name.compile.txt" 2>&1; then
		tail -n 3 "$out/$name.compile.txt"
		rc=1
		continue
	fi
	"$bin" run "$bundle" --no-tuning --tokens "$prompt" --n-predict 16 > /dev/null 2>&1
	echo "== $name ($bin)"
	"$bin" run "$bundle" --no-tuning --tokens "$prompt" --n-predict "$tg" --profile 2>&1 > /dev/null |
		sed -n '/^halo run: prompt/,$p' | tee "$out/$name.profile.txt"
	"$bin" bench "$bundle" -p 0 -n "$tg" -r 3 | tee "$out/$name.bench.md"
done
rm -f "$bundle"
exit $rc
