#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): does a decode matvec's
# time step with its number of workgroups (whole waves of the device's
# multiprocessors)? One tile of the int8-activation q4_k matvec (512 lanes,
# split 32, 2 columns a group: 32 columns a workgroup) over N = 4096 .. 8480
# at K = 4096 (128 .. 265 workgroups), then the Qwen3-8B decode shapes (qkv
# 4096 x 6144, o 4096 x 4096, gate/up 4096 x 24576, down 12288 x 4096)
# under the heuristic and tiles of 128-512 lanes (bench/matvec_bench --tile),
# and the fused forms the decode runs (qkv with the rms_norm prologue,
# gate/up with it and the swiglu pair: --pro, --pair) beside them, each
# line of those two with the driver's compile statistics (--stats: the
# register count on NVIDIA, which says how many workgroups an SM holds).
# Writes $OUT/waves.txt.
# usage: tools/gpu/matvec-waves.sh [ITERS]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
it=${1:-20}
mb="$HALO_BIN/matvec_bench"
{
	echo "== one tile, K = 4096, N = 4096 .. 8480"
	"$mb" --dtype q4_k --xq --tile 512,32,2,2,4 --shape 4096x4096 --shape 4096x4224 --shape 4096x4256 \
		--shape 4096x5120 --shape 4096x6144 --shape 4096x8448 --shape 4096x8480 "$it"
	echo "== the Qwen3-8B decode shapes"
	"$mb" --stats --dtype q4_k,q8_0 --xq --shape 4096x6144 --shape 4096x4096 --shape 4096x24576 --shape 12288x4096 \
		--tile 512,32,2,2,4 --tile 256,32,2,2,4 --tile 128,32,2,2,4 --tile 256,16,2,4,4 \
		--tile 128,16,2,4,4 --tile 512,64,2,1,4 --tile 256,8,2,4,4 --tile 256,4,2,4,4 "$it"
	echo "== f16"
	"$mb" --dtype f16 --shape 4096x6144 --shape 4096x4096 --shape 4096x24576 --shape 12288x4096 \
		--tile 128,64,1,4 --tile 128,32,1,4 --tile 256,64,1,4 --tile 64,32,1,4 --tile 128,16,1,4 "$it"
	echo "== the fused forms (heuristic tiles)"
	"$mb" --stats --dtype q4_k,q8_0 --xq --pro --shape 4096x6144 --shape 4096x4096 --only zzz "$it"
	"$mb" --stats --dtype q4_k,q8_0 --xq --pro --pair --shape 4096x24576 --only zzz "$it"
} 2>&1 | tee "$out/waves.txt"
