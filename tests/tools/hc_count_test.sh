#!/bin/sh
# Qwen3.8 Flash with other hyper-connection stream counts than the fixtures'
# 4, MTP head included (its mtp_in runs fc_hidden over hc_count*T rows in
# one matmul): the tiny config with hc_count 3 and 5 compiles with seeded
# random weights, the reference backend and Vulkan generate the same greedy
# tokens, and speculative decoding with the MTP head reproduces them.
# transformers is not run here (no device): the HF oracle tests cover 4.
# usage: hc_count_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="hc_count"
. "$(dirname "$0")/test_lib.sh"
prompt=1,5,9,13,2,7,30,4

for hc in 3 5; do
	mkdir -p "$work/hc$hc"
	python3 - "$root/tests/fixtures/qwen4_exp_tiny/config.json" "$work/hc$hc/config.json" "$hc" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
cfg.get("text_config", cfg)["hc_count"] = int(sys.argv[3])
json.dump(cfg, open(sys.argv[2], "w"), indent=1)
PY
	"$halo" compile --hf "$work/hc$hc" --random-weights 3 -o "$work/hc$hc.halo" 2>"$work/err" ||
		{ fail "hc_count $hc: compile: $(cat "$work/err")"; continue; }
	for mode in ref vulkan spec; do
		set -- --backend vulkan
		[ "$mode" = ref ] && set -- --backend ref
		[ "$mode" = spec ] && set -- --backend vulkan --spec mtp --draft-n 3
		"$halo" run "$work/hc$hc.halo" --tokens "$prompt" --n-predict 12 "$@" >"$work/$mode" 2>"$work/err" ||
			fail "hc_count $hc, $mode: $(cat "$work/err")"
	done
	[ -s "$work/ref" ] && cmp -s "$work/ref" "$work/vulkan" ||
		fail "hc_count $hc: Vulkan generated $(cat "$work/vulkan"), the reference $(cat "$work/ref")"
	cmp -s "$work/vulkan" "$work/spec" ||
		fail "hc_count $hc: MTP speculative decoding generated $(cat "$work/spec"), plain $(cat "$work/vulkan")"
done

finish
