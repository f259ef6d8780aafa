#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the converter's rate on
# that host's cores (issue 14's "1 GB/s of checkpoint read on 16 cores").
# transformers writes a BF16 Qwen3 checkpoint of random weights (hidden
# 2048, 8 layers, vocab 32768: the 0.54 G-parameter shape of
# docs/quantization.md's one-core table, 1.07 GB), then `halo compile`
# converts it to f16, q8_0 and q4_k on every core, and q4_k again on one
# thread: its summary line gives the checkpoint bytes read per second, and
# the one-thread bundle must equal the all-core one byte for byte. The
# checkpoint was just written, so it is read from the page cache: the rate is
# the converter's and the bundle's write (its closing fsync included), not
# the checkpoint disk's. Writes to $OUT (or /tmp). HALO names
# the halo binary to time (default $HALO_BIN/halo: an A/B packs an older
# build beside it); a second run reuses the checkpoint. Each output is removed
# before its compile, so no run pays for replacing an earlier file.
# usage: [HALO=path] tools/gpu/convert-rate.sh
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
halo=${HALO:-$HALO_BIN/halo}
ckpt=/tmp/convert_ckpt
[ -f "$ckpt/config.json" ] || python3 - "$ckpt" <<'EOF'
import sys, torch
from transformers import Qwen3Config, Qwen3ForCausalLM
c = Qwen3Config(hidden_size=2048, intermediate_size=6144, num_hidden_layers=8, num_attention_heads=16,
                num_key_value_heads=8, head_dim=128, vocab_size=32768, tie_word_embeddings=False)
torch.manual_seed(0)
Qwen3ForCausalLM(c).to(torch.bfloat16).save_pretrained(sys.argv[1], safe_serialization=True)
EOF
echo "cores: $(nproc); checkpoint: $(du -sb "$ckpt" | cut -f1) bytes" | tee "$out/convert.txt"
conv() { # NAME [halo compile flags...]
	name=$1
	shift
	rm -f "/tmp/convert_$name.halo"
	if ! "$halo" compile --hf "$ckpt" --targets ref --dtype f16 "$@" -o "/tmp/convert_$name.halo" \
		> "/tmp/convert_$name.log" 2>&1; then
		echo "$name: halo compile failed:" | tee -a "$out/convert.txt"
		tail -3 "/tmp/convert_$name.log" | tee -a "$out/convert.txt"
		exit 1
	fi
	grep "params in" "/tmp/convert_$name.log" | sed "s/^/$name: /" | tee -a "$out/convert.txt"
}
conv f16
conv q8_0 --quant q8_0
conv q4_k --quant q4_k
HALO_THREADS=1 conv q4_k_1thread --quant q4_k
if cmp -s /tmp/convert_q4_k.halo /tmp/convert_q4_k_1thread.halo; then
	echo "q4_k: one thread and $(nproc) give the same bytes" | tee -a "$out/convert.txt"
else
	echo "q4_k: one thread and $(nproc) DIFFER" | tee -a "$out/convert.txt"
	exit 1
fi
