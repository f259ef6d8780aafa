#!/bin/sh
# Tied embeddings are stored once: from the qwen3 fixture, a checkpoint the
# way transformers saves a tied model (tie_word_embeddings true, no
# lm_head.weight: the graph's lm_head falls back to the embedding table) and
# the same model with the table copied into lm_head.weight. The tied bundle
# is smaller by exactly the head's bytes (its manifest declares lm_head at
# the table's offset), and both give bitwise the same logits and tokens on
# the reference backend and on Vulkan.
# usage: tied_embeddings_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
set -u
halo=$1
root=${HALO_SOURCE_ROOT:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

python3 - "$root/tests/fixtures/qwen3_tiny" "$work" <<'EOF' || { echo "FAIL: could not write the checkpoints" >&2; exit 1; }
import json, os, struct, sys
src, work = sys.argv[1], sys.argv[2]
raw = open(os.path.join(src, "model.safetensors"), "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + n])
data = raw[8 + n:]
tensors = {k: v for k, v in header.items() if k != "__metadata__"}

def blob(name):
    a, b = tensors[name]["data_offsets"]
    return data[a:b]

def write(folder, names, override):
    os.makedirs(folder)
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg["tie_word_embeddings"] = True
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    hdr, out = {}, b""
    for name in names:
        b = override.get(name) or blob(name)
        hdr[name] = {"dtype": tensors[name]["dtype"], "shape": tensors[name]["shape"],
                     "data_offsets": [len(out), len(out) + len(b)]}
        out += b
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    open(os.path.join(folder, "model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + out)

names = sorted(tensors)
write(os.path.join(work, "tied"), [k for k in names if k != "lm_head.weight"], {})
write(os.path.join(work, "copied"), names, {"lm_head.weight": blob("model.embed_tokens.weight")})
EOF

for c in tied copied; do
	"$halo" compile --hf "$work/$c" -o "$work/$c.halo" >/dev/null 2>"$work/err" ||
		{ echo "FAIL: compile $c: $(cat "$work/err")" >&2; exit 1; }
done
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

[ "$fails" -eq 0 ] && echo "tied embeddings: ok"
[ "$fails" -eq 0 ]
