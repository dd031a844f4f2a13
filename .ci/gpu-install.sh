# Sourced by .ci/gpu-proof.sh and .ci/gpu-upgrade.sh on the GPU machine (no network): installs the
# carried wheels (.whl/) and migrate-fi itself into /tmp, puts them first on the paths, and sets
# `target` to the installed flashinfer-python version.
rm -rf /tmp/site /tmp/mfi /tmp/demo
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/mfi . || exit 1
export PYTHONPATH=/tmp/mfi:/tmp/site PYTHONUNBUFFERED=1
export PATH=/tmp/mfi/bin:$PATH
target=$(python3 -c 'import importlib.metadata as m; print(m.version("flashinfer-python"))')
