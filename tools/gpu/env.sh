# Sourced on the GPU machine from the repository root: unpacks what
# tools/gpu/pack.sh prepared and sets the environment the binaries need.
# Unpacked once per machine: the scripts of one call share it.
if [ ! -x /tmp/halo/halo-bin/halo ]; then
	for f in .gl/*.deb; do dpkg -x "$f" /; done
	ldconfig
	mkdir -p /tmp/vvl /tmp/halo
	# the validation layer: left out of a pack whose runs need none (the
	# carried tree's 64 MiB limit)
	for f in .devrun/deb/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/vvl; done
	xz -dc .devrun/bin.tar.xz | tar -C /tmp/halo -xf -
	mkdir -p /tmp/halo/lib
	xz -dc .devrun/lib.tar.xz | tar -C /tmp/halo/lib -xf -
fi
export HALO_BIN=/tmp/halo/halo-bin
export LD_LIBRARY_PATH="/tmp/halo/lib:/tmp/vvl/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VK_LAYER_PATH=/tmp/vvl/usr/share/vulkan/explicit_layer.d
export HALO_SOURCE_ROOT="$PWD"
export HALO_MODELS_DIR="$PWD/models"
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "$icd" ]; then
	export VK_DRIVER_FILES="$icd"
	export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
