#!/bin/sh
# Installs what is missing, builds halo, compiles the tiny Qwen3 fixture
# checkpoint into a bundle and generates 16 tokens with it on Vulkan (lavapipe
# when the machine has no GPU); then text in, text out: a chat turn through
# Qwen3's real tokenizer and chat template on the same tiny dims
# (tests/fixtures/qwen3_text). Its weights are seeded random numbers, so the
# reply is random words; the pipeline (template, tokenizer, generation,
# streamed UTF-8) is the one a real checkpoint runs.
set -eu
cd "$(dirname "$0")/../.."
sh tools/scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
mkdir -p build/out
./build/tools/halo compile --hf tests/fixtures/qwen3_tiny -o build/out/qwen3_tiny.halo
./build/tools/halo run build/out/qwen3_tiny.halo --backend vulkan \
	--tokens "$(od -An -v -t d4 tests/fixtures/qwen3_tiny/prompt_tokens.i32 | tr -s " \n" "," | sed "s/^,//;s/,$//")" --n-predict 16
sh tests/fixtures/qwen3_text/make_bundle.sh ./build/tools/halo build/out/qwen3_text.halo
./build/tools/halo run build/out/qwen3_text.halo --backend vulkan --chat \
	--prompt "Name three prime numbers." --n-predict 24 --seed 1
