#!/bin/sh
# Prepares what a run on the lent GPU machine carries (the scripts: README.md, "Tests, benchmarks, GPU runs"):
# .devrun/bin.tar.xz  release builds of halo, the benchmarks and (unless
#                     PACK_TESTS=0) the Vulkan test programs
# .devrun/lib.tar.xz  the shared libraries they need beyond glibc and the loader
# .devrun/deb/        Debian's validation layer (the tests run with it on)
# .devrun/<fixture>_cuda.halo.xz  each model's tiny fixture (qwen3_tiny,
#                     qwen3_next_tiny, qwen3_5_moe_tiny, qwen4_exp_tiny)
#                     compiled with the cuda-sm90 target (the GPU machine has
#                     no clang-19 to make PTX; the PTX text compresses 4x):
#                     tools/gpu/gpu-backend.sh runs them
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
progs="tools/halo tests/runtime/test_qwen3_oracle tests/runtime/test_gpu_backend bench/matvec_bench bench/matmul_bench bench/read_bw bench/spec_bench"
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
# FAMILY_tiny with models/FAMILY.yaml, as tests/runtime/test_gpu_backend.c pairs them
# (PACK_CUDA=0: none, for runs that do not use tools/gpu/gpu-backend.sh).
for f in $([ "${PACK_CUDA:-1}" != 0 ] && echo qwen3_tiny qwen3_next_tiny qwen3_5_moe_tiny qwen4_exp_tiny); do
	build-dev/tools/halo compile --model "models/${f%_tiny}.yaml" --hf "tests/fixtures/$f" --targets ref,vulkan,cuda \
		-o ".devrun/${f}_cuda.halo"
	xz -9 ".devrun/${f}_cuda.halo"
done
if [ ! -d .gl ] || [ -z "$(ls .gl/*.deb 2>/dev/null)" ]; then
	mkdir -p .gl /tmp/amd64/partial
	o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
	apt-get $o update >/dev/null
	(cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 >/dev/null)
fi
du -sh .devrun .gl
