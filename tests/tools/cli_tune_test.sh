#!/bin/sh
# `halo tune` and the tuning DB as users meet them, on whatever Vulkan device
# there is (lavapipe in CI): flag errors exit 2; a tune limited to its first
# round records the heuristic's tiles, and `halo run --tuning` with that DB
# gives bitwise the logits and tokens of a run without it while --profile
# says the tiles came from the DB; a full tune writes valid JSON whose
# winners give the same greedy tokens; tuning another entry merges into the
# file and keeps another GPU's records; a named DB that is broken, of another
# format or missing fails `halo run` and `halo tune` naming the file (and
# tune leaves it as it was); a broken default DB ($XDG_CACHE_HOME) only
# warns; the default DB is read by run and written by tune.
# usage: cli_tune_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="cli tune"
. "$(dirname "$0")/test_lib.sh"
fix=$root/tests/fixtures/qwen3_tiny
# Never the user's own default DB.
XDG_CACHE_HOME=$work/cache
export XDG_CACHE_HOME

# A strict JSON check where python3 exists; halo run --tuning below parses
# every DB with the runtime's own reader either way.
valid_json() {
	command -v python3 >/dev/null || return 0
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["format"] == 1 and d["records"]' "$1"
}
records() { grep -c '"key":' "$1"; }

bundle=$work/q.halo
"$halo" compile --hf "$fix" -o "$bundle" >/dev/null 2>"$err" || { echo "FAIL: compile: $(cat "$err")" >&2; exit 1; }
"$halo" compile --hf "$fix" --targets ref -o "$work/r.halo" >/dev/null 2>"$err" ||
	{ echo "FAIL: compile --targets ref: $(cat "$err")" >&2; exit 1; }
tokens=1,2,3,4,5

expect 0 "usage: halo tune" tune --help
expect 0 "tune .*record the winners" --help
expect 2 "no bundle given" tune
expect 2 "--reps wants 5..1000" tune "$bundle" --reps 3
expect 2 "--budget wants seconds > 0" tune "$bundle" --budget -1
expect 2 "unknown option '--fast'" tune "$bundle" --fast
expect 2 "exclude each other" run "$bundle" --tokens 1 --tuning "$work/x.json" --no-tuning
expect 1 "no entry point 'nosuch'" tune "$bundle" --db "$work/x.json" --entry nosuch
expect 1 "compiled without Vulkan kernels" tune "$work/r.halo" --db "$work/x.json"
[ -e "$work/x.json" ] && fail "a failed tune wrote $work/x.json"

# The first round only: every winner is the heuristic's own tile.
h=$work/h.json
expect 0 "budget of .* reached after 1 of" tune "$bundle" --db "$h" --entry decode --reps 5 --budget 0.001 --validate
grep -q "speed-up" "$out" || fail "no summary table on stdout: $(head -3 "$out")"
grep "x$" "$out" | grep -v " 1.00x$" && fail "a first-round tune recorded a tile other than the heuristic's"
[ -s "$h" ] && valid_json "$h" || fail "the budget-limited tune wrote no valid DB"
"$halo" run "$bundle" --tokens $tokens --n-predict 8 --no-tuning --logits-out "$work/l0" >"$work/t0" 2>"$err" ||
	fail "plain run: $(cat "$err")"
expect 0 "tuned     matvec" run "$bundle" --tokens $tokens --n-predict 8 --tuning "$h" --validate --profile \
	--logits-out "$work/l1"
cmp -s "$work/l0" "$work/l1" || fail "the heuristic's tiles from the DB changed the prompt logits"
[ "$(cat "$out")" = "$(cat "$work/t0")" ] || fail "the heuristic's tiles from the DB changed the tokens"
expect 0 "heuristic matvec" run "$bundle" --tokens $tokens --n-predict 2 --no-tuning --profile
grep -q "tuned " "$err" && fail "--no-tuning still picked tiles from a DB"

# A full tune of decode, then prefill merged into the same file.
t=$work/t.json
expect 0 "round 1/.*, choice 1/" tune "$bundle" --db "$t" --entry decode --reps 5 --validate
grep -q "wrote .* records for" "$err" || fail "tune did not say where it wrote: $(tail -2 "$err")"
valid_json "$t" || fail "tune wrote invalid JSON: $(head -c 300 "$t")"
n_decode=$(records "$t")
[ "$n_decode" -gt 0 ] || fail "no records in $t"
expect 0 "" run "$bundle" --tokens $tokens --n-predict 8 --tuning "$t" --validate
[ "$(cat "$out")" = "$(cat "$work/t0")" ] || fail "tuned tiles gave other greedy tokens: $(cat "$out") vs $(cat "$work/t0")"
# Another GPU's record in the file survives the next tune's merge.
other='{"vendor":4098,"device":5510,"driver":8388919,"device_name":"AMD Radeon 8060S","key":"matvec K=64 N=64 w=f32 tmax=8","tile":"ls64","ns":1.0,"heuristic_ns":2.0},'
sed "s/\"records\":\[/\"records\":[$other/" "$t" >"$t.new" && mv "$t.new" "$t"
expect 0 "wrote" tune "$bundle" --db "$t" --entry prefill --reps 5
valid_json "$t" || fail "the merged DB is invalid JSON"
[ "$(records "$t")" -gt $((n_decode + 1)) ] || fail "merging prefill's records lost some ($(records "$t") after $n_decode + 1)"
grep -q '"device_name":"AMD Radeon 8060S"' "$t" || fail "the other GPU's record was dropped by the merge"
expect 0 "" run "$bundle" --tokens $tokens --n-predict 8 --tuning "$t"

# Named DBs that cannot be used fail, naming the file.
printf '{"format":1,"records":[{"vendor":' >"$work/bad.json"
expect 1 "tuning DB $work/bad.json: file: truncated" run "$bundle" --tokens 1 --tuning "$work/bad.json"
expect 1 "tuning DB $work/bad.json" run "$bundle" --tokens 1 --backend ref --tuning "$work/bad.json"
cp "$work/bad.json" "$work/bad.keep"
expect 1 "tuning DB $work/bad.json: file: truncated" tune "$bundle" --db "$work/bad.json" --entry decode
cmp -s "$work/bad.json" "$work/bad.keep" || fail "tune rewrote a DB it could not read"
printf '{"format":9,"records":[]}' >"$work/v9.json"
expect 1 "v9.json: format: format 9, this reader reads format 1" run "$bundle" --tokens 1 --tuning "$work/v9.json"
expect 1 "tuning DB $work/none.json: cannot read" run "$bundle" --tokens 1 --tuning "$work/none.json"

# A DB shipped for another GPU merges in (tune --merge); a broken one is refused.
printf '{"format":1,"records":[%s]}' "$(printf '%s' "$other" | sed 's/,$//; s/"ns":1.0/"ns":0.5/')" >"$work/ship.json"
cp "$t" "$work/t.keep"
expect 0 "merged 1 records of $work/ship.json" tune --merge "$work/ship.json" --db "$t"
[ "$(records "$t")" -eq "$(records "$work/t.keep")" ] || fail "merging a record of the same key added one"
grep -q '"ns":0.5' "$t" || fail "the shipped record did not replace the file's own"
expect 2 "--merge takes only --db" tune "$bundle" --merge "$work/ship.json"
expect 1 "tuning DB $work/bad.json" tune --merge "$work/bad.json" --db "$t"

# The default DB: broken only warns; a good one is read; tune writes it.
mkdir -p "$XDG_CACHE_HOME/halo"
printf 'not json' >"$XDG_CACHE_HOME/halo/tuning.json"
expect 0 "warning: ignoring the default tuning DB: tuning DB $XDG_CACHE_HOME/halo/tuning.json" \
	run "$bundle" --tokens $tokens --n-predict 8
[ "$(cat "$out")" = "$(cat "$work/t0")" ] || fail "a broken default DB changed the tokens"
cp "$t" "$XDG_CACHE_HOME/halo/tuning.json"
expect 0 "tuned     matvec" run "$bundle" --tokens $tokens --n-predict 2 --profile
XDG_CACHE_HOME=$work/fresh/cache
expect 0 "wrote" tune "$bundle" --entry decode --reps 5 --budget 0.001
[ -s "$XDG_CACHE_HOME/halo/tuning.json" ] && valid_json "$XDG_CACHE_HOME/halo/tuning.json" ||
	fail "tune without --db did not write $XDG_CACHE_HOME/halo/tuning.json"
ls "$work" "$XDG_CACHE_HOME/halo" | grep -q '\.tmp\.' && fail "a temporary DB file was left behind"

finish
