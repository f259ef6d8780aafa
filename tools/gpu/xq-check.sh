#!/bin/sh
# On the GPU machine (after PACK_XQ=1 tools/gpu/pack.sh here): int8
# activations (--act-quant q8) on every backend of one bundle. pack.sh
# compiles the Qwen3 k256 test model (tests/models/quant_k256/qwen3, seeded
# random weights, q8_0 and q4_k proper) with the ref, vulkan and cuda
# targets (the GPU machine has no clang-19); here a 24-token prompt runs
# through the decode entry (halo run --prompt-entry decode, the int8 path)
# on each backend, and each GPU's logits are held to ref's on the same
# bundle: per row, the relative L2 error within 2 sqrt(n_q) eps_x = 0.046
# (n_q = 15 quantized matrices on a token's path, eps_x = 0.006 an int8
# rounding's relative error; test_quant_model.c derives it: the GPU's x
# differs from ref's in its last bits, and a value at a half-step may take
# the other code; the top-1 agreement is reported: a near tie of random
# weights may flip with that code). Writes $OUT/xq-check.txt;
# exits non-zero on a failed row.
# usage: tools/gpu/xq-check.sh
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tokens=$(python3 -c "print(','.join(str((i * 37 + 11) % 320) for i in range(24)))")
fails=0
for packed in .devrun/xq/*.halo.xz; do
	name=$(basename "$packed" .halo.xz)
	xz -dc "$packed" > /tmp/xq-check.halo
	for b in ref vulkan cuda; do
		if ! "$HALO_BIN/halo" run /tmp/xq-check.halo --backend "$b" --tokens "$tokens" --n-predict 1 \
			--prompt-entry decode --logits-out "/tmp/xq-check.$b.logits" > /dev/null 2> "/tmp/xq-check.$b.err"; then
			echo "FAIL $name $b: halo run failed: $(tail -1 "/tmp/xq-check.$b.err")"
			fails=$((fails + 1))
		fi
	done
	for b in vulkan cuda; do
		python3 tools/gpu/logits_diff.py "$name $b" /tmp/xq-check.ref.logits "/tmp/xq-check.$b.logits" 24 0.046 ||
			fails=$((fails + 1))
	done
done > "$out/xq-check.txt"
rm -f /tmp/xq-check.*
echo "xq-check: $fails failed" >> "$out/xq-check.txt"
cat "$out/xq-check.txt"
[ "$fails" -eq 0 ]
