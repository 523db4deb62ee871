# Sourced by the scripts/device-*.sh checks on a lent GPU machine (torch with CUDA, no
# torch-mlir, no network): unpack the MLIR bindings and test wheels carried in .device/,
# make the source tree importable as the `hir` package (python/hir), never use NVLink multicast.
# Prepare .device/ here first:
#   bash ../shared/tools/device-bundle.sh
#   pip download --no-deps --only-binary=:all: --python-version 3.12 -d .device/wheels pytest pluggy iniconfig packaging
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/hir-device-out}
mkdir -p "$out"
python3 .device/unpack.py >/dev/null
for w in .device/wheels/*.whl; do python3 -m zipfile -e "$w" /tmp/site; done
export PYTHONPATH="/tmp/site:$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
