#!/bin/sh
# DeepSeek V4 configs in the forms checkpoints ship (transformers folds the
# legacy keys in at load time): each fixture's config with layer_types
# replaced by the legacy compress_ratios (one entry longer than the layers,
# as V4-Flash lists its MTP layer), mlp_layer_types by num_hash_layers, the
# nested rope_parameters by the legacy rope_scaling, partial_rotary_factor
# by qk_rope_head_dim and compress_rates by compress_rate_csa/_hca compiles
# to the original bundle byte for byte. Without layer_types, compress_ratios
# and mlp_layer_types, transformers' defaults (two HCA layers, then HCA and
# CSA alternating; three hash layers) compile and run; a compress_ratios
# code transformers does not know is refused naming the file and the code.
# usage: dsv4_config_forms_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="deepseek_v4 config forms"
. "$(dirname "$0")/test_lib.sh"

for fix in deepseek_v4_tiny deepseek_v4_b; do
	for form in listed legacy default badcode; do
		mkdir -p "$work/$fix.$form"
		cp "$root/tests/fixtures/$fix/model.safetensors" "$work/$fix.$form/"
		python3 - "$root/tests/fixtures/$fix/config.json" "$work/$fix.$form/config.json" "$form" <<'PY'
import json, sys
src, dst, form = sys.argv[1:4]
c = json.load(open(src))
codes = {"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}
if form in ("legacy", "badcode"):
    # the legacy codes name the types, whatever the rates: 4 is CSA, 128 HCA
    c["compress_ratios"] = [codes[t] for t in c.pop("layer_types")] + [0]
    if form == "badcode":
        c["compress_ratios"][0] = 7
    mlp = c.pop("mlp_layer_types")
    c["num_hash_layers"] = mlp.count("hash_moe")
    assert mlp == ["hash_moe"] * mlp.count("hash_moe") + ["moe"] * (len(mlp) - mlp.count("hash_moe"))
    comp = c.pop("rope_parameters")["compress"]
    c["rope_scaling"] = {"type": "yarn", "factor": comp["factor"],
                         "original_max_position_embeddings": comp["original_max_position_embeddings"],
                         "beta_fast": comp["beta_fast"], "beta_slow": comp["beta_slow"]}
    c["qk_rope_head_dim"] = int(c["head_dim"] * c.pop("partial_rotary_factor"))
    rates = c.pop("compress_rates")
    c["compress_rate_csa"] = rates["compressed_sparse_attention"]
    c["compress_rate_hca"] = rates["heavily_compressed_attention"]
if form == "default":
    for k in ("layer_types", "mlp_layer_types"):
        c.pop(k)
json.dump(c, open(dst, "w"), indent=1)
PY
	done
	for form in listed legacy; do
		"$halo" compile --hf "$work/$fix.$form" --targets ref -o "$work/$fix.$form.halo" 2>"$work/err" ||
			fail "$fix ($form): $(cat "$work/err")"
	done
	cmp -s "$work/$fix.listed.halo" "$work/$fix.legacy.halo" ||
		fail "$fix: the legacy config keys did not give the listed config's bundle"
	# the fixture's tensors fit only its own layer types: random weights here
	"$halo" compile --hf "$work/$fix.default" --random-weights 1 --targets ref -o "$work/$fix.default.halo" \
		2>"$work/err" || fail "$fix (transformers' default layer types): $(cat "$work/err")"
	"$halo" run "$work/$fix.default.halo" --backend ref --tokens 5,6,7,8,9,10,11,12,13,14,15,16,17,18 \
		--n-predict 8 >"$work/out" 2>"$work/err" || fail "$fix (default layer types) does not run: $(cat "$work/err")"
	if "$halo" compile --hf "$work/$fix.badcode" --targets ref -o "$work/$fix.badcode.halo" 2>"$work/err" ||
		! grep -q "yaml:.*no layer type for code 7 (layer 0, .*config.json key 'compress_ratios')" "$work/err"; then
		fail "$fix: compress_ratios code 7 was not refused with the file and key: $(cat "$work/err")"
	fi
done

finish
