#!/bin/sh
# On the GPU machine (after `PACK_TESTS=0 PACK_VALIDATION=0 PACK_SPEED=LAYERS
# PACK_SPEED_DTYPES="f16 q8_0 q4_k" sh tools/gpu/pack.sh` here): Nsight
# Compute on the cuda backend's decode of each packed speed bundle, the
# twins of the Vulkan kernels (kernels/hip), which have no Vulkan profiler
# on NVIDIA: per kernel the speed of light (memory against compute), the
# warps' stall reasons, the instruction mix and occupancy, and the SASS
# with per-instruction execution counts. A one-token prompt and three
# decoded tokens: every matvec runs at T = 1. Writes $OUT/ncu-<dtype>.txt
# (details) and $OUT/ncu-<dtype>-sass.csv.xz (the source page; a "+" in a
# dtype is written "-", which the copy back accepts). About a minute
# a format for 40 kernels.
# usage: tools/gpu/ncu-decode.sh [KERNELS]   (KERNELS: launches profiled, default 40)
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
count=${1:-40}
bundle=/tmp/halo-ncu.halo
for packed in .devrun/speed/qwen3_8b.*.halo.xz; do
	dtype=${packed#.devrun/speed/qwen3_8b.}
	dtype=${dtype%.halo.xz}
	# file names without '+' (q4_k+xq -> q4_k-xq): the run's copy back refuses them
	name=$(echo "$dtype" | tr '+' '-')
	xz -dc "$packed" > "$bundle"
	ncu --launch-count "$count" --section SpeedOfLight --section Occupancy --section LaunchStats \
		--section WarpStateStats --section InstructionStats --section SchedulerStats \
		--section MemoryWorkloadAnalysis --section SourceCounters -f -o "/tmp/ncu-$name" \
		"$HALO_BIN/halo" run "$bundle" --backend cuda --no-tuning --tokens 1 --n-predict 3 >/dev/null
	ncu -i "/tmp/ncu-$name.ncu-rep" --page details > "$out/ncu-$name.txt"
	# 30-40 MB of text for 40 kernels: compressed to come back
	{ ncu -i "/tmp/ncu-$name.ncu-rep" --page source --print-source sass --csv || echo "ncu-decode: no source page" >&2; } |
		xz -T0 > "$out/ncu-$name-sass.csv.xz"
done
