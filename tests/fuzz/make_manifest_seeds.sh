#!/bin/sh
# Regenerates tests/fuzz/corpus_manifest/: the manifests of bundles compiled
# by the current halo (qwen3_tiny with and without Vulkan kernels, the
# hybrid_tiny test model on random weights, qwen3_tiny --quant q8_0 and a
# one-layer K = 256 Qwen3 --quant q4_k, whose weights fit the fuzz target's
# 1 MiB section). Run after a manifest format
# change. usage: make_manifest_seeds.sh HALO_BINARY   (from the source root)
set -eu
halo=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/tests/fuzz/corpus_manifest
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/hybrid"
cp "$root/tests/models/hybrid_tiny.config.json" "$work/hybrid/config.json"
"$halo" compile --hf "$root/tests/fixtures/qwen3_tiny" -o "$work/qwen3_tiny.halo"
"$halo" compile --hf "$root/tests/fixtures/qwen3_tiny" --targets ref -o "$work/qwen3_tiny_ref_only.halo"
"$halo" compile --hf "$work/hybrid" --model "$root/tests/models/hybrid_tiny.yaml" --random-weights 1 \
	-o "$work/hybrid_tiny.halo"
"$halo" compile --hf "$root/tests/fixtures/qwen3_tiny" --targets ref --quant q8_0 -o "$work/qwen3_tiny_q8_0.halo"
mkdir "$work/k256"
python3 - "$root/tests/models/quant_k256/qwen3/config.json" "$work/k256/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(num_hidden_layers=1, layer_types=["full_attention"], vocab_size=64, intermediate_size=256)
json.dump(c, open(sys.argv[2], "w"))
PY
"$halo" compile --hf "$work/k256" --model "$root/models/qwen3.yaml" --random-weights 1 --targets ref --quant q4_k \
	-o "$work/qwen3_k256_q4_k.halo"
# The manifest section's bytes (docs/bundle.md: 64-byte header, then 64-byte
# section entries: name[24], offset u64, size u64, ...).
for b in qwen3_tiny qwen3_tiny_ref_only hybrid_tiny qwen3_tiny_q8_0 qwen3_k256_q4_k; do
	python3 - "$work/$b.halo" "$out/$b.json" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
(count,) = struct.unpack_from("<I", data, 16)
for i in range(count):
    name, off, size = struct.unpack_from("<24sQQ", data, 64 + 64 * i)
    if name.rstrip(b"\0") == b"manifest":
        open(sys.argv[2], "wb").write(data[off:off + size])
        break
else:
    sys.exit("no manifest section in " + sys.argv[1])
PY
done
echo "wrote $out"
