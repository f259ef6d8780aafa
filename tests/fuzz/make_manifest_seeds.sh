#!/bin/sh
# Regenerates tests/fuzz/corpus_manifest/: the manifests of bundles compiled
# by the current halo (qwen3_tiny with and without Vulkan kernels, the
# hybrid_tiny test model on random weights). Run after a manifest format
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
# The manifest section's bytes (docs/bundle.md: 64-byte header, then 64-byte
# section entries: name[24], offset u64, size u64, ...).
for b in qwen3_tiny qwen3_tiny_ref_only hybrid_tiny; do
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
