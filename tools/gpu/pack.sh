#!/bin/sh
# Prepares what a run on the lent GPU machine carries (the scripts: README.md, "Tests, benchmarks, GPU runs"):
# .devrun/bin.tar.xz  release builds of halo, the benchmarks and (unless
#                     PACK_TESTS=0) the Vulkan test programs
# .devrun/lib.tar.xz  the shared libraries they need beyond glibc and the loader
# .devrun/deb/        Debian's validation layer (the tests run with it on)
# .devrun/bundles/    the test bundles tools/gpu/gpu-backend.sh runs on the
#                     cuda backend, compiled with the cuda-sm90 target (the
#                     GPU machine has no clang-19 to make PTX; the PTX text
#                     compresses 4x), named as the tests look them up
#                     (tests/runtime/model_check.h, mc_use_prebuilt):
#                     <fixture>.<model>.f32.cuda.halo.xz for each model's
#                     fixtures, hybrid_tiny.random11.cuda.halo.xz
# .devrun/ops_cuda.tar.xz  the backend op suite's case bundles with the
#                     cuda-sm90 target (tests/ops/backend_ops --write, about
#                     2.2 MB in xz): tools/gpu/backend-ops.sh runs them
# .gl/                the Vulkan loader packages (the device README's recipe)
# The GPU machine has no package manager access and no meson, so everything is
# built here; the binaries need glibc >= 2.36. What a run carries, the tracked
# tree included, must stay under 64 MiB: with the trained checkpoints of
# models/trained the tree is ~53 MB, so the libraries travel compressed and a
# run that needs no test programs packs without them (PACK_TESTS=0: 3.6 MB of
# binaries instead of 9.2), and one that runs no cuda bundles without those
# (PACK_CUDA=0).
set -eu
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.devrun/' "$exclude" 2>/dev/null || echo /.devrun/ >> "$exclude"
grep -qx '/.gl/' "$exclude" 2>/dev/null || echo /.gl/ >> "$exclude"

[ -f build-dev/build.ninja ] || meson setup build-dev --buildtype=release -Dfuzzers=disabled
progs="tools/halo tests/runtime/test_qwen3_oracle tests/runtime/test_gpu_backend tests/ops/backend_ops bench/matvec_bench bench/matmul_bench bench/read_bw bench/spec_bench"
# The model tests gpu-backend.sh runs on cuda (PACK_CUDA=0: none).
cuda_tests="tests/runtime/test_gdn_oracle tests/runtime/test_mtp_oracle tests/runtime/test_spec_exact tests/runtime/test_checkpoint tests/runtime/test_session_logits"
[ "${PACK_CUDA:-1}" != 0 ] && progs="$progs $cuda_tests"
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
(cd .devrun/deb && apt-get download vulkan-validationlayers >/dev/null)
# Each fixture with its model, as the tests pair them, and the checkpoint
# test's random-weight hybrid graph (PACK_CUDA=0: none, for runs that use
# neither tools/gpu/gpu-backend.sh nor tools/gpu/backend-ops.sh). Without the Vulkan section (the tests run
# them on cuda and ref only) they are a quarter smaller, which the carried
# tree's limit needs.
cuda_bundle() { # name, halo compile arguments...
	name=$1; shift
	build-dev/tools/halo compile "$@" --dtype f32 --targets ref,cuda -o ".devrun/bundles/$name.cuda.halo"
	xz -9 ".devrun/bundles/$name.cuda.halo"
}
if [ "${PACK_CUDA:-1}" != 0 ]; then
	mkdir -p .devrun/bundles .devrun/hybrid
	for fm in qwen3_tiny:qwen3 qwen3_next_tiny:qwen3_next qwen3_5_moe_tiny:qwen3_5_moe qwen4_exp_tiny:qwen4_exp \
		deepseek_v4_tiny:deepseek_v4 deepseek_v4_b:deepseek_v4; do
		f=${fm%%:*} m=${fm#*:}
		cuda_bundle "$f.$m.f32" --model "models/$m.yaml" --hf "tests/fixtures/$f"
	done
	cp tests/models/hybrid_tiny.config.json .devrun/hybrid/config.json
	cuda_bundle hybrid_tiny.random11 --model tests/models/hybrid_tiny.yaml --hf .devrun/hybrid --random-weights 11
	rm -rf .devrun/hybrid
	# The op suite's cases keep their Vulkan section: backend-ops.sh runs
	# each on Vulkan and cuda.
	mkdir .devrun/ops_cuda
	build-dev/tests/ops/backend_ops --write .devrun/ops_cuda vulkan,cuda
	tar -C .devrun/ops_cuda -cf - . | xz -9 > .devrun/ops_cuda.tar.xz
	rm -rf .devrun/ops_cuda
fi
if [ ! -d .gl ] || [ -z "$(ls .gl/*.deb 2>/dev/null)" ]; then
	mkdir -p .gl /tmp/amd64/partial
	o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
	apt-get $o update >/dev/null
	(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
fi
du -sh .devrun .gl
