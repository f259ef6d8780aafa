#!/bin/sh
# Weights that take rows of a grouped checkpoint tensor (`rows:`, docs/ir.md):
# Qwen3-Next's GDN projections read in_proj_qkvz and in_proj_ba as groups of
# key heads. A checkpoint whose in_proj_qkvz of layer 0 lost its last row
# (its key heads' rows no longer split into equal groups), and one whose
# in_proj_ba lost a whole key head's rows (equal groups, each too short for
# the ranges), are refused naming the weight, the tensor and its rows, with
# no bundle written. (That the gathered rows are the right ones is the
# transformers oracle's part: tests/runtime/test_gdn_oracle.c.)
# usage: checkpoint_rows_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="checkpoint rows"
. "$(dirname "$0")/test_lib.sh"

# shorten DST_DIR TENSOR ROWS: the Qwen3-Next fixture with TENSOR's last ROWS rows cut
shorten() {
	python3 - "$root/tests/fixtures/qwen3_next_tiny" "$1" "$2" "$3" <<'PY'
import json, os, shutil, struct, sys
src, dst, cut, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
size = {"F32": 4, "F16": 2, "BF16": 2}
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
hdr, out = {}, b""
for name, t in sorted(header.items()):
    if name == "__metadata__":
        continue
    a, b = t["data_offsets"]
    shape, body = list(t["shape"]), data[a:b]
    if name == cut:
        shape[0] -= rows
        body = body[:len(body) - rows * shape[1] * size[t["dtype"]]]
    hdr[name] = {"dtype": t["dtype"], "shape": shape, "data_offsets": [len(out), len(out) + len(body)]}
    out += body
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
os.makedirs(dst)
shutil.copy(os.path.join(src, "config.json"), dst)
open(os.path.join(dst, "model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + out)
PY
}

hk=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['linear_num_key_heads'])" \
	"$root/tests/fixtures/qwen3_next_tiny/config.json")
r=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1])); print(c['linear_num_value_heads'] // c['linear_num_key_heads'])" \
	"$root/tests/fixtures/qwen3_next_tiny/config.json")
shorten "$work/qkvz" model.layers.0.linear_attn.in_proj_qkvz.weight 1
shorten "$work/ba" model.layers.0.linear_attn.in_proj_ba.weight $((2 * r))
expect 1 "weight 'layers.0.gdn.w_qkv': tensor 'model.layers.0.linear_attn.in_proj_qkvz.weight' has [0-9]* rows, not $hk equal groups" \
	compile --hf "$work/qkvz" --targets ref -o "$work/qkvz.halo"
[ -e "$work/qkvz.halo" ] && fail "a bundle was written for the short in_proj_qkvz"
expect 1 "weight 'layers.0.gdn.w_[ab]': tensor 'model.layers.0.linear_attn.in_proj_ba.weight' has $((2 * r * (hk - 1))) rows" \
	compile --hf "$work/ba" --targets ref -o "$work/ba.halo"
[ -e "$work/ba.halo" ] && fail "a bundle was written for the short in_proj_ba"
finish
