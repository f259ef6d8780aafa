#!/bin/sh
# halo compile --quant through the CLI: a bad format name is a usage error,
# a weight whose K is not a whole number of q8_0 blocks and a non-finite
# weight value are errors naming the weight that leave no bundle behind,
# q4_k stores rows of whole 32-blocks (the embedding table too), the f8e4m3
# fallback to q8_0 is noted, mxfp4 stores the experts
# alone, --act-quant takes q8 over q8_0 or q4_k (q4_k's default) and none
# over any, and halo inspect --bundle shows the dtypes.
# usage: quant_cli_test.sh HALO_BINARY   (HALO_SOURCE_ROOT names the source tree)
test_name="quant cli"
. "$(dirname "$0")/test_lib.sh"
tiny=$root/tests/fixtures/qwen3_tiny

expect 2 "--quant must be q8_0, q4_k, f8e4m3 or mxfp4, not 'q5_k'" compile --hf "$tiny" --quant q5_k -o "$work/x.halo"
expect 2 "--quant must be q8_0, q4_k, f8e4m3 or mxfp4, not 'f16'" compile --hf "$tiny" --quant f16 -o "$work/x.halo"
expect 2 "'--quant' needs a value" compile --hf "$tiny" -o "$work/x.halo" --quant
# int8 activations: q8 only, over q8_0 or q4_k
expect 2 "--act-quant must be q8 (int8 activations) or none, not 'q4'" compile --hf "$tiny" --quant q8_0 --act-quant q4 -o "$work/x.halo"
expect 2 "--act-quant q8 needs --quant q8_0 or q4_k" compile --hf "$tiny" --act-quant q8 -o "$work/x.halo"
expect 2 "--act-quant q8 needs --quant q8_0 or q4_k" compile --hf "$tiny" --quant f8e4m3 --act-quant q8 -o "$work/x.halo"
[ ! -e "$work/x.halo" ] || fail "a refused command line left $work/x.halo"

# qwen3_next_tiny's experts are 16 wide: exp_down [8, 64, 16] has K = 16
expect 1 "weight 'layers.0.moe_ffn.exp_down' \[8, 64, 16\]: its last dim K = 16 is not a multiple of q8_0's block of 32" \
	compile --hf "$root/tests/fixtures/qwen3_next_tiny" --targets ref --quant q8_0 -o "$work/next.halo"
[ ! -e "$work/next.halo" ] || fail "the block-size error left a bundle behind"
ls "$work" | grep -q "next.halo" && fail "the block-size error left a temporary file: $(ls "$work")"
# mxfp4's block is q8_0's 32: the error names mxfp4, nothing falls back
expect 1 "weight 'layers.0.moe_ffn.exp_down' \[8, 64, 16\]: its last dim K = 16 is not a multiple of mxfp4's block of 32" \
	compile --hf "$root/tests/fixtures/qwen3_next_tiny" --targets ref --quant mxfp4 -o "$work/next.halo"
[ ! -e "$work/next.halo" ] || fail "the mxfp4 block-size error left a bundle behind"

# K = 64 and 96: q4_k rows of one partial super-block (48 and 64 bytes a
# row), nothing falls back; the untied embedding table is q4_k, the head q8_0
expect 0 "weights by dtype: f32 .* MiB, q8_0 .* MiB, q4_k .* MiB" \
	compile --hf "$tiny" --targets ref --quant q4_k -o "$work/q4.halo"
grep -q "stored q8_0" "$out" && fail "q4_k noted a fallback: $(cat "$out")"
expect 0 "q4_k  *9 weights" inspect --bundle "$work/q4.halo"
grep -q "^  lm_head  *q8_0  *\[256, 64\]" "$out" || fail "inspect --bundle does not show lm_head as q8_0: $(cat "$out")"
grep -q "^  tok_embd  *q4_k  *\[256, 64\]  *[0-9]*  *12288$" "$out" ||
	fail "inspect --bundle does not show tok_embd as q4_k in 256 x 48 bytes: $(cat "$out")"
grep -q "^  layers.0.decoder.w_down  *q4_k  *\[64, 96\]  *[0-9]*  *4096$" "$out" ||
	fail "inspect --bundle does not show w_down as q4_k in 64 x 64 bytes: $(cat "$out")"
# and under f8e4m3 (blocks of 128), the head included
expect 0 "note: 9 weights stored q8_0, not f8e4m3_b128: their K is not a multiple of 128: lm_head \[256, 64\]" \
	compile --hf "$tiny" --targets ref --quant f8e4m3 -o "$work/f8.halo"
expect 0 "weights by dtype: f32 .* MiB, f8e4m3_b128 .* MiB" \
	compile --hf "$root/tests/models/quant_k256/qwen3" --random-weights 1 --targets ref --quant f8e4m3 -o "$work/f8.halo"
expect 0 "f8e4m3_b128  *9 weights .* 8.25 bits/weight" inspect --bundle "$work/f8.halo"
# mxfp4: the experts alone, the rest (head included) in --dtype
expect 0 "weights by dtype: f32 .* MiB, mxfp4 .* MiB" \
	compile --hf "$root/tests/models/quant_k256/qwen3_next" --random-weights 1 --targets ref --quant mxfp4 -o "$work/mx.halo"
expect 0 "mxfp4  *6 weights .* 4.25 bits/weight" inspect --bundle "$work/mx.halo"
grep -q "^  lm_head  *f32 " "$out" || fail "inspect --bundle does not show lm_head as f32 under mxfp4: $(cat "$out")"
expect 0 "." run "$work/mx.halo" --backend ref --tokens 1,2,3 --n-predict 2
expect 0 "weights by dtype: f32 .* MiB, q8_0 .* MiB" compile --hf "$tiny" --targets ref --quant q8_0 -o "$work/q8.halo"
expect 0 "." run "$work/q8.halo" --backend ref --tokens 1,2,3 --n-predict 2
# the qwen3 decode and verify entries' 9 matmul dispatches each (merged q/k/v, o, gate/up pair, down a layer; the head)
expect 0 "int8 activations in 18 decode and verification matvecs" \
	compile --hf "$tiny" --targets ref --quant q8_0 --act-quant q8 -o "$work/q8x.halo"
expect 0 "." run "$work/q8x.halo" --backend ref --tokens 1,2,3 --n-predict 2
# q4_k takes int8 activations unless told otherwise; q8_0 and the others do not
expect 0 "int8 activations in 18 decode and verification matvecs" \
	compile --hf "$tiny" --targets ref --quant q4_k -o "$work/q4x.halo"
for flags in "--quant q4_k --act-quant none" "--quant q8_0" "--quant f8e4m3 --act-quant none" "--act-quant none"; do
	expect 0 "." compile --hf "$tiny" --targets ref $flags -o "$work/none.halo"
	grep -q "int8 activations" "$err" && fail "halo compile $flags gave int8 activations: $(cat "$err")"
done
# the decode path's logits of a prompt (what int8 activations change): one row a token
expect 0 "." run "$work/q8x.halo" --backend ref --tokens 1,2,3,4,5 --n-predict 1 --prompt-entry decode \
	--logits-out "$work/q8x.logits"
[ "$(stat -c %s "$work/q8x.logits")" -eq $((5 * 256 * 4)) ] || fail "--prompt-entry decode wrote $(stat -c %s "$work/q8x.logits") bytes of logits, not 5 x 256 floats"
expect 2 "--prompt-entry goes with --logits-out" run "$work/q8x.halo" --backend ref --tokens 1,2 --prompt-entry decode
expect 1 "nosuch" run "$work/q8x.halo" --backend ref --tokens 1,2 --prompt-entry nosuch --logits-out "$work/x.logits"

# a non-finite value in a quantized weight: an error naming it, no bundle
python3 - "$tiny" "$work/inf" <<'PY'
import json, os, shutil, struct, sys
src, dst = sys.argv[1:3]
raw = bytearray(open(os.path.join(src, "model.safetensors"), "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
t = json.loads(raw[8:8 + n])["model.layers.1.mlp.up_proj.weight"]
assert t["dtype"] == "F32"
at = 8 + n + t["data_offsets"][0] + 4 * (2 * 64 + 5) # row 2, column 5
raw[at:at + 4] = struct.pack("<f", float("inf"))
os.makedirs(dst)
shutil.copy(os.path.join(src, "config.json"), dst)
open(os.path.join(dst, "model.safetensors"), "wb").write(raw)
PY
expect 1 "weight 'layers.1.decoder.w_up': element 133 (row 2, column 5) is inf; q8_0 stores finite values only" \
	compile --hf "$work/inf" --targets ref --quant q8_0 -o "$work/inf.halo"
[ ! -e "$work/inf.halo" ] || fail "the non-finite value left a bundle behind"

finish
