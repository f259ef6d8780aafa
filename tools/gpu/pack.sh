#!/bin/sh
# Prepares what a run on the lent GPU machine carries (the scripts: README.md, "Tests, benchmarks, GPU runs"):
# .devrun/bin.tar.xz  release builds of halo, the benchmarks and (unless
#                     PACK_TESTS=0) the Vulkan test programs
# .devrun/lib.tar.xz  the shared libraries they need beyond glibc and the loader
# .devrun/deb/        Debian's validation layer (the tests run with it on;
#                     PACK_VALIDATION=0: none, as a cuda-only run needs)
# .devrun/bundles/    (PACK_CUDA) the test bundles tools/gpu/gpu-backend.sh
#                     runs on the cuda backend, compiled with the cuda-sm90
#                     target (the GPU machine has no clang-19 to make PTX;
#                     the PTX text compresses 4x), named as the tests look
#                     them up (tests/runtime/model_check.h, mc_use_prebuilt):
#                     <fixture>.<model>.f32.cuda.halo.xz for each model's
#                     fixtures (and .f32.nomtp, --no-mtp, for those with
#                     an MTP oracle), hybrid_tiny.random11.cuda.halo.xz
# .devrun/ops_cuda.tar.xz  (PACK_OPS=1) the backend op suite's case bundles
#                     with the Vulkan and cuda-sm90 targets
#                     (tests/ops/backend_ops --write, every candidate's
#                     cuda code, about 4.6 MB in xz; PACK_OPS_CASES: only
#                     these cases, space-separated, when the whole suite
#                     would take the run past its 64 MiB):
#                     tools/gpu/backend-ops.sh runs them
# .devrun/speed/      (PACK_SPEED=LAYERS) the Qwen3-8B shape cut to LAYERS
#                     layers, f16 random weights that repeat every 65536
#                     values (halo compile --random-period: 2.9 GB at 1 layer
#                     xz's to 1.9 MB; kernel times do not depend on the values),
#                     compiled here with the vulkan and cuda targets, one
#                     bundle per format of PACK_SPEED_DTYPES (default f16;
#                     q8_0, q4_k, f8e4m3: --quant over f16 with f32
#                     activations (--act-quant none); q8_0+xq, q4_k+xq:
#                     with --act-quant q8):
#                     tools/gpu/backend-speed.sh times each on both backends
# .devrun/xq/         (PACK_XQ=1) the Qwen3 k256 test model with int8
#                     activations over q8_0 and q4_k, with the vulkan and
#                     cuda targets: tools/gpu/xq-check.sh holds each GPU's
#                     logits to ref's
# .gl/                the Vulkan loader packages (the device README's recipe)
# The GPU machine has no package manager access and no meson, so everything is
# built here; the binaries need glibc >= 2.36. What a run carries, the tracked
# tree included, must stay under 64 MiB, and the tree is ~53 MB (the trained
# checkpoints of models/trained, the fixtures): the libraries travel
# compressed, a run that needs no test programs packs without them
# (PACK_TESTS=0: 3.6 MB of binaries instead of 9.2), and the cuda bundles
# and op cases only come when asked for (PACK_CUDA, PACK_OPS). pack.sh
# checks the total and fails when it is over.
set -eu
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.devrun/' "$exclude" 2>/dev/null || echo /.devrun/ >> "$exclude"
grep -qx '/.gl/' "$exclude" 2>/dev/null || echo /.gl/ >> "$exclude"

[ -f build-dev/build.ninja ] || meson setup build-dev --buildtype=release -Dfuzzers=disabled
progs="tools/halo tests/runtime/test_qwen3_oracle tests/runtime/test_gpu_backend tests/ops/backend_ops bench/matvec_bench bench/matmul_bench bench/read_bw bench/spec_bench bench/barrier_bench"
# The model tests gpu-backend.sh runs on cuda (with PACK_CUDA).
cuda_tests="tests/runtime/test_gdn_oracle tests/runtime/test_mtp_oracle tests/runtime/test_spec_exact tests/runtime/test_checkpoint tests/runtime/test_session_logits tests/runtime/test_draft_chain"
[ "${PACK_CUDA:-0}" != 0 ] && progs="$progs $cuda_tests"
ninja -C build-dev $progs
kernel_tests=""
if [ "${PACK_TESTS:-1}" != 0 ]; then
	kernel_tests=$(meson introspect build-dev --targets | python3 -c '
import json, sys
for t in json.load(sys.stdin):
    if t["type"] == "executable" and t["name"].startswith("test_kernels_"):
        print("tests/kernels/" + t["name"])')
	ninja -C build-dev $kernel_tests
fi

rm -rf .devrun && mkdir -p .devrun/stage/halo-bin .devrun/stage/lib .devrun/deb
for p in $progs $kernel_tests; do
	strip -o ".devrun/stage/halo-bin/$(basename "$p")" "build-dev/$p"
done
# One xz stream over all binaries: the statically linked shaderc they share
# compresses away, which keeps the carried tree under its size limit.
tar -C .devrun/stage -cf - halo-bin | xz -9 --lzma2=preset=9,dict=256MiB > .devrun/bin.tar.xz
# Every library halo links beyond glibc and the Vulkan loader (.gl below):
# libmicrohttpd brings gnutls and its own dependencies.
ldd build-dev/tools/halo | awk '/=> \// {print $3}' |
	grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libvulkan)\.so' |
	while read -r l; do cp -L "$l" .devrun/stage/lib/; done
tar -C .devrun/stage/lib -cf - . | xz -9 > .devrun/lib.tar.xz
rm -rf .devrun/stage
[ "${PACK_VALIDATION:-1}" != 0 ] && (cd .devrun/deb && apt-get download vulkan-validationlayers >/dev/null)
# Each fixture with its model, as the tests pair them, and the checkpoint
# test's random-weight hybrid graph (with qwen3 and qwen3_next, whose
# fixtures it also runs). PACK_CUDA: 0 (the default) none, 1 every family,
# or a list of families: all of them do not fit one run's 64 MiB beside the
# tree, so gpu-backend.sh runs whatever was packed, and a full pass takes
# four runs: "qwen3 qwen3_next qwen3_5_moe", "qwen4_exp",
# "deepseek_v4:deepseek_v4_tiny", "deepseek_v4:deepseek_v4_b".
# Without the Vulkan section (the tests run them on cuda and ref only) the
# bundles are a quarter smaller.
cuda_bundle() { # name, halo compile arguments...
	name=$1; shift
	build-dev/tools/halo compile "$@" --dtype f32 --targets ref,cuda -o ".devrun/bundles/$name.cuda.halo"
	xz -9 ".devrun/bundles/$name.cuda.halo"
}
families=${PACK_CUDA:-0}
[ "$families" = 1 ] && families="qwen3 qwen3_next qwen3_5_moe qwen4_exp deepseek_v4"
[ "$families" = 0 ] && families=""
[ -n "$families" ] && mkdir -p .devrun/bundles
for m in $families; do
	# FAMILY:FIXTURE packs that fixture alone (deepseek_v4's two do not fit
	# one run beside the tree)
	case $m in
	*:*) fixtures=${m#*:} m=${m%%:*} ;;
	deepseek_v4) fixtures="deepseek_v4_tiny deepseek_v4_b" ;;
	*) fixtures=${m}_tiny ;;
	esac
	for f in $fixtures; do
		cuda_bundle "$f.$m.f32" --model "models/$m.yaml" --hf "tests/fixtures/$f"
		# test_mtp_oracle's target without its head (its --no-mtp check)
		if [ -f "tests/fixtures/$f/mtp_draft_logits.f32" ]; then
			cuda_bundle "$f.$m.f32.nomtp" --model "models/$m.yaml" --hf "tests/fixtures/$f" --no-mtp
		fi
	done
done
case " $families " in *" qwen3 "*) case " $families " in *" qwen3_next "*)
	mkdir -p .devrun/hybrid
	cp tests/models/hybrid_tiny.config.json .devrun/hybrid/config.json
	cuda_bundle hybrid_tiny.random11 --model tests/models/hybrid_tiny.yaml --hf .devrun/hybrid --random-weights 11
	rm -rf .devrun/hybrid ;;
esac ;; esac
# The op suite's cases keep their Vulkan section: backend-ops.sh runs each
# on Vulkan and cuda.
if [ "${PACK_OPS:-0}" != 0 ]; then
	mkdir .devrun/ops_cuda
	# shellcheck disable=SC2086 # case names are words
	build-dev/tests/ops/backend_ops --write .devrun/ops_cuda vulkan,cuda ${PACK_OPS_CASES:-}
	tar -C .devrun/ops_cuda -cf - . | xz -9 > .devrun/ops_cuda.tar.xz
	rm -rf .devrun/ops_cuda
fi
if [ "${PACK_XQ:-0}" != 0 ]; then
	mkdir -p .devrun/xq
	for q in q8_0 q4_k; do
		build-dev/tools/halo compile --hf tests/models/quant_k256/qwen3 --random-weights 11 --quant $q --act-quant q8 \
			--targets ref,vulkan,cuda -o /tmp/halo-xq.halo
		xz -9 -c /tmp/halo-xq.halo > ".devrun/xq/qwen3_k256.$q+xq.halo.xz"
		rm -f /tmp/halo-xq.halo
	done
fi
if [ "${PACK_SPEED:-0}" != 0 ]; then
	mkdir -p .devrun/speed
	python3 tools/gpu/cut_config.py tools/gpu/bench/qwen3_8b .devrun/speed/cfg "$PACK_SPEED"
	# PACK_SPEED_DTYPES: the weight formats, one bundle each (f16, or a
	# --quant format over f16 with --act-quant none; FORMAT+xq: with
	# --act-quant q8)
	for d in ${PACK_SPEED_DTYPES:-f16}; do
		quant=""
		[ "$d" = f16 ] || quant="--quant ${d%+xq}"
		if [ "$d" = "${d%+xq}" ]; then quant="$quant --act-quant none"; else quant="$quant --act-quant q8"; fi
		# shellcheck disable=SC2086 # $quant is words or none
		build-dev/tools/halo compile --hf .devrun/speed/cfg --random-weights 1 --random-period 65536 --dtype f16 \
			$quant --targets ref,vulkan,cuda -o /tmp/halo-speed.halo
		# one thread: xz's threads compress blocks of 24 MiB each on its own,
		# each spelling the first period out again (16 MB for 1 layer, 1.9 with -T1)
		xz -T1 -2 -c /tmp/halo-speed.halo > ".devrun/speed/qwen3_8b.$d.halo.xz"
		rm -f /tmp/halo-speed.halo
	done
fi
if [ ! -d .gl ] || [ -z "$(ls .gl/*.deb 2>/dev/null)" ]; then
	mkdir -p .gl /tmp/amd64/partial
	o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
	apt-get $o update >/dev/null
	(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
fi
du -sh .devrun .gl
# What a run carries: the tracked tree and these (device README: 64 MiB).
carried=$(( $(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}') + $(du -sb .devrun .gl | awk '{s += $1} END {print s}') ))
echo "a run carries $((carried / 1048576)) MiB of its 64"
# A 1 MiB margin: this sum said 63 MiB for a pack the run refused as over 64
# (2026-12-05; it counts what this sum does not: directories, untracked files).
if [ "$carried" -gt $((63 << 20)) ]; then
	echo "pack.sh: over 63 MiB (a run carries at most 64, and counts a little more than this sum): pack less (PACK_TESTS=0, PACK_VALIDATION=0, fewer PACK_CUDA families)" >&2
	exit 1
fi
