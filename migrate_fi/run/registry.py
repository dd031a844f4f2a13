"""Finding rules and choosing which run.

Every module in the `migrate_fi.codemods` package (`codemods/`) whose name does not
start with `_` defines one `Rule` subclass, and is a rule: adding a file adds a rule. The
`_`-modules beside them hold code several rules share (`_callers.py`, `_values.py`...). Which rules run is decided here,
from declared metadata (the FlashInfer release each one handles) and `--select`/`--ignore`,
never by the rules themselves.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any, NamedTuple

from packaging.version import Version

from migrate_fi.analysis.suppression import UNUSED_CODE, UNUSED_ID
from migrate_fi.base import patterns
from migrate_fi.base.results import FixAvailability, FixSafety
from migrate_fi.base.versions import in_range, parse_version
from migrate_fi.framework.rule import Rule, RuleSettings
from migrate_fi.project.config import ConfigError

_CODE = patterns.compile(r"^FI\d{3}$")


class SelectionError(ValueError):
    pass


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule, ordered by the release it handles, then by code."""
    # (by name: the rules are found, not listed; mypy checks `codemods/` on its own)
    package = importlib.import_module("migrate_fi.codemods")

    found: list[type[Rule]] = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        classes = [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type)
            and issubclass(obj, Rule)
            and obj is not Rule
            and obj.__module__ == module.__name__
        ]
        if len(classes) != 1:
            raise RuntimeError(
                f"rule module {module.__name__} must define exactly one Rule subclass,"
                f" found {len(classes)}"
            )
        cls = classes[0]
        cls.id = info.name
        _validate(cls)
        found.append(cls)
    codes = [c.code for c in found]
    duplicates = {c for c in codes if codes.count(c) > 1}
    if duplicates:
        raise RuntimeError(f"duplicate rule codes: {', '.join(sorted(duplicates))}")
    # Release order, so that later migrations read the code earlier ones produced; data-driven
    # rules last, after the rules that own specific APIs.
    return tuple(
        sorted(
            found,
            key=lambda c: (
                c.data_driven,
                parse_version("0" if c.data_driven else c.introduced_in),
                c.code,
            ),
        )
    )


def _validate(cls: type[Rule]) -> None:
    where = f"rule {cls.id}"
    for attr in ("code", "summary", "introduced_in", "triggers"):
        if not hasattr(cls, attr):
            raise RuntimeError(f"{where} does not declare {attr}")
    if not _CODE.match(cls.code):
        raise RuntimeError(f"{where}: code {cls.code!r} is not of the form FI000")
    if not cls.data_driven:
        parse_version(cls.introduced_in)
    if not isinstance(cls.fix_availability, FixAvailability):
        raise RuntimeError(f"{where}: fix_availability must be a FixAvailability")
    if cls.fix_availability is FixAvailability.NONE:
        if cls.fix_safety is not None:
            raise RuntimeError(f"{where} only reports (fix_availability NONE): no fix_safety")
    elif not isinstance(cls.fix_safety, FixSafety):
        raise RuntimeError(f"{where} fixes: fix_safety must be FixSafety.SAFE or REVIEW")

    def valid(t: object) -> bool:
        if isinstance(t, tuple):
            return bool(t) and all(isinstance(p, str) and p for p in t)
        return isinstance(t, str) and bool(t)

    if not cls.triggers or not all(valid(t) for t in cls.triggers):
        raise RuntimeError(f"{where}: triggers must be non-empty strings or tuples of them")
    if not cls.doc():
        raise RuntimeError(f"{where} has no docstring (it is the rule's documentation)")
    names = [o.name for o in cls.options]
    if len(set(names)) != len(names):
        raise RuntimeError(f"{where} declares an option twice")
    if cls.owns_apis and cls.fix_availability is FixAvailability.NONE:
        raise RuntimeError(f"{where} owns APIs but never fixes them: leave them to FI002")


def lookup(name: str) -> type[Rule]:
    """A rule by code (``FI001``, any case) or id (``fp4_quantize_keywords``)."""
    for cls in all_rules():
        if name.upper() == cls.code or name == cls.id:
            return cls
    raise SelectionError(f"unknown rule {name!r} (see `migrate-fi rules`)")


def _matches(cls: type[Rule], selector: str) -> bool:
    return _names(cls.code, cls.id, selector)


def _names(code: str, rule_id: str, selector: str) -> bool:
    sel = selector.strip()
    return sel == rule_id or (sel.upper().startswith("FI") and code.startswith(sel.upper()))


def _unused_suppression(selector: str) -> bool:
    return _names(UNUSED_CODE, UNUSED_ID, selector)


def _check_selectors(selectors: Iterable[str]) -> None:
    for sel in selectors:
        if _unused_suppression(sel):
            continue
        if not any(_matches(c, sel) for c in all_rules()):
            raise SelectionError(
                f"unknown rule {sel!r} in --select/--ignore (see `migrate-fi rules`)"
            )


class Selection(NamedTuple):
    """The rules that run for a version range and a selection, and what each is given."""

    rules: tuple[type[Rule], ...]
    # id -> why a rule the user asked for by name (--select) does not run in this range
    dropped: tuple[str, ...] = ()
    # report suppression comments that silence nothing (FI000)
    unused_suppressions: bool = True
    versions: tuple[Version, Version] | None = None  # the run's --from and --to

    def settings(
        self, options: Mapping[str, Mapping[str, Any]] | None = None
    ) -> tuple[tuple[str, RuleSettings], ...]:
        """Per rule: its configured option values, and the APIs the other selected rules own
        (the data-driven rule leaves those to them)."""
        options = options or {}
        out = []
        for cls in self.rules:
            others = [c for c in self.rules if c is not cls]
            deferred = frozenset().union(*(c.owns_apis for c in others))
            parameters = frozenset().union(
                *(
                    c.parameters_owned(*self.versions) if self.versions else c.owns_parameters
                    for c in others
                )
            )
            values = tuple(sorted(options.get(cls.id, {}).items()))
            out.append((cls.id, RuleSettings(values, deferred, parameters)))
        return tuple(out)


def select(
    from_version: Version,
    to_version: Version,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
) -> Selection:
    """The rules that run for ``--from``/``--to`` and ``--select``/``--ignore``.

    ``select`` and ``ignore`` take codes, code prefixes (``FI0``) or ids. A rule selected by
    name that does not run in this range is named in ``dropped``, with the reason.
    """
    select, ignore = list(select), list(ignore)
    _check_selectors([*select, *ignore])
    chosen = []
    dropped = []
    for cls in all_rules():
        if select and not any(_matches(cls, s) for s in select):
            continue
        if any(_matches(cls, s) for s in ignore):
            continue
        if cls.data_driven:
            if not from_version < to_version:
                continue
        elif not in_range(cls.introduced_in, from_version, to_version):
            if select:
                dropped.append(
                    f"{cls.code} ({cls.id}) is selected but does not run for {from_version} ->"
                    f" {to_version}: it migrates the change of FlashInfer {cls.introduced_in}"
                )
            continue
        chosen.append(cls)
    unused = (not select or any(_unused_suppression(s) for s in select)) and not any(
        _unused_suppression(s) for s in ignore
    )
    return Selection(tuple(chosen), tuple(dropped), unused, (from_version, to_version))


def rule_options(table: Mapping[str, Any], where: str) -> dict[str, dict[str, Any]]:
    """Each rule's table of a configuration, checked against the options the rule declares
    (`migrate_fi.project.config.load_config` is given this)."""
    out: dict[str, dict[str, Any]] = {}
    for name, options in table.items():
        try:
            cls = lookup(name)
        except SelectionError:
            raise ConfigError(f"{where}: unknown rule {name!r} (see `migrate-fi rules`)") from None
        if not isinstance(options, dict):
            raise ConfigError(f"{where}: {name} must be a table of options")
        declared = {o.name: o for o in cls.options}
        values = out.setdefault(cls.id, {})
        for key, value in options.items():
            option = declared.get(key)
            if option is None:
                known = ", ".join(sorted(declared)) or "none"
                raise ConfigError(
                    f"{where}.{name}: unknown option {key!r} of {cls.code} (its options: {known})"
                )
            try:
                values[key] = option.parse(value, f"{where}.{name}")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
    return out
