#!/bin/bash
# Trains halo's two small real models on the lent GPU machine (the `run` tool;
# tools/train/README.md): first a CPU smoke run of every step (about a minute),
# then the real run on the GPU with what is left of the call. Leaves in $OUT:
#   qwen3_small.tar, qwen4_exp_small.tar  one model folder each (a tar over
#                                         15 MiB is split into NAME.tar.00, .01)
#   loss_curves.png, summary.json         both models' curves and numbers
#   train.log, smoke.log                  the two runs' output
# Usage, from the repository root: bash tools/gpu/train.sh
# Environment: TRAIN_TOTAL_S   wall-clock target of the whole call (default 560)
#              TRAIN_BUDGET_S  --time-budget of the real run (default: what the
#                              smoke run left of TRAIN_TOTAL_S, at most 480)
#              TRAIN_SKIP_SMOKE=1  no smoke run
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
export PYTHONUNBUFFERED=1
start=$(date +%s)
total=${TRAIN_TOTAL_S:-560}
work=$(mktemp -d /tmp/halo-train.XXXXXX)

: >"$OUT/train.log"
if [ "${TRAIN_SKIP_SMOKE:-0}" != 1 ]; then
	CUDA_VISIBLE_DEVICES= timeout -k 5 150 python3 tools/train/train.py --smoke --device cpu \
		--work "$work/smoke" >"$OUT/smoke.log" 2>&1
	smoke_rc=$?
	tail -n 25 "$OUT/smoke.log"
	echo "smoke run: exit $smoke_rc after $(($(date +%s) - start)) s" | tee -a "$OUT/train.log"
fi

elapsed=$(($(date +%s) - start))
budget=${TRAIN_BUDGET_S:-$((total - elapsed - 25))}
[ "$budget" -gt 480 ] && budget=480
[ "$budget" -lt 60 ] && budget=60
echo "real run: --time-budget $budget" | tee -a "$OUT/train.log"
timeout -k 5 $((budget + 45)) python3 tools/train/train.py --time-budget "$budget" --work "$work/run" 2>&1 |
	tee -a "$OUT/train.log"
rc=${PIPESTATUS[0]}

# whatever was written comes back, even after a failure
for dir in "$work"/run/models/trained/*/; do
	[ -d "$dir" ] || continue
	name=$(basename "$dir")
	tar -C "$work/run/models/trained" -cf "$OUT/$name.tar" "$name"
	if [ "$(stat -c %s "$OUT/$name.tar")" -gt 15728640 ]; then
		split -b 15M -d -a 2 "$OUT/$name.tar" "$OUT/$name.tar."
		rm "$OUT/$name.tar"
	fi
done
for f in loss_curves.png summary.json; do
	[ -f "$work/run/$f" ] && cp "$work/run/$f" "$OUT/"
done
echo "exit $rc after $(($(date +%s) - start)) s" | tee -a "$OUT/train.log"
ls -l "$OUT" | tee -a "$OUT/train.log"
exit "$rc"
