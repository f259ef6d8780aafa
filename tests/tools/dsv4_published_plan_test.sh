#!/bin/sh
# DeepSeek V4-Flash at its published dims (tests/models/deepseek_v4_flash.config.json,
# built from models.md 3.1/3.2: 43 layers from the legacy compress_ratios,
# 256 experts top 6, the first three layers hash-routed, the MTP layer): the
# whole pass pipeline, schedule and memory plan for every entry, draft head
# included. The layer schedule must be transformers': layers 0-1 sliding,
# then CSA (even) and HCA (odd) alternating, layer 42 CSA; the 44th
# compress_ratios entry (the MTP layer's) is cut off.
# usage: dsv4_published_plan_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
set -eu
halo=$1
root=${HALO_SOURCE_ROOT:-.}
cfg=$root/tests/models/deepseek_v4_flash.config.json
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$halo" inspect "$root/models/deepseek_v4.yaml" --config "$cfg" --format schedule > "$out"
for entry in prefill prefill_last decode verify draft_extend draft_catchup draft; do
	grep -q "^# entry $entry:" "$out" || { echo "FAIL: no schedule for entry $entry" >&2; exit 1; }
done
blocks=$(grep -oE 'layers\.[0-9]+\.(attn_[a-z]+|ffn_[a-z]+)\.' "$out" | sort -u -t. -k2,2n -k3,3 |
	awk -F. '{printf "%s:%s ", $2, $3}')
want="0:attn_sliding 0:ffn_hash 1:attn_sliding 1:ffn_hash 2:attn_csa 2:ffn_hash 3:attn_hca 3:ffn_moe"
case "$blocks" in
"$want "*) ;;
*) echo "FAIL: layer blocks start '$blocks', expected '$want ...'" >&2; exit 1 ;;
esac
for l in 41:attn_hca 42:attn_csa 42:ffn_moe 43:attn_sliding 43:ffn_moe; do
	case " $blocks" in
	*" $l "*) ;;
	*) echo "FAIL: no $l among the layer blocks" >&2; exit 1 ;;
	esac
done
"$halo" inspect "$root/models/deepseek_v4.yaml" --config "$cfg" --format memory --entry decode > "$out"
grep "^weight_bytes:\|^state_bytes:\|^state_slot_bytes:\|^activation_live_peak_bytes:" "$out"
echo "deepseek_v4 published plan: ok"
