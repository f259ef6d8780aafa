#!/bin/sh
# halo compile --random-weights SEED --random-period N: each tensor's values
# repeat every N, so the bundle compresses (benchmark bundles carried to the
# GPU machine, tools/gpu/pack.sh PACK_SPEED). A period past every tensor's
# size gives the bundle of no period byte for byte; a short one compresses
# the weights away (gzip to under a quarter of the unperiodic bundle's
# compressed size); bad values and a period without random weights are
# refused.
# usage: random_period_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="random period"
. "$(dirname "$0")/test_lib.sh"

hf="--hf $root/tests/fixtures/qwen3_tiny --targets ref --dtype f16"
# shellcheck disable=SC2086 # hf holds several flags
"$halo" compile $hf --random-weights 5 -o "$work/plain.halo" 2>"$err" || fail "plain: $(cat "$err")"
# shellcheck disable=SC2086
"$halo" compile $hf --random-weights 5 --random-period 1000000000 -o "$work/long.halo" 2>"$err" ||
	fail "long period: $(cat "$err")"
cmp -s "$work/plain.halo" "$work/long.halo" || fail "a period past every tensor changed the bundle"
# shellcheck disable=SC2086
"$halo" compile $hf --random-weights 5 --random-period 64 -o "$work/short.halo" 2>"$err" ||
	fail "short period: $(cat "$err")"
plain=$(gzip -9 -c "$work/plain.halo" | wc -c)
short=$(gzip -9 -c "$work/short.halo" | wc -c)
[ $((short * 4)) -lt "$plain" ] || fail "period 64 compressed to $short bytes, no period to $plain"

expect 2 "even count of values" compile $hf --random-weights 5 --random-period 3 -o "$work/bad.halo"
expect 2 "even count of values" compile $hf --random-weights 5 --random-period 0 -o "$work/bad.halo"
expect 2 "applies to --random-weights only" compile $hf --random-period 64 -o "$work/bad.halo"
[ ! -e "$work/bad.halo" ] || fail "a refused compile left $work/bad.halo"
finish
