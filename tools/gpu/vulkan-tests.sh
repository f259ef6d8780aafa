#!/bin/sh
# Builds halo with meson and runs the Vulkan kernel suite on this machine's
# GPU (e.g. an NVIDIA H200 through its Vulkan ICD), with the validation layer
# on (every kernel test fails on any validation message).
#
# usage: tools/gpu/vulkan-tests.sh [BUILD_DIR] [-- extra `meson test` args]
# BUILD_DIR defaults to build-gpu. The environment is passed through, so
# VK_ICD_FILENAMES, VK_LAYER_PATH, LD_LIBRARY_PATH (a carried loader) and
# MESON_TESTTHREADS work as usual.
set -eu

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build-gpu}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" --buildtype=debugoptimized
fi
ninja -C "$build"

command -v vulkaninfo >/dev/null 2>&1 && vulkaninfo --summary 2>/dev/null | sed -n '/Devices:/,$p' || true
# GPU kernels are fast; keep the timeout multiplier at 1 and show each test's output.
exec meson test -C "$build" --suite kernels --print-errorlogs "$@"
