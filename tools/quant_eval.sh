#!/bin/sh
# Quantization quality of one checkpoint: compiles it f16, --quant q8_0,
# --quant q4_k, --quant f8e4m3 and --quant mxfp4 (the MoE experts alone: on a
# dense model its bundle is the f16 one), runs the held-out ids through each in windows of WINDOW tokens
# (a fresh session per window, as llama.cpp's perplexity tool does with its
# context), and prints tools/quant_quality.py's numbers (perplexity, KL
# divergence, top-1 agreement) for each format against f16. FORMAT keeps f32
# activations (--act-quant none, whatever compile's default); FORMAT+xq
# (q8_0+xq, q4_k+xq: --act-quant q8) runs each window through the decode
# entry (halo run --prompt-entry decode), whose matvecs take the int8
# activations; FORMATS overrides the list (default: all of them).
# usage: [FORMATS=...] tools/quant_eval.sh CKPT_DIR MODEL_YAML IDS.i32 [WINDOW] [BACKEND] [HALO]
# IDS.i32: little-endian int32 ids (tools/train/heldout.py writes them).
set -eu
ckpt=$1 model=$2 ids=$3 window=${4:-512} backend=${5:-ref}
halo=${6:-halo}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=$(($(stat -c %s "$ids") / 4 / window * window))
python3 -c "
import array, sys
a = array.array('i'); a.frombytes(open('$ids', 'rb').read()[:4 * $n])
for w in range(0, $n, $window):
    open('$work/win%05d.txt' % (w // $window), 'w').write(','.join(map(str, a[w:w + $window])))
"
formats=${FORMATS:-q8_0 q4_k f8e4m3 mxfp4 q8_0+xq q4_k+xq}
for fmt in f16 $formats; do
	quant="" entry=""
	[ "$fmt" = f16 ] || quant="--quant ${fmt%+xq}"
	if [ "$fmt" = "${fmt%+xq}" ]; then
		quant="$quant --act-quant none"
	else
		quant="$quant --act-quant q8" entry="--prompt-entry decode"
	fi
	"$halo" compile --hf "$ckpt" --model "$model" --dtype f16 $quant -o "$work/$fmt.halo" 2> "$work/compile_$fmt.log"
	: > "$work/$fmt.logits"
	for win in "$work"/win*.txt; do
		"$halo" run "$work/$fmt.halo" --backend "$backend" --tokens "$(cat "$win")" --n-predict 1 \
			--logits-out "$work/win.logits" $entry 2>/dev/null >/dev/null
		cat "$work/win.logits" >> "$work/$fmt.logits"
	done
	rm "$work/$fmt.halo"
done
echo "$ckpt: $n held-out tokens in windows of $window, $backend backend"
for fmt in $formats; do
	echo "== $fmt against f16"
	python3 "$(dirname "$0")/quant_quality.py" "$work/f16.logits" "$work/$fmt.logits" --tokens "$ids"
done
