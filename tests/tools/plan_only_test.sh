#!/bin/sh
# halo compile --plan-only: what a bundle would hold and a session allocate,
# without converting or writing anything. Its weight bytes per dtype and its
# section size equal those of the bundle the same flags compile (halo inspect
# --bundle); caches grow linearly with --ctx; -o is refused with it.
# usage: plan_only_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="plan only"
. "$(dirname "$0")/test_lib.sh"
k256=$root/tests/models/quant_k256/qwen3_next

expect 2 "--plan-only writes no bundle: drop -o" compile --hf "$k256" --random-weights 1 --plan-only -o "$work/x.halo"
expect 2 "-o OUT.halo is required" compile --hf "$k256" --random-weights 1

# the plan against the compiled bundle, q4_k (with its q8_0 fallbacks and f16 tables)
flags="--hf $k256 --random-weights 1 --dtype f16 --quant q4_k --targets ref --ctx 512"
expect 0 "weights  *q4_k " compile $flags --plan-only
cp "$out" "$work/plan"
ls "$work" | grep -q "halo" && fail "--plan-only wrote a file: $(ls "$work")"
expect 0 "." compile $flags -o "$work/q4.halo"
expect 0 "weights section" inspect --bundle "$work/q4.halo"
cp "$out" "$work/inspect"
section=$(sed -n 's/.*weights section \([0-9]*\) bytes.*/\1/p' "$work/inspect")
planned=$(awk '$1 == "weights" && $2 == "section" {print $3}' "$work/plan")
[ -n "$section" ] && [ "$section" = "$planned" ] ||
	fail "the plan's weights section ($planned bytes) is not the bundle's ($section bytes)"
n=0
for dtype in f16 q8_0 q4_k; do
	want=$(awk -v t="$dtype" '$1 == t && $3 == "weights" {print $6}' "$work/inspect")
	got=$(awk -v t="$dtype" '$1 == "weights" && $2 == t {print $3}' "$work/plan")
	[ -n "$want" ] && [ "$want" = "$got" ] || fail "$dtype: the plan says $got bytes, the bundle holds $want"
	n=$((n + 1))
done

# caches: twice the context, twice the bytes; the rest of the state unchanged
expect 0 "." compile --hf "$k256" --random-weights 1 --plan-only --ctx 128
cp "$out" "$work/plan2"
expect 0 "." compile --hf "$k256" --random-weights 1 --plan-only --ctx 256
c1=$(awk '$2 == "caches" {print $3}' "$work/plan2")
c2=$(awk '$2 == "caches" {print $3}' "$out")
r1=$(awk '$2 == "recurrent" {print $3}' "$work/plan2")
r2=$(awk '$2 == "recurrent" {print $3}' "$out")
[ "$c1" -gt 0 ] && [ "$c2" -eq $((2 * c1)) ] || fail "caches at 128 and 256 tokens: $c1 and $c2 bytes"
[ "$r1" -gt 0 ] && [ "$r1" = "$r2" ] || fail "recurrent state changed with --ctx: $r1 and $r2 bytes"

# a real checkpoint: its headers name the stored formats
expect 0 "weights  *f32 " compile --hf "$root/tests/fixtures/qwen3_tiny" --plan-only
finish
