#!/bin/sh
# Qwen3.8 Flash with two PLE layers: PLE layer p takes the primes after those
# of layers 0..p-1, so its n-gram table has its own height. From the tiny
# fixture: ple_layer_ids [2, 4] with ngram_vocab_size_base 150, where layer
# 0's four primes (151 + 157 + 163 + 167 = 638) pad to 640 rows and layer 1's
# (173 + 179 + 181 + 191 = 724) to 768, each table in 2 shards of its own
# height (random rows), layer 4 taking layer 2's other PLE tensors. The
# model file declares every table as tall as the last and reads each with
# stack_pad: it compiles, the reference backend and Vulkan generate the same
# tokens; shards taller than the declared table, or shorter than the rows
# the layer's hash reaches (724), are refused naming the weight.
# transformers is not run here (no device).
# usage: ple_layers_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="ple layers"
. "$(dirname "$0")/test_lib.sh"

# make DIR SHARD_ROWS_OF_LAYER_3: the checkpoint described above
make() {
	python3 - "$root/tests/fixtures/qwen4_exp_tiny" "$1" "$2" <<'PY'
import json, os, random, struct, sys
src, dst, rows3 = sys.argv[1], sys.argv[2], int(sys.argv[3])
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header, data = json.loads(raw[8:8 + n]), raw[8 + n:]
rng = random.Random(5)
tensors = {}
for name, t in header.items():
    if name == "__metadata__" or ".ngram_embedding.shard_" in name:
        continue
    a, b = t["data_offsets"]
    tensors[name] = (t["dtype"], t["shape"], data[a:b])
    if name.startswith("model.layers.1.ple."):
        tensors[name.replace("layers.1.", "layers.3.")] = tensors[name]
for layer, rows in ((1, 320), (3, rows3)):
    for e in range(2):
        vals = [rng.uniform(-1, 1) for _ in range(rows * 8)]
        tensors["model.layers.%d.ple.ple_embedding.ngram_embedding.shard_%d.weight" % (layer, e)] = \
            ("F32", [rows, 8], struct.pack("<%df" % len(vals), *vals))
hdr, out = {}, b""
for name in sorted(tensors):
    dtype, shape, b = tensors[name]
    hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(out), len(out) + len(b)]}
    out += b
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
os.makedirs(dst)
open(os.path.join(dst, "model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + out)
cfg = json.load(open(os.path.join(src, "config.json")))
text = cfg.get("text_config", cfg)
text["ple_layer_ids"] = [2, 4]
text["ngram_vocab_size_base"] = 150
json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=1)
PY
}

make "$work/two" 384
"$halo" compile --hf "$work/two" -o "$work/two.halo" 2>"$err" || fail "two PLE layers: $(cat "$err")"
for be in ref vulkan; do
	"$halo" run "$work/two.halo" --backend "$be" --tokens 1,5,9,13,2,7,30,4 --n-predict 12 >"$work/$be" 2>"$err" ||
		fail "run on $be: $(cat "$err")"
done
[ -s "$work/ref" ] && cmp -s "$work/ref" "$work/vulkan" ||
	fail "Vulkan generated $(cat "$work/vulkan"), the reference $(cat "$work/ref")"

make "$work/tall" 448
expect 1 "ple_table': piece '.*shard_1.weight' takes the table past its declared rows" \
	compile --hf "$work/tall" -o "$work/tall.halo"
[ -e "$work/tall.halo" ] && fail "a refused checkpoint left $work/tall.halo behind"
make "$work/short" 256
expect 1 "layers.3.gdn_ple.ple_table': its pieces .* hold 512 rows, its readers reach row 723" \
	compile --hf "$work/short" -o "$work/short.halo"

finish
