#!/bin/sh
# Qwen3.8 Flash (qwen4_exp, tests/models/quant_k256/qwen4_exp: every K whole
# blocks of 32) under --quant q4_k: the n-gram tables (rows of 32) and the
# token embeddings are gathered from q4_k, the experts' down projections
# (K = 96) and the hyper-connection mixers (K = 32) are q4_k rows of one
# partial super-block, nothing falls back to q8_0; the reference backend
# and Vulkan give the same logits over a prompt to 2e-4 per row (only the
# order of f32 sums differs; the hybrid amplifies that up to 90x, as
# test_quant_model says) and generate the same tokens, which speculative
# decoding from the MTP head (its embedding gathers from the same q4_k
# table) reproduces on Vulkan (verify rows equal single steps). f32 activations
# (--act-quant none): with int8 ones a value within an ulp of a half-step
# may round to another code on one backend (test_quant_model's xq cases);
# and the f32 prompt kernels, where a GPU has matrix units (f16 inputs:
# HALO_VK_DISABLE_COOPMAT, as test_quant_model runs).
# usage: quant_flash_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="quant flash"
. "$(dirname "$0")/test_lib.sh"
cfg=$root/tests/models/quant_k256/qwen4_exp
export HALO_VK_DISABLE_COOPMAT=1

expect 0 "weights by dtype: f32 .* MiB, q8_0 .* MiB, q4_k .* MiB" \
	compile --hf "$cfg" --random-weights 3 --quant q4_k --act-quant none -o "$work/q4.halo"
grep -q "stored q8_0" "$out" "$err" && fail "q4_k noted a fallback: $(cat "$err")"
expect 0 "q4_k" inspect --bundle "$work/q4.halo"
for w in tok_embd layers.0.gdn_ple.ple_table layers.0.moe_ffn.exp_down; do
	grep -q "^  $w  *q4_k " "$out" || fail "$w is not q4_k: $(grep "^  $w " "$out")"
done
grep -q "^  lm_head  *q8_0 " "$out" || fail "the head is not q8_0: $(grep "^  lm_head " "$out")"

ids=$(python3 -c 'print(",".join(str((i * 37 + 11) % 256) for i in range(40)))')
for b in ref vulkan; do
	expect 0 "halo run" run "$work/q4.halo" --tokens "$ids" --n-predict 8 --backend $b \
		--logits-out "$work/$b.f32" --validate
	tail -n 1 "$out" > "$work/$b.tokens"
done
python3 "$root/tools/gpu/logits_diff.py" "q4_k flash vulkan vs ref" "$work/ref.f32" "$work/vulkan.f32" 40 2e-4 ||
	fail "Vulkan's logits differ from ref's"
cmp -s "$work/ref.tokens" "$work/vulkan.tokens" ||
	fail "generated tokens differ: ref $(cat "$work/ref.tokens"), vulkan $(cat "$work/vulkan.tokens")"
expect 0 "halo run" run "$work/q4.halo" --tokens "$ids" --n-predict 8 --backend vulkan --spec mtp --validate
[ "$(tail -n 1 "$out")" = "$(cat "$work/vulkan.tokens")" ] ||
	fail "speculative decoding on Vulkan generated $(tail -n 1 "$out"), plain $(cat "$work/vulkan.tokens")"
finish
