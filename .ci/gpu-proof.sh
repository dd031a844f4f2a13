#!/usr/bin/env bash
# Run on the GPU machine (no network): install the carried wheels and migrate-fi itself, then
#   1. the GPU tests (tests/gpu): fp4 binding and decode plan (1 GPU), FI005's capture/replay on
#      a stand-in MoE (1 GPU), FI004's migrated workspace with a process group (2 GPUs);
#   2. the demo project: `migrate-fi apply` to the installed FlashInfer, then `migrate-fi verify`
#      with a baseline of the tree before the migration.
# Usage: bash .ci/gpu-proof.sh OUTDIR   (wheels in .whl/: flashinfer-python, apache-tvm-ffi, libcst)
set -uo pipefail
out=${1:-/tmp/gpu-proof}
repo=$(pwd)
mkdir -p "$out"
source .ci/gpu-install.sh
python3 - <<'PY' 2>&1 | tee "$out/env.txt"
import torch, flashinfer
print("torch", torch.__version__, "cuda", torch.version.cuda)
for i in range(torch.cuda.device_count()):
    print("gpu", i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
print("flashinfer", flashinfer.__version__)
PY

# the demo first (single GPU, fp4 kernels): apply, then verify against the tree before it.
# Run from /tmp, so that `python -m migrate_fi` imports what pip installed.
cd /tmp
cp -r "$repo/tests/fixtures/projects/demo" /tmp/demo
(cd /tmp/demo && git init -q && git add -A && git -c user.email=ci@x -c user.name=ci commit -qm before)
python3 -m migrate_fi apply --to "$target" /tmp/demo 2>&1 | tee "$out/demo-apply.txt"
(cd /tmp/demo && git diff --stat) | tee -a "$out/demo-apply.txt"
(cd /tmp/demo && timeout 300 python3 -m migrate_fi verify --baseline HEAD . 2>&1) | tee "$out/demo-verify.txt"
echo "verify exit: ${PIPESTATUS[0]}" | tee -a "$out/demo-verify.txt"
[ "${2:-}" = "demo-only" ] && exit 0

# then the repository's GPU tests (the two-GPU all-reduce last: it compiles for minutes)
cd /tmp && timeout 420 python3 -m pytest -q -s -rs -p no:cacheprovider \
    "$repo/tests/gpu/test_migrated_calls.py" "$repo/tests/gpu/test_graph_capture.py" \
    "$repo/tests/gpu/test_allreduce_group.py" 2>&1 | tee "$out/gpu-tests.txt"
