#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): where a prompt's and a
# decode step's time goes on the Qwen3-8B-shaped model (tools/gpu/bench/qwen3_8b,
# random f16 weights, LAYERS of its 36 layers): `halo run --profile` over a
# PP-token prompt and TG generated tokens, heuristic kernel choices, the ten
# costliest kernels of each. Writes $OUT/profile-<dtype>.txt.
# usage: tools/gpu/profile.sh [PP] [TG] [LAYERS] [COMPILE FLAGS...]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
pp=${1:-512}
tg=${2:-32}
layers=${3:-12}
if [ $# -ge 3 ]; then shift 3; else shift $#; fi
cfg=/tmp/qwen3_8b_prof_cfg
bundle=/tmp/qwen3_8b_prof.halo
python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b "$cfg" "$layers"
"$HALO_BIN/halo" compile --hf "$cfg" --random-weights 1 --dtype f16 "$@" -o "$bundle"
tag=$(echo "f16 $*" | tr -c 'a-z0-9_\n' '-' | sed 's/-*$//')
tokens=$(python3 -c "print(','.join(str(1 + i % 1000) for i in range($pp)))")
"$HALO_BIN/halo" run "$bundle" --backend vulkan --no-tuning --tokens "$tokens" --n-predict "$tg" --profile \
	2>&1 >/dev/null | tee "$out/profile-$tag.txt"
