"""The `migrate-fi` command line (click). Only this module and `reporting` print."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

import click

from migrate_fi import __version__
from migrate_fi.base.results import RunResult
from migrate_fi.project.config import Config

if TYPE_CHECKING:
    from migrate_fi.outputs.report import Report
    from migrate_fi.project.current import PinSearch
    from migrate_fi.project.migration import MigrationRange
    from migrate_fi.project.record import ApplyRecord, LeftSite

INTERRUPTED = 130

EXIT_CODES = """\b
Exit codes:
  0    nothing to migrate (check, diff); every site fixed (apply)
  1    migrations found (check, diff); sites left for a person (apply)
  2    an error: bad usage, or a file that could not be read, parsed or written
  130  interrupted (Ctrl-C, SIGTERM): apply says which files it had rewritten"""


class Fatal(click.ClickException):
    """A one-line error; exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"migrate-fi: error: {self.format_message()}", err=True)


def _split(values: tuple[str, ...] | None) -> list[str]:
    return [v.strip() for value in values or () for v in value.split(",") if v.strip()]


@dataclass
class _Common:
    """The options shared by check, diff and apply, as given on the command line (None: not
    given, so the configuration or the default decides)."""

    paths: tuple[str, ...]
    from_version: str | None
    to_version: str | None
    select: tuple[str, ...]
    ignore: tuple[str, ...]
    exclude: tuple[str, ...]
    output_format: str | None
    jobs: int | None
    exit_zero: bool
    keywords: str | None
    respect_gitignore: bool | None
    unsafe_fixes: bool | None
    config: str | None
    changed_since: str | None = None


@dataclass
class _Settled:
    """The shared options after the configuration: what a run actually uses."""

    paths: tuple[str, ...]
    config: Config
    output_format: str
    unsafe_fixes: bool
    keywords: str
    respect_gitignore: bool
    select: list[str]
    ignore: list[str]
    exclude: list[str]


def _common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]..."),
        click.option(
            "--from",
            "from_version",
            metavar="VERSION",
            help="FlashInfer version the code is written for now"
            " (default: read from the project's flashinfer-python pin).",
        ),
        click.option(
            "--to",
            "to_version",
            metavar="VERSION",
            help="FlashInfer version to migrate to (default: the newest release known).",
        ),
        click.option(
            "--select",
            multiple=True,
            metavar="RULES",
            help="Run only these rules: codes (FI001), code prefixes (FI0) or ids; repeatable or comma-separated.",
        ),
        click.option("--ignore", multiple=True, metavar="RULES", help="Do not run these rules."),
        click.option(
            "--exclude",
            multiple=True,
            metavar="GLOB",
            help="Skip paths matching this gitignore-style pattern (relative to the current folder); repeatable. Adds to the configuration's.",
        ),
        click.option(
            "--output-format",
            type=click.Choice(["text", "json", "github", "sarif"]),
            default=None,
            help="How to print findings (default: text); sarif: SARIF 2.1.0, fixes included.",
        ),
        click.option(
            "-j",
            "--jobs",
            type=click.IntRange(min=0),
            default=None,
            help="Worker processes that read and analyse files (default, or 0: one per CPU;"
            " 1: none, everything in this process).",
        ),
        click.option(
            "--exit-zero",
            is_flag=True,
            help="Exit 0 even when migrations are found (errors still exit 2).",
        ),
        click.option(
            "--keywords",
            type=click.Choice(["tail", "all"]),
            default=None,
            help="For calls whose positional arguments bind differently: name only the arguments"
            " that moved (tail, the default), or every positional argument (all).",
        ),
        click.option(
            "--unsafe-fixes/--no-unsafe-fixes",
            default=None,
            help="Also apply fixes marked `review` (shown by check and diff, held back by default).",
        ),
        click.option(
            "--no-gitignore",
            "respect_gitignore",
            flag_value=False,
            default=None,
            help="Also look at files that .gitignore excludes.",
        ),
        click.option(
            "--changed-since",
            metavar="REF",
            default=None,
            help="Only the files that differ from git REF (committed since, staged or not) or"
            " are untracked. Re-exports in other files are not followed.",
        ),
        click.option(
            "--config",
            type=click.Path(dir_okay=False),
            default=None,
            help="The pyproject.toml to read [tool.migrate-fi] from (default: the nearest one"
            " above the first path that has that table).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _range_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """PATH..., --from, --to and a text/json --output-format: what `plan` and `usage` take."""
    options = [
        click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]..."),
        click.option(
            "--from", "from_version", metavar="VERSION", help="Override the detected version."
        ),
        click.option(
            "--to", "to_version", metavar="VERSION", help="Target (default: newest known)."
        ),
        click.option(
            "--output-format",
            type=click.Choice(["text", "json"]),
            default="text",
            show_default=True,
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _load_config(paths: tuple[str, ...], explicit: str | None) -> Config:
    from migrate_fi.project.config import ConfigError, find_config, load_config
    from migrate_fi.run.registry import rule_options

    try:
        if explicit is not None and not os.path.isfile(explicit):
            raise ConfigError(f"{explicit}: no such file")
        return load_config(explicit or find_config(paths), rule_options)
    except ConfigError as exc:
        raise Fatal(str(exc)) from None


def _settle(common: _Common, config_path: str | None = None) -> _Settled:
    """Command line over configuration over defaults (``config_path``: the configuration to
    read where none is named or found upward)."""
    paths = common.paths or (".",)
    config = _load_config(paths, common.config or config_path)

    def pick(given: Any, key: str, default: Any) -> Any:
        return given if given is not None else config.get(key, default)

    select = _split(common.select) or list(config.get("select", ()))
    ignore = _split(common.ignore) or list(config.get("ignore", ()))
    return _Settled(
        paths=paths,
        config=config,
        output_format=pick(common.output_format, "output-format", "text"),
        unsafe_fixes=pick(common.unsafe_fixes, "unsafe-fixes", False),
        keywords=pick(common.keywords, "keywords", "tail"),
        respect_gitignore=pick(common.respect_gitignore, "respect-gitignore", True),
        select=select,
        ignore=ignore,
        exclude=list(common.exclude),
    )


def _plural_files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _changed_files(paths: tuple[str, ...], ref: str | None) -> set[str] | None:
    if ref is None:
        return None
    from migrate_fi.project.vcs import VcsError, changed_since

    try:
        return changed_since(ref, paths)
    except VcsError as exc:
        raise Fatal(str(exc)) from None


def _refuse_dirty(paths: tuple[str, ...], ours: frozenset[str] = frozenset()) -> None:
    """apply mixes no migration into uncommitted work: it would be one diff with it. ``ours``:
    absolute paths of files the migration in progress wrote itself, which do not count."""
    from migrate_fi.project.vcs import VcsError, dirty_files

    try:
        dirty = dirty_files(paths or (".",))
    except VcsError as exc:
        raise Fatal(f"cannot ask git whether the tree has uncommitted changes: {exc}") from None
    dirty = [p for p in dirty or () if os.path.abspath(p) not in ours]
    if dirty:
        shown = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        raise Fatal(
            f"uncommitted changes in {shown}: commit or stash them first, so that the migration"
            " is a diff of its own (or pass --allow-dirty)"
        )


def _range_and_rules(
    paths: tuple[str, ...],
    from_version: str | None,
    to_version: str | None,
    select_: list[str] | None = None,
    ignore: list[str] | None = None,
    found: PinSearch | None = None,
) -> tuple[Any, Any]:
    """The run's range (`migrate_fi.project.migration.MigrationRange`: --from defaults to the project's
    pin, or to the migration in progress) and the rules selected for it."""
    from migrate_fi.project.migration import RangeError, resolve_range
    from migrate_fi.run.registry import SelectionError, select

    try:
        span = resolve_range(paths, from_version, to_version, found)
        selection = select(span.from_version, span.to_version, select_ or (), ignore or ())
    except (RangeError, SelectionError) as exc:
        raise Fatal(str(exc)) from None
    return span, selection


def _given(cli_value: str | None, config: Config, key: str) -> str | None:
    """The command line's value, else the configuration's (an empty string is a value)."""
    return cli_value if cli_value is not None else config.get(key)


def _execute(
    common: _Common, mode: str, use_cache: bool = False
) -> tuple[RunResult, _Settled, MigrationRange]:
    """Settle the options and run: the tree as one migration, or, where it holds projects
    pinned to different releases, project by project (`migrate_fi.project.subprojects`), the results
    made one (the range returned is the first project's, with every project's in ``parts``)."""
    from migrate_fi.project.current import search_pins
    from migrate_fi.project.subprojects import split

    try:
        os.getcwd()
    except OSError as exc:
        raise Fatal(f"the current folder cannot be read ({exc.strerror}): cd into one") from None
    settled = _settle(common)
    for p in settled.paths:
        if not os.path.lexists(p):
            raise Fatal(f"{p}: no such file or folder")
    found = search_pins(list(settled.paths))  # (read once: the split and the range ask)
    if settled.config.path is None and len(found.configs) == 1:
        # none upward from the first path, and one under the paths (a repository whose one
        # package lives in a folder, as SGLang's python/): the project's
        settled = _settle(common, found.configs[0])
    # (a configuration named on the command line is the one meant: no other is)
    unread = [] if common.config else _unread_configs(found.configs, settled.config.path)
    from_given = _given(common.from_version, settled.config, "from")
    parts = split(settled.paths, from_given, found) if common.changed_since is None else None
    if parts is None:
        result, span = _execute_range(
            common, settled, mode, use_cache, settled.paths, from_given, found=found
        )
        result.notices += unread
        return result, settled, span
    results: list[tuple[RunResult, MigrationRange]] = []
    for part in parts:
        result, span = _execute_range(
            common, settled, mode, False, part.paths, part.from_given, part.excluded
        )
        result.notices[:0] = [n for n in (part.tree_note, part.note) if n]
        results.append((result, span))
    merged = _merged(results)
    merged.notices += unread
    return merged, settled, _with_parts(results)


def _unread_configs(configs: list[str], used: str | None) -> list[str]:
    """A notice for each ``[tool.migrate-fi]`` table under the checked paths that the run does
    not read: one configuration applies to a run, the nearest upward from the first path, else
    the one table under the paths (tables are not merged: a CI gate must not change with the
    folder it starts from)."""
    out = []
    for path in configs:
        if used is not None and os.path.realpath(path) == os.path.realpath(used):
            continue
        shown = os.path.relpath(path)
        out.append(
            f"{shown} has a [tool.migrate-fi] table this run does not read"
            + (
                f" (it reads {os.path.relpath(used)}, the nearest one upward from the first path"
                " given)"
                if used
                else f" (it reads none: {len(configs)} tables under the paths given)"
            )
            + f"; pass --config {shown}, or check {os.path.dirname(shown) or '.'}/ on its own"
        )
    return out


def _merged(results: list[tuple[RunResult, MigrationRange]]) -> RunResult:
    """The results of a run by projects as one (each file is in one project's run)."""
    first = results[0][0]
    out = RunResult(
        from_version=first.from_version,
        to_version=first.to_version,
        unsafe_fixes=first.unsafe_fixes,
    )
    for result, span in results:
        out.files += result.files
        out.pending += result.pending
        out.rules += [code for code in result.rules if code not in out.rules]
        where = f"{os.path.relpath(span.root)}: " if len(results) > 1 else ""
        out.notices.append(
            f"{where}FlashInfer {result.from_version} -> {result.to_version}"
            f" ({_plural_files(len(result.files))})"
        )
        out.notices += [n for n in result.notices if n not in out.notices]
    return out


def _with_parts(results: list[tuple[RunResult, MigrationRange]]) -> MigrationRange:
    span = results[0][1]
    span.parts = [(s, [f.path for f in r.files]) for r, s in results]
    return span


def _execute_range(
    common: _Common,
    settled: _Settled,
    mode: str,
    use_cache: bool,
    paths: tuple[str, ...],
    from_given: str | None,
    excluded: list[str] | None = None,
    found: PinSearch | None = None,
) -> tuple[RunResult, MigrationRange]:
    """One run over ``paths`` for one range (``excluded``: folders left to another run;
    ``found``: their pins, where they were read already)."""
    from migrate_fi.framework.rule import KeywordStyle, RuleSetupError, RunOptions
    from migrate_fi.project.discovery import DiscoveryError
    from migrate_fi.run import warm
    from migrate_fi.run.engine import run
    from migrate_fi.run.pipeline import Mode

    config = settled.config
    only = _changed_files(paths, common.changed_since)
    span, selection = _range_and_rules(
        paths,
        from_given,
        _given(common.to_version, config, "to"),
        settled.select,
        settled.ignore,
        found,
    )
    from_v, to_v = span.from_version, span.to_version
    options = RunOptions(
        from_v,
        to_v,
        KeywordStyle(settled.keywords),
        settled.unsafe_fixes,
        selection.settings(config.rules),
        selection.unused_suppressions,
        fix_details=settled.output_format == "sarif",
        pinned=span.pinned,
    )
    progress = _ProgressLine() if sys.stderr.isatty() else None
    config_excludes = config.get("exclude", ())
    excludes_at = [(config.folder, list(config_excludes))] if config_excludes else []
    excludes_at += [(os.path.dirname(f), [f"/{os.path.basename(f)}/"]) for f in excluded or ()]
    try:
        result = run(
            paths,
            selection.rules,
            options,
            Mode(mode),
            exclude=settled.exclude,
            jobs=common.jobs,
            respect_gitignore=settled.respect_gitignore,
            progress=progress,
            excludes_at=excludes_at,
            only=only,
            use_cache=use_cache and os.environ.get("MIGRATE_FI_NO_CACHE") != "1",
            recording=warm.recording() if use_cache else None,
        )
    except (DiscoveryError, RuleSetupError) as exc:
        raise Fatal(str(exc)) from None
    finally:
        if progress is not None:
            progress.close()
    result.from_version, result.to_version = str(from_v), str(to_v)
    result.rules = [c.code for c in selection.rules]
    result.notices = [*span.notices, *selection.dropped, *span.problems, *result.notices]
    if span.record is not None and span.record.in_progress:
        from migrate_fi.project.carryover import carry_over, pending_here

        carry_over(span.root, span.record, result)
        if mode != "apply":  # (apply says what it could not write itself)
            result.pending = pending_here(span.root, span.record, paths)
        result.notices += [
            f"{p.path}: not migrated yet (the last apply could not: {p.reason});"
            " `migrate-fi apply` migrates it"
            for p in result.pending
        ]
    if only is not None:
        result.notices.append(
            f"--changed-since {common.changed_since}: {len(result.files)} of the"
            f" {_plural_files(len(only))} changed in git are under the given paths and read"
        )
    return result, span


@dataclass
class _Writes:
    """What apply's writes rewrote, once they are done, and the record of them."""

    written: list[str] = field(default_factory=list)
    record: str | None = None


_WRITES: ContextVar[_Writes] = ContextVar("migrate_fi_writes")


def _tells_writes(command: Callable[..., None]) -> Callable[..., None]:
    """A command that writes (`_write_and_record`): interrupted after its writes (printing what
    is left, verify, the report), it still says what they rewrote."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        told = _Writes()
        token = _WRITES.set(told)
        try:
            command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            if isinstance(exc, ApplyInterrupted) or not told.written:
                raise
            raise ApplyInterrupted(_signal_name(exc), told.written, told.record) from None
        finally:
            _WRITES.reset(token)

    return run


def _signal_name(exc: KeyboardInterrupt) -> str:
    return "SIGTERM" if isinstance(exc, Terminated) else "SIGINT (Ctrl-C)"


class _ProgressLine:
    """How far a run is, on one line of stderr (a terminal): shown once the run has taken
    ``delay`` seconds, redrawn at most every ``every`` seconds, erased at the end."""

    def __init__(self, delay: float = 2.0, every: float = 0.1) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._delay, self._every = delay, every
        self._last = float("-inf")
        self._shown = False

    def __call__(self, read: int, total: int, parsed: int, sites: int) -> None:
        now = self._clock()
        if now - self._start < self._delay or now - self._last < self._every:
            return
        self._last, self._shown = now, True
        line = f"{read:,} of {total:,} files read, {parsed:,} parsed, {sites:,} site(s) so far"
        click.echo(f"\r\033[K{line}", nl=False, err=True)

    def close(self) -> None:
        if self._shown:
            click.echo("\r\033[K", nl=False, err=True)


def _finish(
    result: RunResult,
    common: _Common,
    settled: _Settled,
    command: str,
    found: bool,
    listed: Any = None,
) -> None:
    from migrate_fi.outputs.reporting import render, summary
    from migrate_fi.run import warm

    extra: dict[str, object] = {
        "from": result.from_version,
        "to": result.to_version,
        "rules": result.rules,
        "notices": result.notices,
    }
    fmt = settled.output_format
    report, errors = render(result, fmt, command, listed, extra)
    out, err = ("", report) if command == "diff" and fmt == "text" else (report, "")
    err += errors
    if fmt == "text":
        err += "".join(f"migrate-fi: note: {notice}\n" for notice in result.notices)
        err += summary(result, command)
    found = found or bool(result.pending)
    code = 2 if result.errors else 1 if found and not common.exit_zero else 0
    if out:
        click.echo(out, nl=False)
    if err:
        click.echo(err, nl=False, err=True)
    recording = warm.recording()
    if recording is not None and command == "check":
        recording.save(out, err, code)
    sys.exit(code)


def _common(kwargs: dict[str, Any]) -> _Common:
    return _Common(**kwargs)


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES,
)
@click.version_option(__version__, prog_name="migrate-fi")
def cli() -> None:
    """Migrate code that uses FlashInfer (flashinfer-python) from one release to another.

    \b
      migrate-fi check src/        list what needs migrating (CI gate; writes nothing)
      migrate-fi diff src/         print the migration as a patch (writes nothing)
      migrate-fi apply src/        rewrite the files in place
      migrate-fi rules             the rules, with codes and FlashInfer versions
      migrate-fi explain FI001     one migration in full
    """


@cli.command(epilog=EXIT_CODES)
@_common_options
@click.option(
    "--no-cache",
    is_flag=True,
    help="Analyse every file again, instead of reusing the results of unchanged files"
    " (kept in the user's cache folder, or $MIGRATE_FI_CACHE_DIR).",
)
def check(no_cache: bool, **kwargs: Any) -> None:
    """List the sites that need migrating; write nothing.

    Prints `path:line:col: CODE message` for every site `apply` would rewrite and every site a
    person must look at. Exits 1 when anything is found: use it as a CI gate. A file analysed
    before is not analysed again while it and what its analysis read are unchanged.
    """
    common = _common(kwargs)
    result, settled, _ = _execute(common, "check", use_cache=not no_cache)
    _finish(result, common, settled, "check", found=bool(result.diagnostics))


def _version_key(text: str) -> tuple[int, object]:
    """Order version strings as releases are ordered (one that does not parse sorts last)."""
    from migrate_fi.base.versions import VersionError, parse_version

    try:
        return (0, parse_version(text))
    except VersionError:
        return (1, text)


def _patch_roots(paths: tuple[str, ...]) -> list[str]:
    """Where the patch names files from (`migrate_fi.outputs.reporting.patch_path`), for the given
    paths outside the current folder: the top of the git work tree that holds each, else its
    project's root; the deepest first."""
    from migrate_fi.project.current import project_root
    from migrate_fi.project.vcs import repository_root

    here = os.path.join(os.path.realpath(os.getcwd()), "")
    roots = {
        repository_root(p) or os.path.realpath(project_root(p))
        for p in (os.path.realpath(p) for p in paths)
        if not os.path.join(p, "").startswith(here)
    }
    return sorted(roots, key=len, reverse=True)


@cli.command(epilog=EXIT_CODES)
@_common_options
def diff(**kwargs: Any) -> None:
    """Print the migration as a unified diff; write nothing.

    The patch goes to stdout (`git apply` takes it); the sites left for a person, and errors, go to
    stderr. Exits 1 when there is anything to migrate.
    """
    from migrate_fi.outputs.reporting import unified_diff

    common = _common(kwargs)
    result, settled, _ = _execute(common, "diff")
    roots = _patch_roots(settled.paths)
    patch = b"".join(
        unified_diff(f.path, f.old_bytes or b"", f.new_bytes or b"", roots) for f in result.changed
    )
    changed = [os.path.realpath(f.path) for f in result.changed if os.path.isabs(f.path)]
    used = {r for r in roots if any(p.startswith(os.path.join(r, "")) for p in changed)}
    result.notices += [
        f"the patch names the files under {root} from there: apply it there (`git -C {root} apply`)"
        for root in sorted(used)
    ]
    if settled.output_format == "text":
        click.echo(patch, nl=False)  # bytes: written as they are
    else:  # the patch is part of the document (as UTF-8: a Latin-1 byte shows as U+FFFD)
        result.patch = patch.decode("utf-8", errors="replace")
    listed = result.diagnostics if settled.output_format != "text" else result.manual
    _finish(result, common, settled, "diff", found=bool(result.diagnostics), listed=listed)


@cli.command(epilog=EXIT_CODES)
@_common_options
@click.option(
    "--allow-dirty",
    is_flag=True,
    help="Rewrite files even where git has uncommitted changes under the given paths.",
)
@_tells_writes
def apply(allow_dirty: bool, **kwargs: Any) -> None:
    """Rewrite the files in place.

    Every write is atomic (a temporary file beside it, then a rename) and keeps the file's mode,
    encoding, BOM and line endings; read-only files are refused. Under git, refuses to start
    while the given paths have uncommitted changes (see --allow-dirty), so that the migration is
    a diff of its own. Prints the sites left for a person; exits 1 when there are any.
    """

    common = _common(kwargs)
    if not allow_dirty:
        _refuse_dirty(common.paths, _written_by_the_migration(common.paths))
    result, settled, span = _execute(common, "apply")
    _write_and_record(result, span)
    if settled.output_format == "text":
        for f in result.changed:
            if f.path in result.written:
                n = sum(1 for d in f.diagnostics if d.fixable)
                click.echo(f"{f.path}: rewritten ({n} fix{'es' if n != 1 else ''})")
    listed = result.manual if settled.output_format == "text" else result.diagnostics
    _finish(result, common, settled, "apply", found=bool(result.manual), listed=listed)


def _pr_facts(result: RunResult, settled: _Settled, span: MigrationRange) -> Report:
    """What `report` and `upgrade` write the pull-request description from (a `report.Report`):
    the run, the rules of the range, the usage inventory, the pins, the verify command, and
    what an earlier apply of the migration in progress rewrote."""
    from migrate_fi.api.store import missing_data
    from migrate_fi.outputs import report as reporting_pr
    from migrate_fi.outputs.usage import inventory
    from migrate_fi.project.current import pinned_versions, search_pins
    from migrate_fi.run.registry import select as select_rules

    selection = select_rules(span.from_version, span.to_version)
    try:
        found = inventory(
            settled.paths, str(span.from_version), str(span.to_version), selection.rules
        )
    except KeyError as exc:
        raise Fatal(missing_data(exc.args[0])) from None
    shown = " ".join(settled.paths) if settled.paths != (".",) else ""
    # (the pins the range was read from; with --from given, the pins the tree has all the same)
    pins = span.pins or sorted(
        (p for found in pinned_versions(search_pins(list(settled.paths))).values() for p in found),
        key=lambda p: (p.path, p.line),
    )
    return reporting_pr.Report(
        result=result,
        rules=list(selection.rules),
        inventory=found,
        pins=[f"{os.path.relpath(p.path)}:{p.line} {p.describe()}" for p in pins],
        verify=f"migrate-fi verify --baseline HEAD {shown}".rstrip(),
        applied=list(span.record.written) if span.record is not None else None,
    )


def _stop_on_errors(result: RunResult) -> None:
    if result.errors:
        for error in result.errors:
            click.echo(f"migrate-fi: error: {error.path}: {error.reason}", err=True)
        sys.exit(2)


def _migration_record(paths: tuple[str, ...]) -> ApplyRecord | None:
    """The record of the migration of the project ``paths`` are in; None when there is none
    (or it cannot be read: the run itself says so)."""
    from migrate_fi.project.current import project_root
    from migrate_fi.project.record import RecordError, read_record

    try:
        return read_record(project_root(paths[0]))
    except RecordError:
        return None


def _facts_from(base: str, common: _Common, record: ApplyRecord | None) -> Report:
    """The report's facts for the migration from commit ``base`` to the tree as it is: the run
    over ``base``'s files (what the migration found and fixed there, as `upgrade` reported it
    before writing), with the range of the record (or of the pins: ``base``'s, and the
    tree's now), and the files changed since then besides the migration's fixes."""
    import shutil
    import tempfile

    from migrate_fi.project.current import (
        ProjectVersionError,
        detect_current_version,
    )
    from migrate_fi.project.vcs import VcsError, changed_since, export_tree, repository_root

    paths = common.paths or (".",)
    here = os.getcwd()
    repo = repository_root(here)
    if repo is None:
        raise Fatal(f"report --base needs a git repository, and {here} is not in one")
    inside = [os.path.relpath(os.path.realpath(p), repo) for p in paths]
    if any(p == ".." or p.startswith(".." + os.sep) for p in inside):
        raise Fatal("report --base: every path must lie in the repository of the current folder")
    origin = common.from_version or (record.from_version if record is not None else None)
    target = common.to_version or (record.to_version if record is not None else None)
    folder = tempfile.mkdtemp(prefix="migrate-fi-base-")
    try:
        try:
            commit = export_tree(repo, base, folder)
            changed = changed_since(commit, paths)
        except VcsError as exc:
            raise Fatal(f"report --base: {exc}") from None
        if target is None:
            try:
                target = detect_current_version(paths)[0]  # (where the pins say it is now)
            except ProjectVersionError as exc:
                why = str(exc).split(": pass --from", 1)[0]
                raise Fatal(
                    "report --base: the release migrated to is not known (no record of the"
                    f" migration, and {why}): pass --to VERSION"
                ) from None
        os.chdir(os.path.join(folder, os.path.relpath(here, repo)))
        at_base = dataclasses.replace(common, from_version=origin, to_version=target)
        result, settled, span = _execute(at_base, "diff")
        _stop_on_errors(result)
        facts = _pr_facts(result, settled, span)
    finally:
        os.chdir(here)
        shutil.rmtree(folder, ignore_errors=True)
    fixed = {os.path.realpath(os.path.join(here, d.path)) for d in result.fixable}
    facts.base = commit[:12]
    facts.changed_besides = sorted(
        os.path.relpath(p)
        for p in changed
        if p not in fixed and f"{os.sep}.migrate-fi{os.sep}" not in p
    )
    return facts


def _written_by_the_migration(paths: tuple[str, ...]) -> frozenset[str]:
    """The files that hold what the recorded migration's apply wrote into them (absolute
    paths): the next `apply` or `upgrade` (after an interruption, say) is not blocked by the
    migration's own changes, only by a person's."""
    from migrate_fi.project.current import project_root
    from migrate_fi.project.record import RecordError, read_record

    root = project_root(paths[0] if paths else ".")
    try:
        record = read_record(root)
    except RecordError:
        return frozenset()
    if record is None:
        return frozenset()
    files = [os.path.abspath(os.path.join(root, p)) for p in record.written]
    if not record.digests:  # (a record of an earlier release: no digests, so by name)
        return frozenset(files) if record.in_progress else frozenset()
    return frozenset(f for f in files if record.wrote_as_is(root, f))


UPGRADE_EXIT_CODES = """\b
Exit codes:
  0  migrated: nothing left for a person (and verified, when this machine could verify)
  1  migrated, but sites are left for a person (listed)
  2  stopped at a step: bad usage, a dirty tree, a file that could not be read or written
  4  verify ran here and did not pass (its own exit code is printed)
  130  interrupted (Ctrl-C, SIGTERM) while writing: says which files were rewritten"""


def _can_verify() -> str | None:
    """Why this machine cannot run `verify` itself (no torch, no GPU, no FlashInfer); None when
    it can."""
    import importlib.util

    for module in ("torch", "flashinfer"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed here"
    import torch

    return None if torch.cuda.is_available() else "no CUDA GPU here"


@cli.command(epilog=UPGRADE_EXIT_CODES)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option("--from", "from_version", metavar="VERSION", help="Override the detected version.")
@click.option("--to", "to_version", metavar="VERSION", help="Target (default: newest known).")
@click.option("--dry-run", is_flag=True, help="Every step but writing: shows what apply would do.")
@click.option(
    "--allow-dirty", is_flag=True, help="Rewrite files even where git has uncommitted changes."
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to write the PR description (default: .migrate-fi/report.md in the project).",
)
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True)
@_tells_writes
def upgrade(
    paths: tuple[str, ...],
    from_version: str | None,
    to_version: str | None,
    dry_run: bool,
    allow_dirty: bool,
    report_path: str | None,
    lang: str,
) -> None:
    """The whole upgrade in one command: plan, apply (code first, pins last), the sites left for
    a person, verify when this machine has a GPU and the target FlashInfer (else the command to
    run on one), and the pull-request description.

    Each step is printed as it runs; the first that fails stops the upgrade with its reason."""
    import subprocess

    from migrate_fi.editing.sources import write_new_file
    from migrate_fi.outputs import report as reporting_pr
    from migrate_fi.project.record import state_folder

    paths = paths or (".",)

    def step(n: int, text: str) -> None:
        click.echo(f"[{n}/5] {text}", err=True)

    common = _Common(
        paths, from_version, to_version, (), (), (), None, None, True, None, None, None, None
    )
    step(1, "plan")
    if not allow_dirty and not dry_run:
        _refuse_dirty(paths, _written_by_the_migration(paths))
    result, settled, span = _execute(common, "check" if dry_run else "apply")
    # the report describes the migration, so it is made from what the run found, before writing
    facts = _pr_facts(result, settled, span)
    verify_command = facts.verify
    click.echo(
        f"      FlashInfer {span.from_version} -> {span.to_version}; rules: {', '.join(result.rules)}",
        err=True,
    )
    for pin in facts.pins:
        click.echo(f"      pin {pin}", err=True)
    if result.errors:
        for error in result.errors:
            click.echo(f"migrate-fi: error: {error.path}: {error.reason}", err=True)
        click.echo("migrate-fi: stopped at step 1 (plan): files that cannot be read", err=True)
        sys.exit(2)

    step(2, "apply" + (" (dry run: nothing written)" if dry_run else ""))
    if not dry_run:
        _write_and_record(result, span)
        if result.write_errors:
            for error in result.write_errors:
                click.echo(f"migrate-fi: error: {error.path}: {error.reason}", err=True)
            click.echo("migrate-fi: stopped at step 2 (apply): files not written", err=True)
            sys.exit(2)
    done = result.fixable
    files = sorted({d.path for d in done})
    verb = "would rewrite" if dry_run else "rewrote"
    click.echo(f"      {verb} {_plural_files(len(files))} ({len(done)} fixes)", err=True)

    step(3, "left for a person")
    for d in result.manual:
        click.echo(f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}")
    click.echo(f"      {len(result.manual)} site(s)", err=True)

    step(4, "verify")
    verified: int | None = None
    reason = "dry run" if dry_run else _can_verify()
    if reason is None:
        command = [
            *(sys.executable, "-m", "migrate_fi", "verify", "--baseline", "HEAD"),
            *("--output-format", "json", *paths),
        ]
        ran = subprocess.run(command, check=False, capture_output=True, text=True)
        verified = ran.returncode
        try:
            facts.verified = json.loads(ran.stdout)
        except ValueError:
            click.echo(ran.stderr.strip(), err=True)
        verdict = (facts.verified or {}).get("verdict", "no result")
        click.echo(f"      {verdict} (verify exit code {verified})", err=True)
    else:
        click.echo(f"      not run ({reason}); on the GPU machine: {verify_command}", err=True)
    text = reporting_pr.render_markdown(facts, lang)

    step(5, "report")
    target = report_path or os.path.join(span.root, ".migrate-fi", "report.md")
    if dry_run and report_path is None:
        click.echo(text, nl=False)
    else:
        try:
            if report_path is None:
                state_folder(span.root)
            write_new_file(target, text.encode("utf-8"))
        except OSError as exc:
            raise Fatal(f"{target}: cannot write the report ({exc.strerror})") from None
        click.echo(f"      written to {os.path.relpath(target)}", err=True)
    if verified not in (None, 0):
        sys.exit(4)
    sys.exit(1 if result.manual else 0)


def _write_and_record(result: RunResult, span: MigrationRange) -> None:
    """apply's writes: code first, pin and version files last (an apply stopped halfway leaves
    the old pins), and the record of where the migration stands, interrupted or not (one for
    each project of a run by projects). What the writes did is kept for the rest of the
    command (`_tells_writes`)."""
    from migrate_fi.editing.sources import signals_deferred, write_changes
    from migrate_fi.project.current import is_pin_file

    parts = [(part, _part_of(result, part, files)) for part, files in span.parts] or [
        (span, result)
    ]
    sites = [_sites_left(part, view) for part, view in parts]
    try:
        write_changes(result, last=is_pin_file)
    except KeyboardInterrupt as exc:
        records = [
            _record_apply(part, _written_in(view, result), left, interrupted=_signal_name(exc))
            for (part, view), left in zip(parts, sites, strict=True)
        ]
        record = next((r for r in records if r is not None), None)
        raise ApplyInterrupted(_signal_name(exc), list(result.written), record) from None
    told = _WRITES.get(None)
    with signals_deferred():  # (the files are written: their record is written too)
        record = None
        for (part, view), left in zip(parts, sites, strict=True):
            view = _written_in(view, result)
            needed = view.written or part.record or left or view.errors
            made = _record_apply(part, view, left) if needed else None
            record = record or made
        if told is not None:
            told.written, told.record = list(result.written), record


def _part_of(result: RunResult, span: MigrationRange, files: list[str]) -> RunResult:
    """The files of one project of a run by projects, as a result of its own."""
    mine = set(files)
    return RunResult(
        files=[f for f in result.files if f.path in mine],
        from_version=str(span.from_version),
        to_version=str(span.to_version),
        unsafe_fixes=result.unsafe_fixes,
    )


def _written_in(view: RunResult, result: RunResult) -> RunResult:
    """``view`` with what the writes of ``result`` did to its files."""
    if view is result:
        return result
    mine = {f.path for f in view.files}
    view.written = [p for p in result.written if p in mine]
    view.write_errors = [e for e in result.write_errors if e.path in mine]
    return view


def _sites_left(span: MigrationRange, result: RunResult) -> list[LeftSite]:
    """The sites left for a person as the record keeps them (their lines as the writes will
    leave them)."""
    from migrate_fi.project.carryover import left_sites

    rewritten = {
        f.path: (f.old_text, f.new_text)
        for f in result.changed
        if f.old_text is not None and f.new_text is not None
    }
    return left_sites(span.root, result.manual, rewritten)


def _record_apply(
    span: MigrationRange,
    result: RunResult,
    sites: list[LeftSite],
    interrupted: str | None = None,
) -> str | None:
    """Keep where the migration stands, for the next runs, for a clone of the migration
    commit and for `verify` (a warning, never a failure, when it cannot); the record's path,
    or None."""
    from migrate_fi.project.record import Applied, Pending, RecordError, relative, write_record
    from migrate_fi.project.vcs import head_commit

    new_bytes = {f.path: f.new_bytes for f in result.changed if f.new_bytes is not None}
    failed = [Pending(relative(span.root, e.path), e.reason) for e in result.errors]
    applied = Applied(
        written={p: new_bytes[p] for p in result.written if p in new_bytes},
        seen=frozenset(f.path for f in result.files if f.error is None),
        sites=sites,
        failed=failed,
        interrupted=interrupted,
        base=head_commit(span.root),
    )
    try:
        return write_record(span.root, result.from_version, result.to_version, applied)
    except RecordError as exc:
        click.echo(f"migrate-fi: warning: cannot record this apply: {exc}", err=True)
        return None


@cli.command(epilog=EXIT_CODES)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option(
    "--config",
    type=click.Path(dir_okay=False),
    default=None,
    help="The pyproject.toml to read [tool.migrate-fi] from.",
)
def finish(paths: tuple[str, ...], config: str | None) -> None:
    """End the migration in progress, once nothing is left of it.

    After an `apply` that left sites for a person (or was stopped), `check`, `diff`, `plan` and
    `apply` keep migrating from the recorded origin although the pins moved. `finish` checks
    the recorded range once more: when nothing is found it marks the migration done (from then
    on the pins alone say where the project is) and exits 0; otherwise it lists what is left
    and exits 1.
    """
    from migrate_fi.project.record import RecordError, end_migration

    common = _Common(paths, None, None, (), (), (), None, None, False, None, None, None, config)
    result, settled, span = _execute(common, "check")
    if span.record is None:
        for notice in result.notices:
            click.echo(f"migrate-fi: note: {notice}", err=True)
        click.echo("No migration in progress here: nothing to finish.")
        sys.exit(2 if result.errors else 0)
    if result.diagnostics or result.errors or result.pending:
        files = f", {_plural_files(len(result.pending))} not migrated" if result.pending else ""
        click.echo(
            f"The migration {span.record.from_version} -> {span.record.to_version} is not"
            f" finished: {len(result.diagnostics)} site(s) left{files} (resolve them, or mark"
            " a checked site with `# migrate-fi: ignore[CODE]`).",
            err=True,
        )
        _finish(result, common, settled, "check", found=True)
    try:
        end_migration(span.root)
    except RecordError as exc:
        raise Fatal(str(exc)) from None
    click.echo(
        f"Migration {span.record.from_version} -> {span.record.to_version} finished: nothing"
        " is left, and its record is removed (commit that); the pins alone say where the"
        " project is from now on."
    )


VERIFY_EXIT_CODES = """\b
Exit codes:
  0  the selected tests passed, and at least one ran (or everything skipped, with --allow-skips)
  1  a test failed
  2  an error: a test errored, pytest could not run, or the installed FlashInfer is not the
     migration's target (see --allow-version-mismatch)
  3  nothing verified: every selected test was skipped (no GPU, wrong architecture), or none
     was found"""


class _PassThrough(click.Command):
    """Arguments after `--` go to pytest untouched."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            ctx.meta["pytest_args"] = args[i + 1 :]
            args = args[:i]
        return super().parse_args(ctx, args)


@cli.command(cls=_PassThrough, epilog=VERIFY_EXIT_CODES)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option(
    "--tests",
    "tests",
    multiple=True,
    type=click.Path(),
    help="Run these tests (files or pytest node ids) instead of the ones the last apply touched.",
)
@click.option(
    "--to",
    "to_version",
    metavar="VERSION",
    help="The FlashInfer version the tests must run on (default: the last apply's target).",
)
@click.option(
    "--python", "python", metavar="PATH", help="The Python that runs the tests (default: this one)."
)
@click.option(
    "--allow-version-mismatch",
    is_flag=True,
    help="Run even when the installed FlashInfer is not the target.",
)
@click.option("--allow-skips", is_flag=True, help="Exit 0 when every test was skipped.")
@click.option(
    "--baseline",
    metavar="REF",
    help="Also run the tests on git REF, to tell new failures from old ones.",
)
@click.option(
    "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def verify(
    paths: tuple[str, ...],
    tests: tuple[str, ...],
    to_version: str | None,
    python: str | None,
    allow_version_mismatch: bool,
    allow_skips: bool,
    baseline: str | None,
    output_format: str,
) -> None:
    """Run the migrated GPU tests and say what passed, failed or was skipped, and why.

    Without --tests: the test files the last `migrate-fi apply` rewrote, plus the project's test
    files that import a module it rewrote (`apply` keeps that list in .migrate-fi/last-apply.json
    at the project root). Arguments after `--` go to pytest. torch and flashinfer-python are
    imported only by the tests, in a subprocess.
    """
    from migrate_fi.verify.runner import VerifyError, verify_command

    extra = click.get_current_context().meta.get("pytest_args", [])
    try:
        code, text = verify_command(
            paths or (".",),
            tests,
            to_version,
            python,
            allow_version_mismatch,
            allow_skips,
            baseline,
            output_format,
            extra,
        )
    except VerifyError as exc:
        raise Fatal(str(exc)) from None
    click.echo(text, nl=False)
    sys.exit(code)


@cli.command()
@click.option(
    "--output-format",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
)
def rules(output_format: str) -> None:
    """List every migration: code, id, FlashInfer version, fix safety, summary."""
    from migrate_fi.outputs.docs import rules_json, rules_markdown, rules_table

    if output_format == "json":
        click.echo(json.dumps(rules_json(), indent=2))
    elif output_format == "markdown":
        click.echo(rules_markdown(), nl=False)
    else:
        click.echo(rules_table(), nl=False)


@cli.command()
@click.argument("rule")
def explain(rule: str) -> None:
    """Explain one migration, by code (FI001) or id."""
    from migrate_fi.analysis.suppression import UNUSED_CODE, UNUSED_ID, explanation
    from migrate_fi.outputs.docs import explain_text
    from migrate_fi.run.registry import SelectionError, lookup

    if rule.strip() in (UNUSED_CODE, UNUSED_ID):
        click.echo(explanation())
        return
    try:
        cls = lookup(rule)
    except SelectionError as exc:
        raise Fatal(str(exc)) from None
    click.echo(explain_text(cls), nl=False)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, like Ctrl-C: `finally` blocks run."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated()


class ApplyInterrupted(KeyboardInterrupt):
    """`apply` stopped by a signal while writing: what it had written, and its record."""

    def __init__(self, signal_name: str, written: list[str], record: str | None) -> None:
        super().__init__(signal_name)
        self.signal_name, self.written, self.record = signal_name, written, record


def interruption_lines(exc: BaseException) -> list[str]:
    """What an interrupted run says: the signal, and every file apply had rewritten."""
    # click turns a KeyboardInterrupt into Abort, keeping it as the cause
    cause = exc.__cause__ if isinstance(exc, click.Abort) and exc.__cause__ else exc
    record: str | None = None
    if isinstance(cause, ApplyInterrupted):
        what, written, record = cause.signal_name, cause.written, cause.record
    else:
        what, written = ("SIGTERM" if isinstance(cause, Terminated) else "SIGINT (Ctrl-C)"), []
    if not written:
        return [f"migrate-fi: interrupted ({what}): no file was written."]
    kept = f"; the record {os.path.relpath(record)} lists them" if record else ""
    return [
        f"migrate-fi: interrupted ({what}): {len(written)} file(s) were rewritten before it"
        f" stopped, every other file is unchanged{kept}, and the next `migrate-fi apply`"
        " continues the migration:",
        *(f"  rewritten: {path}" for path in written),
    ]


def _interrupted(exc: BaseException) -> NoReturn:
    for line in interruption_lines(exc):
        click.echo(line, err=True)
    sys.stdout.flush()
    sys.stderr.flush()
    # not sys.exit: its exit handlers and the interpreter's teardown would run, with workers
    # still to end
    os._exit(INTERRUPTED)


def main() -> None:
    import signal

    from migrate_fi.api.store import DataError

    signal.signal(signal.SIGTERM, _terminate)
    code: int | str | None
    try:
        done = cli.main(prog_name="migrate-fi", standalone_mode=False)
        code = done if isinstance(done, int) else 0
    except SystemExit as exc:  # (the commands end with their exit status)
        code = exc.code
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except (KeyboardInterrupt, click.Abort) as exc:
        _interrupted(exc)
    except DataError as exc:  # a damaged record of the API data
        Fatal(str(exc)).show()
        code = Fatal.exit_code
    except Exception as exc:  # a bug of ours: one line, exit 2 (MIGRATE_FI_DEBUG=1 shows it all)
        if os.environ.get("MIGRATE_FI_DEBUG") == "1":
            raise
        click.echo(
            f"migrate-fi: internal error: {type(exc).__name__}: {exc}"
            " (set MIGRATE_FI_DEBUG=1 for the traceback; please report it)",
            err=True,
        )
        code = 2
    # The command is done and has said so: a signal from now on (while the interpreter shuts
    # down, and once it has put back the default handlers) would kill it after its work, with
    # the signal's status instead of the command's. Held until the process is gone.
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    _exit(code)


def _exit(code: int | str | None) -> NoReturn:
    """End the process as `sys.exit(code)` would, but for the interpreter's teardown, which
    frees every object and module one by one: the exit handlers run, the streams are flushed,
    then `os._exit` (mypy ends the same way): 16% of `check` on a one-file tree, 5% on vLLM's.
    A stream that cannot be flushed (its reader left) is left to the interpreter's own exit, and
    so is a run under a profiler or a tracer (`python -m cProfile` writes its figures once the
    program has returned; a debugger may want to stop there)."""
    import atexit

    if isinstance(code, str):
        click.echo(code, err=True)
    status = code if isinstance(code, int) else 0 if code is None else 1
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_handlers is None or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(status)  # (the interpreter's exit runs the handlers)
    run_handlers()  # (each runs once: they are forgotten after; one that fails is reported)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(status)
    os._exit(status)


@cli.group()
def signatures() -> None:
    """FlashInfer's API data: add new releases, build it from wheels, list what there is."""


@signatures.command("update")
@click.argument("versions", nargs=-1)
@click.option("--pre", is_flag=True, help="Pre-releases too.")
@click.option(
    "--pip-option",
    "pip_options",
    multiple=True,
    metavar="OPTION",
    help="Passed to pip (repeatable): --pip-option=--index-url=URL. pip's own configuration"
    " (pip.conf, PIP_* variables) applies as always.",
)
def signatures_update(versions: tuple[str, ...], pre: bool, pip_options: tuple[str, ...]) -> None:
    """Add the FlashInfer releases published after the data migrate-fi has.

    Asks the package index through pip (the only command that touches the network), downloads
    each new `flashinfer-python` wheel, extracts its API without importing it, and stores it in
    the user's data folder ($MIGRATE_FI_DATA_DIR, else the per-user data folder). It also reads
    what the serving engines' (sglang, vLLM) releases the data lacks require of FlashInfer
    (their metadata, through pip: FI006 checks a FlashInfer pin beside an engine's against it).
    Every command then reads the bundled data and that folder together. VERSIONS: these
    releases only.
    """
    from migrate_fi.api.store import user_data_dir
    from migrate_fi.api.update import UpdateError, update

    try:
        update(
            user_data_dir(), pip_options=pip_options, versions=versions, pre=pre, echo=click.echo
        )
    except UpdateError as exc:
        raise Fatal(str(exc)) from None


@signatures.command("build")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where to write <version>.json.gz (default: the user's data folder, read by every"
    " command).",
)
@click.option(
    "-j", "--jobs", type=click.IntRange(min=1), default=None, help="Releases read in parallel."
)
def signatures_build(sources: tuple[str, ...], output_dir: str | None, jobs: int | None) -> None:
    """Extract the API of releases from wheels or installed copies, without importing them.

    SOURCES are `flashinfer-python` wheel files, or folders holding the `flashinfer` package
    (such as a site-packages folder). Written to the bundled data folder (`--output-dir
    migrate_fi/data/api`), the bundled index of changes is rebuilt: what maintainers do.
    """
    from migrate_fi.api.extract import ExtractError, extract_release
    from migrate_fi.api.index import update_user_index, write_index
    from migrate_fi.api.releases import read_requires_dist
    from migrate_fi.api.store import DATA_DIR, register, user_data_dir, write_release
    from migrate_fi.api.update import UpdateError, check_writable

    folder = os.path.abspath(output_dir or user_data_dir())
    try:
        check_writable(folder)
    except UpdateError as exc:
        raise Fatal(str(exc)) from None
    bundled = os.path.exists(DATA_DIR) and os.path.samefile(folder, DATA_DIR)
    workers = min(jobs or os.cpu_count() or 1, len(sources))
    try:
        if workers > 1:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=workers) as pool:
                records = list(pool.map(extract_release, sources))
        else:
            records = [extract_release(source) for source in sources]
    except ExtractError as exc:
        raise Fatal(str(exc)) from None
    for source, record in zip(sources, records, strict=True):
        written = write_release(record, folder)
        if not bundled:
            wheel = os.path.isfile(source)
            register(folder, record, read_requires_dist(source) if wheel else None)
        click.echo(
            f"{source}: {record['provenance']['version']}: {len(record['modules'])} modules,"
            f" {len(record['defs'])} definitions, {len(record['exports'])} re-exports"
            f" -> {written}"
        )
    if bundled:
        click.echo(f"prefilter index -> {write_index()}")
    elif folder == os.path.abspath(user_data_dir()):
        index = update_user_index()
        if index:
            click.echo(f"index of the changes between releases -> {index}")


@signatures.command("list")
def signatures_list() -> None:
    """The releases there is API data for, with where each came from."""
    from migrate_fi.api.store import (
        DATA_DIR,
        available_releases,
        load_release,
        origin,
        read_manifest,
        user_data_dir,
        user_releases,
    )

    users = user_releases()
    manifest = os.path.join(user_data_dir(), "releases.json")
    if os.path.exists(manifest) and not read_manifest(user_data_dir()):
        click.echo(f"{manifest}: cannot be read, ignored (`signatures update` rewrites it)")
    bundled = [v for v in available_releases() if origin(v) == "bundled"]
    click.echo(f"bundled: {len(bundled)} releases in {DATA_DIR}")
    shown = f"{len(users)} releases" if users else "none yet (`migrate-fi signatures update`)"
    click.echo(f"user's data folder: {user_data_dir()}: {shown}")
    for version in available_releases():
        if origin(version) == "bundled":
            prov = load_release(version)["provenance"]
            click.echo(f"{version}  bundled  {prov['source']}  sha256:{prov['sha256']}")
        else:
            entry = users[version]
            click.echo(
                f"{version}  user  {entry['source']}  sha256:{entry['sha256']}"
                f"  read {entry['read']}"
            )


@cli.command("api-diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--symbol", "symbols", multiple=True, metavar="TEXT", help="Only symbols containing TEXT."
)
@click.option("--kind", "kinds", multiple=True, metavar="KIND", help="Only changes of this kind.")
@click.option(
    "--public",
    is_flag=True,
    help="Only what users call: symbols reached from the package or one subpackage"
    " (flashinfer.X, flashinfer.comm.X), not generated or kernel-internal code.",
)
@click.option(
    "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def api_diff(
    old: str,
    new: str,
    symbols: tuple[str, ...],
    kinds: tuple[str, ...],
    public: bool,
    output_format: str,
) -> None:
    """What changed in FlashInfer's public API between releases OLD and NEW.

    \b
    Kinds: positional (positional calls bind differently from an index on),
    deprecated-positional, renamed, param-removed, param-required, param-added, default,
    keyword-only, enum-value, enum-removed, moved, removed, added.
    """
    from migrate_fi.api.differ import CHANGE_KINDS, diff_releases
    from migrate_fi.api.paths import is_user_facing
    from migrate_fi.api.store import available_releases, missing_data
    from migrate_fi.base.versions import VersionError, parse_version

    for kind in kinds:
        if kind not in CHANGE_KINDS:
            raise click.UsageError(
                f"--kind {kind!r} is not a kind of change (kinds: {', '.join(CHANGE_KINDS)})"
            )
    known = {str(parse_version(v)) for v in available_releases()}
    for v in (old, new):
        try:
            canonical = str(parse_version(v))
        except VersionError as exc:
            raise Fatal(str(exc)) from None
        if canonical not in known:
            raise Fatal(missing_data(v))
    changes = [
        c
        for c in diff_releases(old, new)
        if (not symbols or any(s in c.symbol for s in symbols))
        and (not kinds or c.kind in kinds)
        and (not public or is_user_facing(c.symbol))
    ]
    if output_format == "json":
        click.echo(json.dumps([c.to_json() for c in changes], indent=2))
        return
    for c in changes:
        click.echo(f"{c.symbol}: {c.kind}: {c.detail}")
    click.echo(f"{len(changes)} changes between {old} and {new}.", err=True)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option("--from", "from_version", metavar="VERSION", help="Override the detected version.")
@click.option("--to", "to_version", metavar="VERSION", help="Target (default: newest known).")
@click.option("--select", multiple=True, metavar="RULES", help="Run only these rules.")
@click.option("--ignore", multiple=True, metavar="RULES", help="Do not run these rules.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip paths matching this pattern.")
@click.option(
    "--lang",
    type=click.Choice(["en", "zh"]),
    default="en",
    show_default=True,
    help="Language of the headings and the tool's sentences (code, paths, messages unchanged).",
)
@click.option(
    "--output-format",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the report to this file (atomically) instead of printing it.",
)
@click.option(
    "--post",
    is_flag=True,
    help="In GitHub Actions: post the report on the pull request (editing the comment an"
    " earlier run posted) and add it to the job summary; needs GITHUB_TOKEN.",
)
@click.option(
    "--base",
    metavar="REF",
    default=None,
    help="Describe the migration against this commit (default: the commit the recorded"
    " migration started from, when there is one).",
)
def report(
    paths: tuple[str, ...],
    from_version: str | None,
    to_version: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    lang: str,
    output_format: str,
    output: str | None,
    post: bool,
    base: str | None,
) -> None:
    """The upgrade's pull-request description, in Markdown: what changed and why, the files,
    the sites left for a person, the FlashInfer APIs used, risks and impact.

    A migration in progress (its record, committed with it) is described from the commit it
    started from: the same report before `apply`, after it, and on the migration commit in CI.
    `--base REF` names that commit (after `finish`, say). Without either, the tree as it is.
    Deterministic, no network. Writes nothing unless -o is given."""
    from migrate_fi.editing.sources import write_new_file
    from migrate_fi.outputs import report as reporting_pr

    common = _Common(
        paths,
        from_version,
        to_version,
        select,
        ignore,
        exclude,
        None,
        None,
        True,
        None,
        None,
        None,
        None,
    )
    record = _migration_record(paths or (".",))
    started = base or (record.base if record is not None else None)
    if started is not None:
        facts = _facts_from(started, common, record)
    else:
        result, settled, span = _execute(common, "diff")  # (the new text, for the excerpts)
        _stop_on_errors(result)
        facts = _pr_facts(result, settled, span)
    if output_format == "json":
        text = json.dumps(reporting_pr.to_json(facts), indent=2, ensure_ascii=False) + "\n"
    else:
        text = reporting_pr.render_markdown(facts, lang)
    if post:
        _post(text if output_format != "json" else reporting_pr.render_markdown(facts, lang), lang)
    if output is None:
        if not post:
            click.echo(text, nl=False)
        return
    try:
        write_new_file(output, text.encode("utf-8"))
    except OSError as exc:
        raise Fatal(f"{output}: cannot write the report ({exc.strerror})") from None
    click.echo(f"migrate-fi: report written to {output}", err=True)


def _post(markdown: str, lang: str) -> None:
    """The report on the pull request and in the job summary (`report --post`)."""
    from migrate_fi.outputs.pullrequest import GitHubError, post_report, write_summary

    try:
        summary = write_summary(markdown)
        where = post_report(markdown, lang=lang)
    except GitHubError as exc:
        raise Fatal(str(exc)) from None
    if summary is not None:
        click.echo("migrate-fi: report added to the job summary", err=True)
    click.echo(f"migrate-fi: report posted on the pull request: {where}", err=True)


@cli.command()
@_range_options
def usage(
    paths: tuple[str, ...], from_version: str | None, to_version: str | None, output_format: str
) -> None:
    """Every FlashInfer API the project uses, where, and what changed in it.

    Calls and imports of FlashInfer's functions, classes and methods (also through the
    project's own re-exports of them), grouped by the definition they reach, each with its
    number of sites (and how many are in tests), the changes the release data records between
    --from and --to, and what the release notes of the range say of it, every kind of note
    (also those `check` leaves out), each with its source; the unchanged ones are listed too."""
    from migrate_fi.api.store import missing_data
    from migrate_fi.outputs.usage import inventory, render
    from migrate_fi.project.discovery import DiscoveryError

    paths = paths or (".",)
    span, selection = _range_and_rules(paths, from_version, to_version)
    for notice in span.notices:
        click.echo(f"migrate-fi: note: {notice}", err=True)
    try:
        found = inventory(paths, str(span.from_version), str(span.to_version), selection.rules)
    except KeyError as exc:
        raise Fatal(missing_data(exc.args[0])) from None
    except DiscoveryError as exc:
        raise Fatal(str(exc)) from None
    if output_format == "json":
        doc = {
            "from": found.from_version,
            "to": found.to_version,
            "files": {"scanned": found.files_scanned, "parsed": found.files_parsed},
            "apis": [a.to_json() for a in found.apis],
            "not_read": found.unreadable,
        }
        click.echo(json.dumps(doc, indent=2))
        return
    click.echo(render(found), nl=False)


@cli.command()
@_range_options
def plan(
    paths: tuple[str, ...], from_version: str | None, to_version: str | None, output_format: str
) -> None:
    """Which FlashInfer the project uses now, the target, and the rules that will run.

    Lists every pin found and where (pyproject.toml, requirements, setup files, Dockerfiles, CI
    scripts, version files), and says when they disagree. A tree of projects pinned to
    different releases gets a plan for each project: each is migrated from its own pins."""
    from migrate_fi.project.subprojects import split

    paths = paths or (".",)
    parts = split(paths, from_version)
    if parts is None:
        _plan_one(paths, from_version, to_version, output_format)
        return
    if output_format != "json":
        click.echo(
            f"{len(parts)} projects pinned to different releases: each is migrated from its"
            " own pins (a --from applies only to those that pin an older release)."
        )
        if parts[0].tree_note:
            click.echo(f"Note: {parts[0].tree_note}.")
    docs = []
    for part in parts:
        if output_format != "json":
            click.echo(f"\n== {os.path.relpath(part.folder)}")
            if part.note:
                click.echo(f"   {part.note}")
        docs.append(_plan_one(part.paths, part.from_given, to_version, output_format, quiet=True))
    if output_format == "json":
        projects = [
            {"folder": os.path.relpath(part.folder), "note": part.note or None, **doc}
            for part, doc in zip(parts, docs, strict=True)
        ]
        click.echo(json.dumps({"projects": projects}, indent=2))


def _plan_one(
    paths: tuple[str, ...],
    from_version: str | None,
    to_version: str | None,
    output_format: str,
    quiet: bool = False,
) -> dict[str, object]:
    """The plan of one project (printed as text; as JSON unless ``quiet``); its document."""
    from migrate_fi.api.differ import changed_callables
    from migrate_fi.api.store import missing_data
    from migrate_fi.project.current import search_pins
    from migrate_fi.project.pins import MAIN

    search = search_pins(paths)
    for problem in search.problems:
        click.echo(f"migrate-fi: warning: {problem}", err=True)
    all_pins = search.pins
    versions = sorted(
        {p.version.split("+", 1)[0] for p in all_pins if not p.marker and p.package == MAIN}
    )
    try:
        span, selection = _range_and_rules(paths, from_version, to_version)
    except Fatal:
        for p in all_pins:  # what the error is about
            click.echo(f"  {os.path.relpath(p.path)}:{p.line} {p.describe()} ({p.kind})")
        raise
    from_v, to_v, pins = span.from_version, span.to_version, span.pins
    for notice in span.notices:
        click.echo(f"migrate-fi: note: {notice}", err=True)
    rules = []
    for c in selection.rules:
        entry: dict[str, object] = {
            "code": c.code,
            "id": c.id,
            "fix": c.fix_label(),
            "summary": c.summary,
        }
        if c.data_driven:
            try:
                changed = changed_callables(str(from_v), str(to_v))
            except KeyError as exc:
                raise Fatal(missing_data(exc.args[0])) from None
            entry["apis_changed"] = sum(1 for _, d in changed.values() if d is not None)
            entry["apis_removed"] = sum(1 for _, d in changed.values() if d is None)
        else:
            entry["flashinfer_version"] = c.introduced_in
        rules.append(entry)
    doc = {
        "from": str(from_v),
        "to": str(to_v),
        "pins": [
            {
                "path": p.path,
                "line": p.line,
                "package": p.package,
                "kind": p.kind,
                "pin": f"{p.operator}{p.version}",
            }
            for p in all_pins
        ],
        "pins_disagree": len(versions) > 1,
        "in_progress": span.record is not None,
        "rules": rules,
    }
    if output_format == "json":
        if not quiet:
            click.echo(json.dumps(doc, indent=2))
        return doc
    source = (
        "the pins below"
        if pins
        else "--from"
        if from_version
        else "the migration in progress"
        if span.record is not None
        else "no pin found"
    )
    click.echo(f"FlashInfer now: {from_v} ({source})")
    click.echo(f"Target:         {to_v}")
    if all_pins:
        click.echo("Pins:")
        for p in all_pins:
            click.echo(f"  {os.path.relpath(p.path)}:{p.line} {p.describe()} ({p.kind})")
        if len(versions) > 1:
            click.echo(f"  these disagree ({', '.join(versions)}); migrating from {from_v}")
        lagging = sorted(
            {p.describe() for p in all_pins if p.package != MAIN and p.version != str(from_v)}
        )
        if lagging and span.record is None:
            if rules:
                click.echo(f"  not at {from_v}: {', '.join(lagging)} (FI006 reports them)")
            else:  # (no range, so no rule looks at them: say what would)
                older = min(
                    (p.version for p in all_pins if p.package != MAIN and p.version != str(from_v)),
                    key=_version_key,
                )
                click.echo(
                    f"  not at {from_v}: {', '.join(lagging)}; no rule runs while the pins say"
                    f" {from_v}: if the code was written for {older}, migrate it with"
                    f" `--from {older}`, else move these pins by hand"
                )
    click.echo("Migrations:")
    if not rules:
        click.echo("No rule runs for this range.")
    for r in rules:
        if "apis_changed" in r:
            scope = f"{r['apis_changed']} APIs changed, {r['apis_removed']} removed (API data)"
        else:
            scope = f"FlashInfer {r['flashinfer_version']}"
        click.echo(f"  {r['code']} {r['id']:<24} fix: {r['fix']:<6} {scope}")
    return doc
