#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): MTP speculative decoding
# with a trained draft head (models/trained/qwen4_exp_small, issue 16) on
# Vulkan: held-out token ids from the model's own test split
# (tools/train/heldout.py, the device's Python stdlib the model was trained
# on), draft acceptance and tokens/s against plain decode
# (tools/spec_accept.py), then the cost breakdown of bench/spec_bench
# (accept-all, reject-last, never-right, and the head's own drafts on the
# first held-out tokens) for K = 1..4, each timed warm. Writes to $OUT.
# usage: tools/gpu/spec-trained.sh [PROMPTS] [N_PREDICT]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
prompts=${1:-8}
n=${2:-64}
ckpt=models/trained/qwen4_exp_small
bundle=/tmp/qwen4_exp_small.halo
python3 tools/train/heldout.py "$ckpt/tokenizer.json" /tmp/heldout 8192
"$HALO_BIN/halo" compile --hf "$ckpt" --draft-max 4 -o "$bundle" 2>&1 | tail -1 | tee "$out/spec-compile.txt"
python3 tools/spec_accept.py "$HALO_BIN/halo" "$bundle" /tmp/heldout.i32 --backend vulkan \
	--prompts "$prompts" --n-predict "$n" | tee "$out/spec-accept.txt"
"$HALO_BIN/spec_bench" "$bundle" vulkan "$n" 1,2,3,4 --prompt /tmp/heldout.i32 2>&1 | tee "$out/spec-bench.txt"
