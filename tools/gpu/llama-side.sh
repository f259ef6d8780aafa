#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): halo and llama.cpp's
# Vulkan backend side by side on one GPU in one call, the Qwen3-8B shape
# (tools/gpu/bench/qwen3_8b, LAYERS of its 36 layers), random weights, in f16
# and in each format's nearest pair: halo q4_k+xq against llama.cpp Q4_K
# (llama-quantize --pure: every matrix Q4_K, the head Q8_0 as halo's policy
# keeps it), halo q8_0+xq against Q8_0. Both read the same bytes per token.
# llama.cpp is not part of halo: LLAMA_DIR names a directory holding
# llama-bench and llama-quantize built by hand from fetched source (Vulkan,
# static), or LLAMA_TAR an xz tar of them; the note that reports a run says
# which build it was. tools/gpu/gguf_random.py writes llama.cpp's input (no
# llama.cpp code). CPU work (the GGUF, its quantizing) runs on the upper half
# of the cores while halo compiles and times on the lower half; llama-bench
# runs last, alone. Writes halo's tables as bench-quant.sh does
# ($OUT/quant_*.md/json, quant_compile.txt) and llama.cpp's to $OUT/side_*.
# usage: [LLAMA_DIR=dir | LLAMA_TAR=file.tar.xz] [FORMATS="f16 q4_k q8_0"] tools/gpu/llama-side.sh [TG] [PP] [LAYERS]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
tg=${1:-128}
pp=${2:-512}
layers=${3:-36}
formats=${FORMATS:-f16 q4_k q8_0}
lldir=${LLAMA_DIR:-/tmp/llama}
if [ -n "${LLAMA_TAR:-}" ]; then
	mkdir -p "$lldir"
	xz -dc "$LLAMA_TAR" | tar -C "$lldir" -xf -
fi
for b in llama-bench llama-quantize; do
	[ -x "$lldir/$b" ] || { echo "llama-side: $lldir/$b: not found (LLAMA_DIR or LLAMA_TAR)" >&2; exit 2; }
done
cfg=/tmp/side_cfg
python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b "$cfg" "$layers"
n=$(nproc)
half=$((n / 2))
lo="0-$((half - 1))"
hi="$half-$((n - 1))"
ceiling=$(taskset -c "$lo" "$HALO_BIN/read_bw" | tee "$out/side_read_bw.txt" | sed -n 's/read ceiling: \([0-9]*\) GB.*/\1/p')

# llama.cpp's models, on the upper cores, while halo runs on the lower ones
gg=/tmp/side_gguf
mkdir -p "$gg"
(
	taskset -c "$hi" python3 tools/gpu/gguf_random.py "$cfg" "$gg/f16.gguf"
	for f in $formats; do
		case $f in
		q4_k) t=Q4_K ;;
		q8_0) t=Q8_0 ;;
		*) continue ;;
		esac
		taskset -c "$hi" "$lldir/llama-quantize" --pure --output-tensor-type q8_0 "$gg/f16.gguf" "$gg/$f.gguf" "$t" \
			"$half" > "$out/side_quantize_$f.log" 2>&1
	done
	echo ready > "$gg/ready"
) > "$out/side_gguf.log" 2>&1 &

# halo's side: tools/gpu/bench-quant.sh's tables (the FORMAT+xq names for
# the int8-activation decode), on the lower cores (halo compile's threads
# follow the affinity)
FORMATS=$(echo "$formats" | sed 's/\(q[0-9a-z_]*\)/\1+xq/g') taskset -c "$lo" sh tools/gpu/bench-quant.sh "$tg" "$pp" "$layers"

while [ ! -f "$gg/ready" ]; do sleep 2; done
cat "$out/side_gguf.log"
for f in $formats; do
	[ -f "$gg/$f.gguf" ] || { echo "llama-side: no $f GGUF (see side_quantize_$f.log)"; continue; }
	active=$(python3 tools/gpu/dense_active_bytes.py "$cfg" "$f")
	echo "llama.cpp $f: $(stat -c %s "$gg/$f.gguf") bytes, $active bytes read per token, read ceiling $ceiling GB/s" |
		tee -a "$out/side_llama.md"
	"$lldir/llama-bench" -m "$gg/$f.gguf" -p "$pp" -n "$tg" -r 3 -ngl 99 -o md 2>> "$out/side_llama.log" |
		tee -a "$out/side_llama.md"
done
