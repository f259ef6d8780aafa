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
#  - test_draft_chain: greedy draft chains (device-side token passing)
#    equal the step-by-step drafts;
#  - test_checkpoint: save/restore and rollback bitwise;
#  - test_session_logits: logits read in place equal the copies;
#  - halo run --profile and --spec mtp on cuda (the per-dispatch event
#    timings and the drafter's statistics printed).
# Each test runs when pack.sh packed its bundles (PACK_CUDA: all families
# do not fit one run, see pack.sh). A missing driver or device fails here
# (HALO_REQUIRE_GPU=1). Every test runs even after one fails; the exit
# status is 1 if any did. Writes to $OUT.
# Packing: `PACK_TESTS=0 PACK_VALIDATION=0 PACK_CUDA="qwen3 qwen3_next
# qwen3_5_moe" sh tools/gpu/pack.sh` (then "qwen4_exp", then "deepseek_v4"):
# no Vulkan test programs and no validation layer, which cuda needs neither.
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
have() { # bundle names (without .cuda.halo): all packed?
	for n in "$@"; do [ -f "$HALO_TEST_BUNDLES/$n.cuda.halo" ] || return 1; done
}
# Each packed fixture bundle <fixture>.<model>.f32 names what to run: the
# fixture's oracles, and for a model's tiny fixture the model-wide tests.
for b in "$HALO_TEST_BUNDLES"/*.f32.cuda.halo; do
	[ -f "$b" ] || continue
	n=$(basename "$b" .f32.cuda.halo)
	f=${n%%.*} m=${n#*.}
	if [ "$m" != qwen3 ]; then # qwen3 has no MTP head; test_gpu_backend is its oracle
		t test_gdn_oracle cuda "$m" "tests/fixtures/$f"
		[ -f "tests/fixtures/$f/mtp_draft_logits.f32" ] && t test_mtp_oracle cuda "$m" "tests/fixtures/$f"
	fi
	[ "$f" = "${m}_tiny" ] || continue
	t test_gpu_backend oracle cuda "$f"
	t test_spec_exact greedy cuda "$m" 256 1,2,3,4
	case $m in qwen4_exp | deepseek_v4) t test_draft_chain cuda "$m" ;; esac
done
have hybrid_tiny.random11 qwen3_next_tiny.qwen3_next.f32 qwen3_tiny.qwen3.f32 && t test_checkpoint cuda
have qwen3_tiny.qwen3.f32 && t test_session_logits cuda
if have qwen4_exp_tiny.qwen4_exp.f32; then
	q4="$HALO_TEST_BUNDLES/qwen4_exp_tiny.qwen4_exp.f32.cuda.halo"
	t halo run "$q4" --backend cuda --tokens 1,2,3,4,5,6,7,8 --n-predict 8 --profile
	t halo run "$q4" --backend cuda --tokens 1,2,3,4,5,6,7,8 --n-predict 16 --spec mtp --draft-n 3
fi
cat "$log"
exit "$rc"
