#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): DeepSeek V4-Flash at its
# published dims (tools/gpu/bench/deepseek_v4/config.json: the config of
# tests/models/deepseek_v4_flash.config.json cut to 3 layers, one of each
# attention kind (sliding, CSA, HCA; hash-routed, top-k, top-k), top 6 of
# 128 experts, not V4-Flash's 256: one layer's stack of 256 gate matrices is
# 4 GiB in f16, one byte past what a Vulkan storage binding spans on the H200;
# a decoded token reads 6 experts either way; vocab 129280; no MTP layer) with
# seeded random f16
# weights, compiled for a context of DEEP + 1024 tokens: decode
# and prompt speed at depths SHALLOW and DEEP (`halo bench -d`), the top
# kernels of a decode (halo run --profile), the bytes one decoded token reads
# (active weights: attention, compressors, indexer, mHC, router, 6 routed and
# the shared expert, lm_head) beside the read ceiling (bench/read_bw).
# Writes to $OUT.
# QUANT=f8e4m3 stores the matrices as V4-Flash ships them (fp8 with block
# scales: halo compile --quant f8e4m3) and EXPERTS=256 restores its expert
# count, which fits then (a layer's fp8 gate stack is 2 GiB and its scales;
# the Vulkan backend's buffers are as large as the device allows, 4 GiB - 1
# on the H200); QUANT=mxfp4 stores the routed experts alone in MXFP4 (17
# bytes per 32 weights), the rest f16; the bytes a token reads are counted
# per stored format.
# usage: [QUANT=f8e4m3|mxfp4] [EXPERTS=N] tools/gpu/bench-dsv4.sh [SHALLOW] [DEEP] [TG]
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
shallow=${1:-1024}
deep=${2:-32768}
tg=${3:-64}
quant=${QUANT:-}
cfg=/tmp/deepseek_v4_cfg
mkdir -p "$cfg"
python3 - tools/gpu/bench/deepseek_v4/config.json "$cfg/config.json" "${EXPERTS:-}" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
if sys.argv[3]:
    c["n_routed_experts"] = int(sys.argv[3])
json.dump(c, open(sys.argv[2], "w"), indent=1)
PY
bundle=/tmp/deepseek_v4_${quant:-f16}.halo
"$HALO_BIN/read_bw" | tee "$out/read_bw.txt"
t0=$(date +%s.%N)
"$HALO_BIN/halo" compile --hf "$cfg" --random-weights 1 --dtype f16 ${quant:+--quant "$quant"} --no-mtp \
	--ctx $((deep + 1024)) -o "$bundle" 2>&1 | tail -2 | tee "$out/compile.txt"
t1=$(date +%s.%N)
echo "compile: $(awk "BEGIN{print $t1 - $t0}") s, bundle $(stat -c %s "$bundle") bytes" | tee -a "$out/compile.txt"
python3 - "$cfg/config.json" "$quant" <<'PY' | tee -a "$out/compile.txt"
import json, sys
c = json.load(open(sys.argv[1]))
# bytes a weight of each class (docs/quantization.md) takes: "lin" the
# matmuls with 32 outputs or more and the head, "exp" the routed experts'
# matrices, "sh" the shared expert's (matmuls: linear under mxfp4), "keep"
# the routers and the small mHC matrices (--dtype)
f8, q8 = 1 + 4 / 128, 34 / 32
per = {"": {"lin": 2, "exp": 2, "sh": 2, "keep": 2}, "f8e4m3": {"lin": f8, "exp": f8, "sh": f8, "keep": 2},
       "q8_0": {"lin": q8, "exp": q8, "sh": q8, "keep": 2},
       "mxfp4": {"lin": 2, "exp": 17 / 32, "sh": 2, "keep": 2}}[sys.argv[2]]
H, L, V = c["hidden_size"], c["num_hidden_layers"], c["vocab_size"]
nh, D, q, g, o = c["num_attention_heads"], c["head_dim"], c["q_lora_rank"], c["o_groups"], c["o_lora_rank"]
nI, dI, n, I, k = c["index_n_heads"], c["index_head_dim"], c["hc_mult"], c["moe_intermediate_size"], c["num_experts_per_tok"]
E = c["n_routed_experts"]
ratios = [{"sliding_attention": 0, "compressed_sparse_attention": 4, "heavily_compressed_attention": 128}[t]
          for t in c["layer_types"]]
attn = H * q + q * nh * D + H * D + (nh * D // g) * g * o + g * o * H
comp = {0: 0, 4: 2 * 2 * D * H + q * nI * dI + H * nI + 2 * 2 * dI * H, 128: 2 * D * H}
mhc = 2 * (2 + n) * n * n * H
lin = sum(attn + comp[r] for r in ratios) + V * H
exp = len(ratios) * k * 3 * I * H
sh = len(ratios) * 3 * I * H
keep = len(ratios) * (mhc + E * H) + n * n * H
b = per["lin"] * lin + per["exp"] * exp + per["sh"] * sh + per["keep"] * keep
print(f"weight bytes read per decoded token ({sys.argv[2] or 'f16'}, {E} experts):", int(b))
PY
tokens=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
"$HALO_BIN/halo" run "$bundle" --backend vulkan --tokens $tokens --n-predict 256 --profile 2>&1 \
	>/dev/null | tail -16 | tee "$out/profile.txt"
for d in "$shallow" "$deep"; do
	"$HALO_BIN/halo" bench "$bundle" -p 512 -n "$tg" -d "$d" -r 2 | tee "$out/depth_$d.md"
done
