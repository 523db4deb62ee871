# Sourced by the scripts/device-*.sh checks on a lent GPU machine (torch with CUDA, no
# torch-mlir, no network): unpack the MLIR bindings and test wheels carried in .device/,
# make the source tree importable as the `hir` package (python/hir with the top-level dialect/ and
# passes/ linked in as hir.dialect and hir.passes, as pyproject's package-dir maps them), never use
# NVLink multicast.
# Prepare .device/ here first:
#   bash ../shared/tools/device-bundle.sh
#   python scripts/device_wheels.py   (transformers and its requirements, pytest: .device/wheels)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:-/tmp/hir-device-out}
mkdir -p "$out"
python3 .device/unpack.py >/dev/null
for w in .device/wheels/*.whl; do python3 -m zipfile -e "$w" /tmp/site; done
src=/tmp/hir-src
rm -rf "$src" && mkdir -p "$src" && cp -rs "$PWD/python/hir" "$src/hir"
ln -s "$PWD/dialect" "$src/hir/dialect" && ln -s "$PWD/passes" "$src/hir/passes"
export PYTHONPATH="/tmp/site:$src${PYTHONPATH:+:$PYTHONPATH}"
# the console scripts pyproject declares (hir-run under torchrun: test_multinode.py)
mkdir -p /tmp/hir-bin
for tool in opt:hir-opt run_cli:hir-run demo:hir-demo import_cli:hir-import; do
  printf '#!/bin/sh\nexec python3 -c "import sys; from hir.tools.%s import main; sys.exit(main())" "$@"\n' "${tool%%:*}" > "/tmp/hir-bin/${tool#*:}"
  chmod +x "/tmp/hir-bin/${tool#*:}"
done
export PATH="$PATH:/tmp/hir-bin"
