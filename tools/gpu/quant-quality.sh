#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): quantization quality of
# the trained qwen3_small (models/trained) for every format against its own
# f16 compile (tools/quant_eval.sh: perplexity, KL divergence, top-1
# agreement), over the first N tokens of the model's test split, which only
# the machine it was trained on can select (tools/train/heldout.py: the same
# Python stdlib). BACKEND: ref (default, as bench/results-quant.txt) or
# vulkan. Writes $OUT/quant-quality.txt.
# usage: tools/gpu/quant-quality.sh [N] [WINDOW] [BACKEND]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
n=${1:-8192}
window=${2:-512}
backend=${3:-ref}
ckpt=models/trained/qwen3_small
python3 tools/train/heldout.py "$ckpt/tokenizer.json" /tmp/heldout_q "$n"
sh tools/quant_eval.sh "$ckpt" models/qwen3.yaml /tmp/heldout_q.i32 "$window" "$backend" "$HALO_BIN/halo" |
	tee "$out/quant-quality.txt"
