#!/bin/sh
# A config without layer_types (transformers derives them from
# full_attention_interval, default 4): each hybrid fixture's config with its
# layer_types replaced by the interval that yields the same list compiles to
# the bundle of the original byte for byte; without either key the default
# interval 4 applies (only the last of 3 or 4 layers could be attention, so
# the bundle of random weights differs); an interval of 0 is refused naming the model file.
# usage: layer_types_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="layer types"
. "$(dirname "$0")/test_lib.sh"

# fixture -> the interval its layer_types follow
for spec in qwen3_next_tiny:2 qwen3_5_moe_tiny:2 qwen4_exp_tiny:3; do
	fix=${spec%%:*} interval=${spec##*:}
	for form in listed interval default zero; do
		mkdir -p "$work/$fix.$form"
		cp "$root/tests/fixtures/$fix/model.safetensors" "$work/$fix.$form/"
		python3 - "$root/tests/fixtures/$fix/config.json" "$work/$fix.$form/config.json" "$form" "$interval" <<'PY'
import json, sys
src, dst, form, interval = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cfg = json.load(open(src))
text = cfg.get("text_config", cfg)
if form != "listed":
    del text["layer_types"]
    text.pop("full_attention_interval", None)
if form == "interval":
    text["full_attention_interval"] = interval
if form == "zero":
    text["full_attention_interval"] = 0
json.dump(cfg, open(dst, "w"), indent=1)
PY
	done
	"$halo" compile --hf "$work/$fix.listed" --targets ref -o "$work/$fix.listed.halo" 2>"$work/err" ||
		fail "$fix: $(cat "$work/err")"
	"$halo" compile --hf "$work/$fix.interval" --targets ref -o "$work/$fix.interval.halo" 2>"$work/err" ||
		fail "$fix without layer_types: $(cat "$work/err")"
	cmp -s "$work/$fix.listed.halo" "$work/$fix.interval.halo" ||
		fail "$fix: full_attention_interval $interval did not give the listed layer types"
	# the fixture's tensors fit only its own layer types: random weights here
	for form in listed default; do
		"$halo" compile --hf "$work/$fix.$form" --random-weights 1 --targets ref -o "$work/$fix.$form.r.halo" \
			2>"$work/err" || fail "$fix ($form, random weights): $(cat "$work/err")"
	done
	cmp -s "$work/$fix.listed.r.halo" "$work/$fix.default.r.halo" &&
		fail "$fix: the default interval 4 gave the listed types, so the test shows nothing"
	if "$halo" compile --hf "$work/$fix.zero" --targets ref -o "$work/$fix.zero.halo" 2>"$work/err" ||
		! grep -q "yaml:.*types_by_interval: the interval is 0" "$work/err"; then
		fail "$fix: interval 0 was not refused with the file and key: $(cat "$work/err")"
	fi
done

finish
