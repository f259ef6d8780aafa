#!/bin/sh
# Checkpoint name layouts (the model files' hf_prefixes): the Qwen3.5-MoE
# fixture is a vision-language checkpoint (model.language_model.*, plus a
# vision tower under model.visual.*); saved the way a text-only checkpoint
# names its tensors (model.*, no tower) it compiles to the same bundle byte
# for byte. The Qwen3.8 Flash fixture goes the other way (model.* moved under
# model.language_model.*). The compile log notes the tower's tensors as not
# used by the graph instead of failing.
# usage: checkpoint_layout_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="checkpoint layout"
. "$(dirname "$0")/test_lib.sh"

# relayout SRC_FIXTURE DST_DIR FROM TO [DROP]: tensor names starting with FROM
# start with TO instead; names starting with DROP are left out.
relayout() {
	python3 - "$root/tests/fixtures/$1" "$2" "$3" "$4" "${5:-}" <<'PY'
import json, os, shutil, struct, sys
src, dst, old, new, drop = sys.argv[1:6]
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
hdr, out = {}, b""
for name, t in sorted(header.items()):
    if name == "__metadata__" or (drop and name.startswith(drop)):
        continue
    a, b = t["data_offsets"]
    renamed = new + name[len(old):] if name.startswith(old) else name
    hdr[renamed] = {"dtype": t["dtype"], "shape": t["shape"], "data_offsets": [len(out), len(out) + b - a]}
    out += data[a:b]
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
os.makedirs(dst)
shutil.copy(os.path.join(src, "config.json"), dst)
open(os.path.join(dst, "model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + out)
PY
}

relayout qwen3_5_moe_tiny "$work/q35_text" model.language_model. model. model.visual.
relayout qwen4_exp_tiny "$work/q38_vl" model. model.language_model.
for c in q35:qwen3_5_moe_tiny q35_text:q35_text q38:qwen4_exp_tiny q38_vl:q38_vl; do
	name=${c%%:*} dir=$work/${c##*:}
	[ -d "$dir" ] || dir=$root/tests/fixtures/${c##*:}
	"$halo" compile --hf "$dir" --targets ref -o "$work/$name.halo" 2>"$work/$name.log" ||
		fail "compile $name: $(cat "$work/$name.log")"
done
grep -q "note: 21 checkpoint tensors not used by the graph: model.visual.\* 21" "$work/q35.log" ||
	fail "the vision tower was not noted as unused: $(cat "$work/q35.log")"
grep -q "note:" "$work/q35_text.log" && fail "the text-only layout left tensors unused: $(cat "$work/q35_text.log")"
cmp -s "$work/q35.halo" "$work/q35_text.halo" || fail "Qwen3.5-MoE: the text-only layout gave another bundle"
cmp -s "$work/q38.halo" "$work/q38_vl.halo" || fail "Qwen3.8 Flash: the model.language_model layout gave another bundle"

finish
