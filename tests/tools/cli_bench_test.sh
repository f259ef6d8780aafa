#!/bin/sh
# `halo bench` as a user calls it: help, flag errors with exit 2 (flags that
# mean nothing to fixed-token timing are refused, not ignored), a test longer
# than the context refused naming the bundle, and the output contract: a
# markdown row per test (ppN, tgN; "@ dD" from a context holding D tokens)
# with mean ± sd, or JSON that parses with one sample per repetition. Timings themselves are not checked (ref backend).
# usage: cli_bench_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="cli bench"
. "$(dirname "$0")/test_lib.sh"
bundle=$work/q.halo

expect 0 "usage: halo bench" bench --help
expect 0 "wrote" compile --hf "$root/tests/fixtures/qwen3_tiny" -o "$bundle"
expect 2 "no bundle given" bench
expect 2 "-p wants a whole number" bench "$bundle" -p x
expect 2 "-r wants a whole number in \[1, 1000\]" bench "$bundle" -r 0
expect 2 "--output wants md or json" bench "$bundle" -o csv
expect 2 "leave nothing to time" bench "$bundle" -p 0 -n 0
expect 2 "unknown option '--temp'" bench "$bundle" --temp 1
expect 2 "--backend: unknown backend 'metal' (known: ref, vulkan, cuda, hip)" bench "$bundle" --backend metal
expect 1 "does not fit the bundle's context of 512" bench "$bundle" --backend ref -p 4096
expect 2 "-d wants a whole number" bench "$bundle" -d -1
expect 1 "a test of 40 tokens at depth 500 does not fit the bundle's context of 512" bench "$bundle" \
	--backend ref -p 0 -n 40 -d 500
expect 1 "no such file\|cannot open\|No such file" bench "$work/missing.halo" --backend ref

expect 0 "| pp8 |" bench "$bundle" --backend ref -p 8 -n 4 -r 2
grep -q "^| .*q.halo | ref | tg4 | [0-9.]* ± [0-9.]* |$" "$out" || fail "no tg4 row: $(cat "$out")"
expect 0 "tg4" bench "$bundle" --backend ref -p 0 -n 4 -r 3 -o json
grep -q pp "$out" && fail "-p 0 still ran a pp test: $(cat "$out")"
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 1 and rows[0]["test"] == "tg4" and rows[0]["n"] == 4, rows
assert len(rows[0]["samples_ts"]) == 3 and rows[0]["avg_ts"] > 0, rows
' "$out" || fail "the JSON output is not one tg4 row of 3 samples: $(cat "$out")"
expect 0 "tg4 @ d100" bench "$bundle" --backend ref -p 8 -n 4 -d 100 -r 2 -o json
python3 -c '
import json, sys
rows = json.load(open(sys.argv[1]))
assert [r["test"] for r in rows] == ["pp8 @ d100", "tg4 @ d100"], rows
assert all(r["n_depth"] == 100 for r in rows), rows
' "$out" || fail "the JSON output is not pp8 and tg4 at depth 100: $(cat "$out")"
finish
