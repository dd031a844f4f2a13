#!/usr/bin/env bash
# Run on the GPU machine (no network): `migrate-fi upgrade` on a copy of the demo project with the
# target FlashInfer installed, so that it runs verify itself and the report carries the outcome.
# Usage: bash .ci/gpu-upgrade.sh OUTDIR   (wheels in .whl/, as for .ci/gpu-proof.sh)
set -uo pipefail
out=${1:-/tmp/gpu-upgrade}
repo=$(pwd)
mkdir -p "$out"
source .ci/gpu-install.sh
cp -r "$repo/tests/fixtures/projects/demo" /tmp/demo
cd /tmp/demo && git init -q && git add -A && git -c user.email=ci@x -c user.name=ci commit -qm before
timeout 500 python3 -m migrate_fi upgrade --to "$target" > "$out/upgrade-stdout.txt" 2> "$out/upgrade-stderr.txt"
echo "upgrade exit: $?" | tee -a "$out/upgrade-stderr.txt"
cp .migrate-fi/report.md "$out/report.md"
git diff --stat > "$out/diff-stat.txt"
cat "$out/upgrade-stderr.txt"
