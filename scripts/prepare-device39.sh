#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for scripts/device-multi.sh, issue 39's multi-GPU sweep, on a
# GPU machine that has torch but no torch-mlir FX importer, no pytest and no network. Run it
# here, in the checkout the device call sends, with its venv active (a few minutes on the
# 2-core machine), then carry .device:
#   bash scripts/prepare-device39.sh
#   device run: OUT=$OUT bash scripts/device-multi.sh   (carry: .device)
# What it makes:
#   torch_mlir_cp312.tar.xz, unpack.py  the MLIR Python bindings (shared/tools/device-bundle.sh;
#                                       kept while its version is current)
#   wheels/      pytest and what it needs (pure Python, pinned)
#   layer/       benchmarks/layer.py's TP and SP LLaMA layer modules for 2, 4 and 8 GPUs
#   tp_overlap/  benchmarks/tp_overlap.py's TP and SP MLP modules for 2, 4 and 8 GPUs
#   tp_decode/   benchmarks/tp_decode.py's decode step of the ~1B Llama for 2, 4 and 8 GPUs (~0.8 MB each)
#   p2p_matrix.tar.xz  test_p2p_matrix_gpu.py's distinct lowered programs for 2 and 4 GPUs
# The modules are imported again on every run (they follow the frontend); no weights travel
# (each GPU rank builds them from seed 0), so each module is tens of KB.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
python=${PYTHON:-python}
worlds=${HIR_DEVICE_WORLDS:-2,4,8}
version=20261001  # device-bundle.sh's torch-mlir (the pinned wheel)
mkdir -p .device

tool=${HIR_DEVICE_BUNDLE:-}
for dir in ../shared/tools ../../shared/tools; do
  [ -z "$tool" ] && [ -f "$dir/device-bundle.sh" ] && tool=$(cd "$dir" && pwd)/device-bundle.sh
done
if [ -f .device/torch_mlir_cp312.tar.xz ] && [ "$(cat .device/version 2>/dev/null)" = "$version" ]; then
  echo "MLIR bindings bundle up to date"
elif [ -z "$tool" ]; then
  echo "prepare-device39: device-bundle.sh not found in ../shared/tools or ../../shared/tools (set HIR_DEVICE_BUNDLE)" >&2
  exit 1
elif [ -d .git ]; then
  bash "$tool"
else  # a git worktree: .git is a file, and the tool writes .git/info/exclude; bundle in a scratch repository
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  git -C "$scratch" init -q
  (cd "$scratch" && bash "$tool")
  mv "$scratch"/.device/torch_mlir_cp312.tar.xz "$scratch"/.device/unpack.py "$scratch"/.device/version .device/
fi

rm -rf .device/wheels
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  -d .device/wheels pytest==9.0.3 pluggy==1.6.0 iniconfig==2.3.0 packaging==26.2

rm -rf .device/layer .device/tp_overlap .device/tp_decode
"$python" benchmarks/layer.py --emit .device/layer --worlds "$worlds"
"$python" benchmarks/tp_overlap.py --emit .device/tp_overlap --worlds "$worlds"
"$python" benchmarks/tp_decode.py --emit .device/tp_decode --worlds "$worlds"
# the option matrix's programs, lowered here (1280 pipelines per world size, the TP form with allreduce=rs-ag|chunked: minutes of CPU)
"$python" test/python/test_p2p_matrix_gpu.py --emit-lowered .device/p2p_matrix.tar.xz

du -sh .device
size=$(du -sm .device | cut -f1)
[ "$size" -le 40 ] || echo "prepare-device39: warning: .device is $size MB (over 40)" >&2
