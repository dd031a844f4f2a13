#!/usr/bin/env bash
# Run on the GPU machine (no network): install the carried wheels and migrate-fi itself, then run
# the GPU tests and the migrated demo project's GPU test against the real FlashInfer.
# Usage: bash .ci/gpu-proof.sh OUTDIR   (wheels in .whl/: flashinfer-python, apache-tvm-ffi, libcst)
set -uo pipefail
out=${1:-/tmp/gpu-proof}
mkdir -p "$out"
rm -rf /tmp/site /tmp/mfi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/mfi . || exit 1
export PYTHONPATH=/tmp/mfi:/tmp/site PYTHONUNBUFFERED=1
python3 - <<'PY' 2>&1 | tee "$out/env.txt"
import torch, flashinfer
print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())
print("flashinfer", flashinfer.__version__)
PY
cd /tmp && python3 -m pytest -q -s -rs -p no:cacheprovider "$OLDPWD/tests/gpu" 2>&1 | tee "$out/gpu-tests.txt"
rm -rf /tmp/demo && cp -r "$OLDPWD/tests/fixtures/projects/demo" /tmp/demo
python3 -m migrate_fi apply --to "$(python3 -c 'import flashinfer; print(flashinfer.__version__)')" /tmp/demo 2>&1 | tee "$out/demo-apply.txt"
python3 -m pytest -q -rs -p no:cacheprovider /tmp/demo/tests 2>&1 | tee "$out/demo-tests.txt"
