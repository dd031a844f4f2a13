"""The caches never answer stale: after any change of any input a `check` may depend on, a run
with the caches prints what `--no-cache` prints (`tests/stale_scenarios.py` builds each case:
a caller edited with its stat put back, `cp -p`, a `.git` made above, an `__init__.py` that
appears or goes, a `-r` include that appears, a user value map edited with its stat put back,
the cache folder inside or around the project). A scenario whose change does not change the
`--no-cache` answer proves nothing and fails too."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from stale_scenarios import SCENARIOS, Outcome

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX file times and cp -p"),
]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Outcome]:
    # (each scenario mostly waits for file times to settle: they run side by side)
    with ThreadPoolExecutor(max_workers=6) as pool:
        done = list(pool.map(lambda f: f(), SCENARIOS))
    return {f.__name__: o for f, o in zip(SCENARIOS, done, strict=True)}


@pytest.mark.parametrize("name", [f.__name__ for f in SCENARIOS])
def test_the_cached_answer_is_the_uncached_one(outcomes: dict[str, Outcome], name: str) -> None:
    outcome = outcomes[name]
    assert outcome.verdict == "SAME", outcome.line()
