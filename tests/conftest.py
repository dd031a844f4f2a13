from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Fixture files are data, never tests.
collect_ignore_glob = ["fixtures/*"]

# The suite runs on the bundled API data only: a user's data folder (what `migrate-fi signatures
# update` added on this machine) must not change what the tests see. Set before any test, so that
# the subprocesses the tests start inherit it too.
os.environ["MIGRATE_FI_DATA_DIR"] = tempfile.mkdtemp(prefix="migrate-fi-test-data-")
atexit.register(shutil.rmtree, os.environ["MIGRATE_FI_DATA_DIR"], True)
# and on a result cache of its own (tests of the cache point it elsewhere)
os.environ["MIGRATE_FI_CACHE_DIR"] = tempfile.mkdtemp(prefix="migrate-fi-test-cache-")
atexit.register(shutil.rmtree, os.environ["MIGRATE_FI_CACHE_DIR"], True)
