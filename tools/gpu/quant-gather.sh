#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here, with the bundle below in
# .devrun/bundles): q4_k's gathered tables and partial super-blocks on a real
# GPU. The Qwen3.8 Flash bundle of tests/tools/quant_flash_test.sh, compiled
# here for ref, Vulkan and cuda (the HIP-dialect twins as PTX):
#   halo compile --hf tests/models/quant_k256/qwen4_exp --random-weights 3 \
#     --quant q4_k --act-quant none --targets ref,vulkan,cuda -o flash_q4k.halo
# carried as .devrun/bundles/flash_q4k.halo.xz (12.8 MB of PTX and SPIR-V
# xz's to 2.2),
# runs a 40-token prompt and 8 generated tokens on each backend (Vulkan with
# the validation layer); Vulkan's and cuda's logits against ref's to 2e-4 a
# row (tools/gpu/logits_diff.py; the bound quant_flash_test.sh holds on
# lavapipe) and the same tokens. The logits come from the prompt run through
# the decode entry (--prompt-entry decode): the matvecs' f32 sums, where the
# prefill entry would take the matrix units and their f16 inputs on these
# GPUs (another bound: test_kernels_matmul_coopmat). Writes to $OUT.
# usage: tools/gpu/quant-gather.sh
set -u
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
b=/tmp/flash_q4k.halo
xz -dc .devrun/bundles/flash_q4k.halo.xz > "$b"
ids=$(python3 -c 'print(",".join(str((i * 37 + 11) % 256) for i in range(40)))')
fails=0
for be in ref vulkan cuda; do
	v=; [ "$be" = vulkan ] && v=--validate
	if ! "$HALO_BIN/halo" run "$b" --tokens "$ids" --n-predict 8 --backend $be $v \
		--logits-out "$out/flash_$be.f32" --prompt-entry decode > "$out/flash_$be.txt" 2>&1; then
		echo "FAIL halo run --backend $be"; tail -5 "$out/flash_$be.txt"; fails=$((fails + 1)); continue
	fi
	tail -2 "$out/flash_$be.txt"
done
for be in vulkan cuda; do
	python3 tools/gpu/logits_diff.py "q4_k flash $be vs ref" "$out/flash_ref.f32" "$out/flash_$be.f32" 40 2e-4 ||
		fails=$((fails + 1))
	[ "$(tail -1 "$out/flash_$be.txt")" = "$(tail -1 "$out/flash_ref.txt")" ] ||
		{ echo "FAIL $be generated other tokens"; fails=$((fails + 1)); }
done
echo "quant-gather: $fails failed"
[ "$fails" -eq 0 ]
