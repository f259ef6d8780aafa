#!/bin/sh
# Qwen3.8 Flash (qwen4_exp) at its published dims (tests/models/
# qwen4_exp_published.config.json: 48 layers, 36 GDN + 12 QSA, 512 experts
# top 10, the 20M-row n-gram base, the MTP head): the whole pass pipeline,
# schedule and memory plan for every entry, draft head included. The weights
# themselves (359 GB in f16) fit neither this machine nor the lent GPU; the
# benchmark compiles the same config cut to 4 layers (tools/gpu/bench).
# usage: published_plan_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
set -eu
halo=$1
root=${HALO_SOURCE_ROOT:-.}
cfg=$root/tests/models/qwen4_exp_published.config.json
out=$(mktemp)
ckpt=$(mktemp -d)
trap 'rm -rf "$out" "$ckpt"' EXIT
"$halo" inspect "$root/models/qwen4_exp.yaml" --config "$cfg" --format schedule > "$out"
for entry in prefill decode verify draft_extend draft_catchup draft; do
	grep -q "^# entry $entry:" "$out" || { echo "FAIL: no schedule for entry $entry" >&2; exit 1; }
done
grep -q "state_write mtp_hidden_export" "$out" || { echo "FAIL: the target does not export its hidden rows" >&2; exit 1; }
"$halo" inspect "$root/models/qwen4_exp.yaml" --config "$cfg" --format memory --entry decode > "$out"
grep "^weight_bytes:\|^state_bytes:\|^state_slot_bytes:\|^activation_live_peak_bytes:" "$out"
# what the published model takes in q4_k at a 32k context (the weights at
# their dims, nothing converted): docs/quantization.md quotes it
cp "$cfg" "$ckpt/config.json"
"$halo" compile --hf "$ckpt" --random-weights 1 --plan-only --dtype f16 --quant q4_k --ctx 32768 > "$out"
grep -q "^  weights  *q4_k " "$out" || { echo "FAIL: no q4_k weights in the plan" >&2; exit 1; }
# issue 14's bar: the 4-bit model and a 32k context in a 128 GB machine
# (102.2 GiB when this was written: docs/quantization.md)
total=$(sed -n 's/^  total  *\([0-9]*\) .*/\1/p' "$out")
[ -n "$total" ] && [ "$total" -lt 128000000000 ] ||
	{ echo "FAIL: the q4_k plan at 32k takes ${total:-?} bytes, not below 128 GB" >&2; exit 1; }
grep -v "^# [0-9]* weights stored q8_0" "$out"
echo "published plan: ok"
