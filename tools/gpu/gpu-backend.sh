#!/bin/sh
# On the GPU machine (after tools/gpu/pack.sh here): the cuda backend
# (runtime/drivers: the HIP-dialect twins as PTX through the CUDA driver) on
# the bundles pack.sh compiled with the cuda-sm90 target (.devrun/bundles,
# read through $HALO_TEST_BUNDLES: tests/runtime/model_check.h), with the
# same tests and tolerances as on ref and Vulkan:
#  - test_gpu_backend: each model's fixture against the ref backend (prefill
#    and decode logits, greedy tokens);
#  - test_gdn_oracle and test_mtp_oracle: the transformers oracles of the
#    hybrid families and DeepSeek V4 (target logits, MTP drafts);
#  - test_spec_exact greedy: speculative output equal to plain greedy for
#    K = 1..4 at every acceptance length, the state left bitwise;
#  - test_checkpoint: save/restore and rollback bitwise;
#  - test_session_logits: logits read in place equal the copies;
#  - halo run --profile and --spec mtp on cuda (the per-dispatch event
#    timings and the drafter's statistics printed).
# A missing driver or device fails here (HALO_REQUIRE_GPU=1). Every test runs
# even after one fails; the exit status is 1 if any did. Writes to $OUT.
# Packing: `PACK_TESTS=0 sh tools/gpu/pack.sh && rm -r .devrun/deb` (no
# Vulkan test programs, no validation layer: cuda needs neither) keeps the
# carried tree under its 64 MiB.
# usage: tools/gpu/gpu-backend.sh
set -eu
cd "$(dirname "$0")/../.."
. tools/gpu/env.sh
out=${OUT:-/tmp}
mkdir -p "$out"
log="$out/gpu-backend.txt"
: > "$log"
HALO_TEST_BUNDLES=/tmp/halo-test-bundles
export HALO_TEST_BUNDLES HALO_REQUIRE_GPU=1
mkdir -p "$HALO_TEST_BUNDLES"
for b in .devrun/bundles/*.halo.xz; do
	xz -dc "$b" > "$HALO_TEST_BUNDLES/$(basename "$b" .xz)"
done
rc=0
t() { # test program, arguments...
	echo "== $*" >> "$log"
	"$HALO_BIN/$@" >> "$log" 2>&1 || { rc=1; echo "FAILED: $*" >> "$log"; }
}
for f in qwen3_tiny qwen3_next_tiny qwen3_5_moe_tiny qwen4_exp_tiny deepseek_v4_tiny; do
	t test_gpu_backend oracle cuda "$f"
done
for fam in qwen3_next qwen3_5_moe qwen4_exp; do
	t test_gdn_oracle cuda "$fam"
	t test_mtp_oracle cuda "$fam"
done
for f in deepseek_v4_tiny deepseek_v4_b; do
	t test_gdn_oracle cuda deepseek_v4 "tests/fixtures/$f"
	t test_mtp_oracle cuda deepseek_v4 "tests/fixtures/$f"
done
for fam in qwen3 qwen3_next qwen3_5_moe qwen4_exp deepseek_v4; do
	t test_spec_exact greedy cuda "$fam" 256 1,2,3,4
done
t test_checkpoint cuda
t test_session_logits cuda
q4="$HALO_TEST_BUNDLES/qwen4_exp_tiny.qwen4_exp.f32.cuda.halo"
t halo run "$q4" --backend cuda --tokens 1,2,3,4,5,6,7,8 --n-predict 8 --profile
t halo run "$q4" --backend cuda --tokens 1,2,3,4,5,6,7,8 --n-predict 16 --spec mtp --draft-n 3
cat "$log"
exit "$rc"
