#!/usr/bin/env bash
# Run on the GPU machine (no network): FlashInfer's own tests of an older release, migrated by
# migrate-fi to the flashinfer-python wheel in .whl/, against that wheel; beside them the same
# tests unmigrated against the newer wheel, and unmigrated against the older wheel (the baseline).
# Only the test files the migration changed are run (FlashInfer's suite compiles kernels on first
# use: the whole of it does not fit in a device session). The migration passes when its files
# give no failure and no warning that the baseline does not.
# Usage: bash .ci/fi-tests-proof.sh OUTDIR ROOT OLD_WHEEL
#   ROOT: a folder holding the older release's `tests/` (FlashInfer's repository at its tag)
#   OLD_WHEEL: that release's flashinfer-python wheel
set -uo pipefail
out=$(realpath -m "$1"); root=$(realpath "$2"); old_wheel=$(realpath "$3"); repo=$(pwd)
mkdir -p "$out"
source .ci/gpu-install.sh
new=$target
old=$(basename "$old_wheel" | cut -d- -f2)
echo "older release $old, newer release $new" | tee "$out/env.txt"
python3 -c 'import torch; print("gpu", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))' \
    | tee -a "$out/env.txt"

rm -rf /tmp/fi-original /tmp/fi-migrated /tmp/site-old
cp -r "$root" /tmp/fi-original
cp -r "$root" /tmp/fi-migrated
cd /tmp/fi-migrated
git init -q && git add -A && git -c user.email=ci@x -c user.name=ci commit -qm before
python3 -m migrate_fi apply --unsafe-fixes --from "$old" --to "$new" tests >"$out/apply.txt" 2>&1
echo "apply exit: $?" >>"$out/apply.txt"
git diff >"$out/migration.diff"
mapfile -t changed < <(git diff --name-only)
printf '%s\n' "${changed[@]}" | tee "$out/changed.txt"

run() {  # label, folder, PYTHONPATH
    (cd "$2" && PYTHONPATH="$3" timeout 420 python3 -m pytest -q -rfEs -p no:cacheprovider -W default \
        --junitxml="$out/$1.xml" "${changed[@]}" >"$out/$1.txt" 2>&1)
    echo "$1: exit $? $(tail -n 1 "$out/$1.txt")" | tee -a "$out/summary.txt"
}
run "$new-migrated" /tmp/fi-migrated /tmp/mfi:/tmp/site
run "$new-original" /tmp/fi-original /tmp/mfi:/tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site-old "$old_wheel" \
    "$repo"/.whl/apache_tvm_ffi-*.whl
run "$old-original" /tmp/fi-original /tmp/site-old
