"""Worker processes: they start on the walk's files while the walk goes on, give the results one
process gives, serve later rounds without starting again, and stop when the walk fails."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from migrate_fi.base import depends
from migrate_fi.base.versions import parse_version
from migrate_fi.framework.rule import RunOptions
from migrate_fi.run import workers
from migrate_fi.run.registry import all_rules
from migrate_fi.run.workers import Batch, SourceFile, Work

OPTIONS = RunOptions(parse_version("0.6.10"), parse_version("0.6.11"))
IDS = tuple(c.id for c in all_rules())
CALL = "    return fp4_quantize(x, gs[:1], 16, False, True, False, True)\n"


def files(tmp_path: Path, n: int) -> list[SourceFile]:
    out = []
    for i in range(n):
        path = tmp_path / f"m{i}.py"
        data = f"from flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n{CALL}".encode()
        path.write_bytes(data)
        out.append(SourceFile(data, str(path), IDS))
    return out


def shown(results: dict) -> dict:
    return {p: [(d.line, d.code) for d in r.diagnostics] for p, r in results.items()}


def test_workers_give_one_process_s_results_and_serve_later_rounds(tmp_path: Path) -> None:
    todo = files(tmp_path, 6)
    with Batch(IDS, OPTIONS, "diff", 1, None, None, None) as alone:
        expected = alone.process(todo, {})
        assert alone._pool is None
    with Batch(IDS, OPTIONS, "diff", 2, None, None, None) as batch:
        got = batch.process(todo, {})
        pool = batch._pool
        assert pool is not None
        again = batch.process(todo[:1], {"x.y": "flashinfer.fp4_quantize"})  # a later round
        assert batch._pool is pool  # the same workers, even for one file
    assert batch._pool is None  # stopped at the end
    assert shown(got) == shown(expected) and all(shown(again).values())
    assert {p: r.new_text for p, r in got.items()} == {p: r.new_text for p, r in expected.items()}


def test_check_starts_workers_for_much_to_parse_or_a_long_walk(tmp_path: Path) -> None:
    """In check mode a few small files are parsed here (workers would cost more than they
    save); workers start when much is waiting to be parsed, or the walk was long."""
    todo = files(tmp_path, 6)
    for walked, expect in ((10, False), (workers._PARALLEL_MIN_WALK, True)):
        with Batch(IDS, OPTIONS, "check", 2, None, None, None) as batch:
            batch.process(todo, {}, walked)
            assert (batch._pool is not None) is expect, walked
    big = [f._replace(data=f.data + b"#" * workers._PARALLEL_MIN_BYTES) for f in todo[:4]]
    with Batch(IDS, OPTIONS, "check", 2, None, None, None) as batch:
        batch.process(big, {})
        assert batch._pool is not None


def test_an_interrupted_share_stops_the_workers(tmp_path: Path) -> None:
    """Interrupted, the workers are stopped at once, and the pool's thread is gone with them
    (left behind, it could take a signal meant for this process while `apply` writes)."""
    import threading

    todo = files(tmp_path, 5)
    threads = set(threading.enumerate())

    def done(f: SourceFile, result: object) -> None:
        raise KeyboardInterrupt

    with Batch(IDS, OPTIONS, "diff", 2, None, None, None) as batch:
        with pytest.raises(KeyboardInterrupt):
            args = (IDS, OPTIONS, "diff", (None, False), {})
            batch.share(
                todo,
                workers.Work(
                    workers._work,
                    lambda f: (f.data, f.path, *args, f.prefiltered),
                    lambda f: workers._work(f.data, f.path, *args, f.prefiltered),
                    done,
                    lambda f, exc: None,
                ),
            )
        assert batch._pool is None
        assert set(threading.enumerate()) <= threads


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to see the workers")
def test_workers_end_with_a_main_process_killed_outright(tmp_path: Path) -> None:
    """SIGKILL gives the main process no chance to stop its workers: they see it gone (their
    lifeline closes) and end, instead of waiting for work forever."""
    script = (
        "import os, sys, time\n"
        "from migrate_fi.run.workers import Batch\n"
        "from migrate_fi.framework.rule import RunOptions\n"
        "from migrate_fi.base.versions import parse_version\n"
        "v = parse_version('0.6.10')\n"
        "batch = Batch((), RunOptions(v, v), 'check', 2, None)\n"
        "pool = batch._started(preload=False)\n"
        "print(*pool.pids, flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_a_file_s_tree_is_freed_when_it_is_done(tmp_path: Path) -> None:
    """Nothing keeps a parsed module once its file is processed (no memo of walked trees, no
    reference cycle left for the collector): the memory of a run is that of its largest file."""
    import ast
    import gc

    from migrate_fi.run.pipeline import Mode, process_source

    data = (
        b"import flashinfer\nfrom flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n"
        + CALL.encode()
        + b"\n\nassert flashinfer.__version__ >= '0.6.10'\n"
    )

    def modules() -> int:
        return sum(isinstance(o, ast.Module) for o in gc.get_objects())

    before = modules()
    collecting = gc.isenabled()
    gc.disable()  # (freed by reference counting alone, not by a collection)
    try:
        result = process_source(data, str(tmp_path / "m.py"), all_rules(), OPTIONS, Mode.CHECK)
        assert [d.code for d in result.diagnostics]  # the rules did look at it
        assert modules() == before
    finally:
        if collecting:
            gc.enable()


def test_a_large_tree_is_read_here_and_in_the_workers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long walk is read in parts, by this process and the workers at once: the same files
    are parsed, the same sites found, the same re-exports followed as when one process reads
    everything."""
    import os

    from migrate_fi.run import engine, reading
    from migrate_fi.run.pipeline import Mode

    root = tmp_path / "tree"
    (root / "proj").mkdir(parents=True)
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "quant.py").write_text("from flashinfer import fp4_quantize as q\n")
    for i in range(workers._PARALLEL_MIN_WALK + 200):
        text = f"def f{i}(x):\n    return x\n"
        if i % 97 == 0:
            text = f"from flashinfer import fp4_quantize\n\n\ndef q(x, gs):\n{CALL}"
        elif i % 89 == 0:  # (reaches it through the project's re-export: found in a round)
            text = (
                f"from proj.quant import q\n\n\ndef g(x, gs):\n{CALL.replace('fp4_quantize', 'q')}"
            )
        (root / "proj" / f"m{i}.py").write_text(text)
    pids = tmp_path / "pids"
    read_part = reading.read_part

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        with open(pids, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        return read_part(*args, **kwargs)

    monkeypatch.setattr(reading, "read_part", recording)
    monkeypatch.setattr(engine, "read_part", recording)
    rules = all_rules()

    def run(jobs: int, use_cache: bool = False) -> list[tuple[str, str, list[tuple[int, str]]]]:
        told: list[tuple[int, ...]] = []
        result = engine.run(
            [str(root)], rules, OPTIONS, Mode.CHECK, jobs=jobs,
            progress=lambda *counts: told.append(counts), use_cache=use_cache,
        )  # fmt: skip
        n = len(result.files)  # (progress told: every file read, every site found)
        assert told[-1] == (n, n, result.parsed_count, len(result.diagnostics)), told[-3:]
        return [
            (f.path, f.status.value, [(d.line, d.code) for d in f.diagnostics])
            for f in result.files
        ]

    alone = run(1)
    assert len(set(pids.read_text().split())) == 1
    pids.unlink()
    shared = run(2)
    assert len(set(pids.read_text().split())) == 3  # this process and two workers read parts
    assert shared == alone
    found = {path for path, _, sites in alone if sites}
    n = workers._PARALLEL_MIN_WALK + 200
    direct, reexported = (
        sum(1 for i in range(n) if i % 97 == 0),
        sum(1 for i in range(n) if i % 89 == 0 and i % 97),
    )
    assert len(found) == direct + reexported > 10  # (and those through the re-export)
    # with the result cache: the run after, one file touched, has only that file to test, and
    # reads the others (their rules known to the walk memo) here, without the workers
    monkeypatch.setattr(depends, "_RECENT_NS", 0)  # (a file just written counts as settled)
    monkeypatch.setenv("MIGRATE_FI_CACHE_DIR", str(tmp_path / "cache"))
    pids.unlink()
    assert run(2, use_cache=True) == alone
    assert len(set(pids.read_text().split())) == 3
    pids.unlink()
    os.utime(root / "proj" / "m1.py", ns=(1, 1))
    monkeypatch.setattr(workers, "_PARALLEL_MIN_WALK", 2)  # (more are read than that)
    assert run(2, use_cache=True) == alone
    assert set(pids.read_text().split()) == {str(os.getpid())}


_WORK = workers._work
_PARENT: list[int] = []


def _dies_in_a_worker(data: bytes, path: str, *args: object) -> object:
    """`workers._work` in this process; in a worker, the worker dies (a crash in a parser)."""
    import os

    if os.getpid() not in _PARENT:
        os._exit(1)
    return _WORK(data, path, *args)  # type: ignore[arg-type]


def test_a_worker_that_dies_takes_only_the_files_it_had(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed on a file: that file, and whatever the workers had been given (small
    files go in groups: `workers._GROUP_FILES`), are reported as failed; this process does the
    rest, and the run goes on."""
    import os

    # (a group for each of the two workers, one waiting in the pool's queue, and one more)
    todo = files(tmp_path, 4 * workers._GROUP_FILES)
    _PARENT[:] = [os.getpid()]
    monkeypatch.setattr(workers, "_work", _dies_in_a_worker)
    with Batch(IDS, OPTIONS, "diff", 2, None, None, None) as batch:
        got = batch.process(todo, {})
    assert sorted(got) == sorted(f.path for f in todo)
    died = [p for p, r in got.items() if r.error is not None]
    assert 0 < len(died) < len(todo)
    for path in died:
        assert "worker process failed (WorkerDied)" in got[path].error.reason  # type: ignore[union-attr]
    assert all(r.new_text for p, r in got.items() if p not in died)


def test_small_files_go_to_the_workers_in_groups_and_large_ones_alone() -> None:
    """A task per small file cost this process as much as the file's analysis: consecutive
    small files are grouped (up to `_GROUP_FILES` files or `_GROUP_BYTES` bytes), a large
    file is alone, and a file to analyse first never shares a group with one that is not; the
    order the workers take them in is kept."""
    small = [SourceFile(b"x" * 100, f"/s{i}.py", ()) for i in range(40)]
    large = [SourceFile(b"x" * workers._GROUP_BYTES, f"/l{i}.py", ()) for i in range(2)]
    searching = [SourceFile(b"x" * 10, f"/f{i}.py", ("first",)) for i in range(3)]
    todo = [*small, *large, *searching]
    groups = workers._groups(todo, lambda f: bool(f.prefiltered))
    assert [f for g in groups for f in g] == todo
    assert [len(g) for g in groups] == [16, 16, 8, 1, 1, 3]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc to see the workers")
def test_a_worker_ends_with_its_task_pipe_whatever_other_workers_were_forked(
    tmp_path: Path,
) -> None:
    """A worker ends as soon as this process closes its task pipe, even while workers forked
    after it (another batch's) are alive: none of them holds that pipe open."""
    v = parse_version("0.6.10")
    first = Batch((), RunOptions(v, v), "check", 2, None)
    second = Batch((), RunOptions(v, v), "check", 2, None)
    try:
        pids = first._started(preload=False).pids
        second._started(preload=False)
        assert first._pool is not None
        first._pool.close()  # (its pipes alone: the lifeline is still open)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not any(_alive(p) for p in pids)
    finally:
        first._pool = None
        first.close()
        second.close()


def test_where_no_process_can_be_forked_the_work_is_done_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a system without `os.fork` (Windows) a batch asked for workers does the work in this
    process, with the same results."""
    todo = files(tmp_path, 6)
    with Batch(IDS, OPTIONS, "diff", 2, None, None, None) as forked:
        expected = forked.process(todo, {})
    monkeypatch.delattr(os, "fork")
    with Batch(IDS, OPTIONS, "diff", 2, None, None, None) as batch:
        assert batch.jobs == 1 and not batch.worth_reading_in_workers(10_000)
        got = batch.process(todo, {}, workers._PARALLEL_MIN_WALK)
        assert batch._pool is None
    assert shown(got) == shown(expected)
    assert {p: r.new_text for p, r in got.items()} == {p: r.new_text for p, r in expected.items()}


def test_workers_that_cannot_be_forked_leave_the_work_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork that fails (no process or memory left) is not an error: the workers forked so
    far, or none, and this process do the work, with the same results."""
    todo = files(tmp_path, 6)
    with Batch(IDS, OPTIONS, "diff", 1, None, None, None) as alone:
        expected = alone.process(todo, {})

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with Batch(IDS, OPTIONS, "diff", 2, None, None, None) as batch:
        got = batch.process(todo, {})
        assert batch._pool is not None and batch._pool.pids == []
    assert shown(got) == shown(expected)
    assert {p: r.new_text for p, r in got.items()} == {p: r.new_text for p, r in expected.items()}


def _marked(folder: str) -> tuple[int, bool]:
    """(a task done in a worker) Its process, and whether that process did its idle work."""
    return os.getpid(), os.path.exists(os.path.join(folder, str(os.getpid())))


def test_a_worker_does_its_idle_work_once_when_no_task_waits_after_one(tmp_path: Path) -> None:
    """Workers forked for the reading (the release data not loaded before: reading needs none)
    load it the first time no task waits for them after one was done, while this process
    gathers what they read: never before their first task, and once."""
    marks = tmp_path / "marks"
    marks.mkdir()

    def preload() -> None:
        with open(marks / str(os.getpid()), "a") as fh:
            fh.write("x")

    seen: list[tuple[int, bool]] = []
    work = Work(
        _marked,
        lambda t: (str(marks),),
        lambda t: (os.getpid(), False),
        lambda t, result: seen.append(result),
        lambda t, exc: pytest.fail(f"a worker failed: {exc}"),
    )
    with Batch((), OPTIONS, "check", 2, None, None, preload) as batch:
        batch.share(list(range(8)), work)
        assert batch._pool is not None
        pids = batch._pool.pids
        firsts = {pid: next(m for p, m in seen if p == pid) for pid in {p for p, _ in seen}}
        assert not any(firsts.get(pid, False) for pid in pids)
        deadline = time.monotonic() + 10
        while not all((marks / str(p)).exists() for p in pids) and time.monotonic() < deadline:
            time.sleep(0.02)
        seen.clear()
        batch.share(list(range(8)), work)
        assert all(m for p, m in seen if p in pids)
        time.sleep(0.1)
        assert sorted(m.read_text() for m in marks.iterdir()) == ["x"] * len(pids)
    assert not (marks / str(os.getpid())).exists()  # (this process never did it)


def test_a_worker_s_results_pipe_holds_a_megabyte_where_linux_lets_it() -> None:
    """A worker writes its results without waiting for this process to read them while it
    reads a part itself: its results pipe holds 1 MB (unless the system's limit is lower)."""
    fcntl = pytest.importorskip("fcntl")
    if not hasattr(fcntl, "F_GETPIPE_SZ"):
        pytest.skip("pipe sizes are Linux's")
    with open("/proc/sys/fs/pipe-max-size") as fh:
        limit = int(fh.read())
    with Batch((), OPTIONS, "check", 2, None) as batch:
        pool = batch._started(preload=False)
        sizes = [fcntl.fcntl(w.results, fcntl.F_GETPIPE_SZ) for w in pool.alive()]
    assert sizes and all(size >= min(limit, workers._WIDE) for size in sizes)


def _absent_here(word: bytes) -> list[str]:
    """(a task done in a worker) The files its process knows to be without ``word``."""
    return sorted(depends.absent(word))


def test_the_reading_tells_the_workers_which_files_hold_no_word_of_their_gate(
    tmp_path: Path,
) -> None:
    """The reading keeps the files whose text holds no word of their rules' gate
    (``flashinfer``, in any case), by those words; the workers forked before it are told
    (`Batch.tell`), for the searches of their analyses (`migrate_fi.codemods._callers`)."""
    from migrate_fi.run.pipeline import rule_tests
    from migrate_fi.run.reading import Todo, read_part

    texts = {"a.py": "import flashinfer\n", "b.py": "x = 1\n", "c.py": "# FLASHINFER\n"}
    for name, text in texts.items():
        (tmp_path / name).write_text(text)
    todo = [Todo(str(tmp_path / name), None, None) for name in texts]
    found = read_part(todo, rule_tests(list(all_rules()), OPTIONS), OPTIONS)
    assert found.without == {frozenset({b"flashinfer"}): [str(tmp_path / "b.py")]}
    work = Work(
        _absent_here,
        lambda t: (b"flashinfer_quantize",),
        lambda t: None,  # (a part this process does itself)
        lambda t, result: seen.append(result),
        lambda t, exc: pytest.fail(f"a worker failed: {exc}"),
    )
    seen: list[list[str] | None] = []
    depends.forget_stats()
    with Batch((), OPTIONS, "check", 2, None) as batch:
        batch.share(list(range(8)), work)  # (forked, knowing nothing)
        assert [] in seen and not any(seen)
        batch.tell(depends.learn_absent, (found.without,))
        seen.clear()
        batch.share(list(range(8)), work)
    by_workers = [s for s in seen if s is not None]
    assert by_workers and all(s == [str(tmp_path / "b.py")] for s in by_workers)
    assert depends.absent(b"flashinfer_quantize") == frozenset()  # (told the workers alone)


def _collecting() -> tuple[int, bool]:
    """(a task done in a worker) Its process, and whether its cycle collector is on."""
    import gc

    return os.getpid(), gc.isenabled()


@pytest.mark.parametrize(
    ("mode", "fix_details", "collects"),
    [("check", False, False), ("check", True, True), ("diff", False, True), ("apply", False, True)],
)
def test_a_worker_collects_cycles_only_in_a_run_that_applies_fixes(
    mode: str, fix_details: bool, collects: bool
) -> None:
    """A fix applied (LibCST) leaves reference cycles, which a worker collects between files; a
    `check` that applies none (no SARIF fix details) leaves the collector off in its workers, as
    in the main process."""
    import dataclasses
    import gc

    options = dataclasses.replace(OPTIONS, fix_details=fix_details)
    seen: list[tuple[int, bool]] = []
    work = Work(
        _collecting,
        lambda t: (),
        lambda t: None,  # (a part this process does itself)
        lambda t, result: seen.append(result),
        lambda t, exc: pytest.fail(f"a worker failed: {exc}"),
    )
    was = gc.isenabled()
    gc.enable()  # (whatever this process does, the run's mode decides)
    try:
        with Batch((), options, mode, 2, None) as batch:
            batch.share(list(range(8)), work)
            assert batch._pool is not None
            pids = set(batch._pool.pids)
    finally:
        if not was:
            gc.disable()
    by_workers = {s for s in seen if s is not None and s[0] in pids}
    assert by_workers and {on for _, on in by_workers} == {collects}


class _Order:
    """`Order` of a batch: the files ``then`` wait for ``first``."""

    def __init__(self, first: str, *then: str) -> None:
        self.first, self.then = first, set(then)
        self.results: dict[str, object] = {}
        self.asked: list[bool] = []  # (whether ``first`` was done when each was given out)

    def waits(self, f: SourceFile) -> bool:
        return f.path in self.then

    def awaited(self, f: SourceFile) -> bool:
        return f.path == self.first

    def ready(self, f: SourceFile) -> bool:
        return not self.waits(f) or self.first in self.results

    def aliases(self, f: SourceFile) -> dict[str, str]:
        self.asked.append(self.first in self.results)
        return {"proj.q": "flashinfer.fp4_quantize"}

    def finished(self, path: str, result: object) -> None:
        self.results[path] = result

    def chain(self, f: SourceFile) -> int:
        return len(f.data) * (2 if self.awaited(f) else 1)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_that_waits_is_analysed_after_what_it_waits_for(tmp_path: Path, jobs: int) -> None:
    todo = files(tmp_path, 6)
    first, then = todo[3].path, todo[0].path  # (in the order given, the one waiting first)
    with Batch(IDS, OPTIONS, "check", None, None, None, None) as plain:
        expected = plain.process(todo, {})
    order = _Order(first, then)
    with Batch(IDS, OPTIONS, "check", jobs, None, None, None) as batch:
        got = batch.process(todo, {}, 1000, order=order)  # (a long walk: worth the workers)
        assert (batch._pool is not None) == (jobs > 1)
    assert shown(got) == shown(expected) and set(order.results) == {f.path for f in todo}
    # here, in order; in the workers, as soon as it is ready, or when nothing else is left
    assert order.asked == [True] if jobs == 1 else len(order.asked) == 1


def test_the_workers_are_given_the_tasks_ready_first_and_never_wait() -> None:
    given: list[str] = []

    class Pool:
        def __init__(self) -> None:
            self.held: list[str] = []

        def alive(self) -> list[Pool]:
            return [self]

        def give(self, t: str, *args: object) -> None:
            given.append(t)
            self.held.append(t)

    pool = Pool()
    ignored = Work(len, lambda t: (), len, lambda t, r: None, lambda t, e: None)
    share = workers._Share(pool, ["a", "b", "c"], ignored, here_too=False)  # type: ignore[arg-type]
    share.waiting_for(lambda t: t != "c", lambda t: t == "b")  # ("b": answered by a cache)
    share._hand_out()
    assert given == ["a"]  # (the last ready one; "c" is not ready yet)
    pool.held.clear()
    share._hand_out(any_left=False)  # (before what came back is taken: only a ready one)
    assert given == ["a"] and share.waiting == ["c"]  # ("b" settled)
    share._hand_out()
    assert given == ["a", "c"] and share.waiting == []  # ("c" given all the same)


def test_a_run_the_cache_answers_whole_starts_no_worker_for_files_that_wait(
    tmp_path: Path,
) -> None:
    from migrate_fi.run.cache import ResultCache

    todo = files(tmp_path, 6)
    folder = str(tmp_path / "cache")
    time.sleep(2.1)  # (a file changed within two seconds is never trusted by its stat)

    def run() -> tuple[dict, _Order, bool]:
        # (four files wait: enough to be worth the workers, were they not answered)
        order = _Order(todo[3].path, *(todo[i].path for i in (0, 1, 2, 4)))
        cache = ResultCache(IDS, OPTIONS, folder)
        walk = cache.walk()  # (what the engine does first: the last run's entries)
        with Batch(IDS, OPTIONS, "check", 2, None, cache, None) as batch:
            found = batch.process(todo, {}, 1000, order=order)  # (a long walk: workers)
            started = batch._pool is not None
        cache.save_walk(walk)
        return found, order, started

    got, _, started = run()
    assert started
    cached, order, started = run()
    assert not started  # (the waiting files too, once what they wait for is answered)
    assert shown(cached) == shown(got) and order.asked == [True] * 4
