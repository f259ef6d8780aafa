#!/bin/sh
# Checkpoints in the forms real ones come in, made from the qwen3 fixture:
# - sharded (three files and model.safetensors.index.json): the bundle is
#   byte-identical to the single file's;
# - BF16 and F16 tensors: byte-identical to a F32 checkpoint holding the same
#   values (the fixture rounded to bf16 / f16 first), so the conversion is
#   exact;
# - F8_E4M3 matrices with 128x128 block scales (`<name>_scale_inv`, the
#   layout of DeepSeek's and Qwen's FP8 releases; vectors stay F32):
#   byte-identical to a F32 checkpoint of the dequantised values (power-of-two
#   scales keep them exact);
# - tied embeddings (tie_word_embeddings, no lm_head.weight, the way
#   transformers saves a tied model: the graph's lm_head falls back to the
#   embedding table) are stored once: the bundle is smaller by exactly the
#   head's bytes than the same model with the table copied into
#   lm_head.weight, with bitwise the same logits and tokens on the reference
#   backend and on Vulkan.
# usage: checkpoint_forms_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="checkpoint forms"
. "$(dirname "$0")/test_lib.sh"

python3 - "$root/tests/fixtures/qwen3_tiny" "$work" <<'EOF' || { echo "FAIL: could not write the checkpoints" >&2; exit 1; }
import bisect, json, os, struct, sys
src, work = sys.argv[1], sys.argv[2]
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
tensors = {k: v for k, v in header.items() if k != "__metadata__"}

def blob(name):
    a, b = tensors[name]["data_offsets"]
    return data[a:b]

def encode(name, dtype):
    """The tensor's f32 values rounded to dtype: (bytes as dtype, the same values as F32 bytes)."""
    vals = struct.unpack("<%df" % (len(blob(name)) // 4), blob(name))
    if dtype == "F16":
        h = struct.pack("<%de" % len(vals), *vals)
        back = struct.unpack("<%de" % len(vals), h)
        return h, struct.pack("<%df" % len(vals), *back)
    words = struct.unpack("<%dI" % len(vals), blob(name))
    b = [((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF for u in words]  # round to nearest even
    return struct.pack("<%dH" % len(b), *b), struct.pack("<%dI" % len(b), *[x << 16 for x in b])

def e4m3(code):
    """The value of an F8_E4M3 (fn) byte; None for NaN."""
    s, e, m = code >> 7, (code >> 3) & 15, code & 7
    if e == 15 and m == 7:
        return None
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if s else v

CODES = sorted((e4m3(c), c) for c in range(256) if e4m3(c) is not None)

def fp8(name):
    """(F8_E4M3 bytes, F32 scale bytes and shape, the dequantised values as F32 bytes)."""
    rows, cols = tensors[name]["shape"]
    x = struct.unpack("<%df" % (rows * cols), blob(name))
    br, bc = -(-rows // 128), -(-cols // 128)
    scale = []
    for i in range(br):
        for j in range(bc):
            top = max(abs(x[r * cols + c]) for r in range(i * 128, min(rows, i * 128 + 128))
                      for c in range(j * 128, min(cols, j * 128 + 128)))
            k = 0
            while top > 448 * 2.0 ** k:
                k += 1
            while k > -30 and top <= 448 * 2.0 ** (k - 1):
                k -= 1
            scale.append(2.0 ** k)
    values = [v for v, _ in CODES]
    q, deq = bytearray(), []
    for idx, v in enumerate(x):
        s = scale[(idx // cols // 128) * bc + (idx % cols) // 128]
        p = bisect.bisect_left(values, v / s)
        best = min((p - 1, p), key=lambda t: abs(values[t] - v / s) if 0 <= t < len(values) else 1e30)
        q.append(CODES[best][1])
        deq.append(values[best] * s)
    return bytes(q), (struct.pack("<%df" % len(scale), *scale), [br, bc]), struct.pack("<%df" % len(deq), *deq)

def write_file(path, names, override, dtypes, extra={}):
    hdr, out = {}, b""
    for name in names:
        b = override.get(name) or blob(name)
        hdr[name] = {"dtype": dtypes.get(name, tensors[name]["dtype"]), "shape": tensors[name]["shape"],
                     "data_offsets": [len(out), len(out) + len(b)]}
        out += b
    for name, (b, shape) in extra.items():
        hdr[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(out), len(out) + len(b)]}
        out += b
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + out)

def write(folder, names, override, dtypes={}, tie=True, shards=1, extra={}):
    os.makedirs(folder)
    cfg = json.load(open(os.path.join(src, "config.json")))
    if tie:
        cfg["tie_word_embeddings"] = True
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    if shards == 1:
        write_file(os.path.join(folder, "model.safetensors"), names, override, dtypes, extra)
        return
    weight_map = {}
    for i in range(shards):
        part = names[i::shards]
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        write_file(os.path.join(folder, fname), part, override, dtypes)
        weight_map.update({n: fname for n in part})
    json.dump({"metadata": {}, "weight_map": weight_map}, open(os.path.join(folder, "model.safetensors.index.json"), "w"))

names = sorted(tensors)
write(os.path.join(work, "tied"), [k for k in names if k != "lm_head.weight"], {})
write(os.path.join(work, "copied"), names, {"lm_head.weight": blob("model.embed_tokens.weight")})
write(os.path.join(work, "single"), names, {}, tie=False)
write(os.path.join(work, "sharded"), names, {}, tie=False, shards=3)
for dt in ("BF16", "F16"):
    enc = {n: encode(n, dt) for n in names}
    write(os.path.join(work, dt + "_as_f32"), names, {n: e[1] for n, e in enc.items()}, tie=False)
    write(os.path.join(work, dt), names, {n: e[0] for n, e in enc.items()}, {n: dt for n in names}, tie=False)
mats = [n for n in names if len(tensors[n]["shape"]) == 2]
enc = {n: fp8(n) for n in mats}
write(os.path.join(work, "F8_as_f32"), names, {n: e[2] for n, e in enc.items()}, tie=False)
write(os.path.join(work, "F8"), names, {n: e[0] for n, e in enc.items()}, {n: "F8_E4M3" for n in mats}, tie=False,
      extra={n + "_scale_inv": e[1] for n, e in enc.items()})
EOF

for c in tied copied single sharded BF16 BF16_as_f32 F16 F16_as_f32 F8 F8_as_f32; do
	"$halo" compile --hf "$work/$c" -o "$work/$c.halo" >/dev/null 2>"$work/err" ||
		{ echo "FAIL: compile $c: $(cat "$work/err")" >&2; exit 1; }
done
cmp -s "$work/single.halo" "$work/sharded.halo" || fail "the sharded checkpoint's bundle differs from the single file's"
for dt in BF16 F16 F8; do
	cmp -s "$work/$dt.halo" "$work/${dt}_as_f32.halo" ||
		fail "the $dt checkpoint's bundle differs from the one of its values stored as F32"
done
cmp -s "$work/single.halo" "$work/F16.halo" && fail "rounding to f16 changed nothing: the test checks nothing"
head_bytes=$((256 * 64 * 4)) # vocab x hidden, f32 (a multiple of the 256-byte alignment)
[ $(($(stat -c %s "$work/copied.halo") - $(stat -c %s "$work/tied.halo"))) -eq "$head_bytes" ] ||
	fail "the tied bundle is $(stat -c %s "$work/tied.halo") bytes, the copied one $(stat -c %s "$work/copied.halo"): not one head apart"
for be in ref vulkan; do
	for c in tied copied; do
		"$halo" run "$work/$c.halo" --backend "$be" --tokens 1,7,42,3,99,5 --n-predict 8 \
			--logits-out "$work/$c.$be.logits" >"$work/$c.$be.tokens" 2>"$work/err" ||
			fail "run $c on $be: $(cat "$work/err")"
	done
	[ -s "$work/tied.$be.logits" ] && cmp -s "$work/tied.$be.logits" "$work/copied.$be.logits" ||
		fail "$be: the tied bundle's logits differ from the copied one's"
	cmp -s "$work/tied.$be.tokens" "$work/copied.$be.tokens" || fail "$be: the tokens differ"
done

finish
