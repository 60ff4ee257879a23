# gpu-env.sh - sourced by the device scripts (gpu-bench.sh,
# gpu-generate.sh) with CARRY (gpu-carry.sh's folder) and W (a work
# folder) set: unpack the carried libraries into W/lib and use them,
# carried programs first in PATH, and register NVIDIA's OpenCL for
# Debian's ocl-icd loader (preloaded from the carried folder: the CUDA
# toolkit's libOpenCL lists PoCL first, NOTES.md).  KEEP_ICD=1 (a try-out
# on a machine without NVIDIA's library) keeps the system's OpenCL
# platforms.  The OpenCL program cache goes to W/cl-cache.
tar xzf "$CARRY/lib.tgz" -C "$W"
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$CARRY/bin:$PATH"
if [ "${KEEP_ICD:-0}" != 1 ]; then
	mkdir -p /tmp/icd && echo libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd
	export OCL_ICD_VENDORS=/tmp/icd
	export LD_PRELOAD="$W/lib/libOpenCL.so.1"
fi
export MODELFS_CACHE_DIR="$W/cl-cache"
