"""Value-level changes no signature shows, written once per release in a small TOML file.

Some releases change what a parameter's values mean while its signature only shows a new name:
0.6.15 replaced `CuteDslMoEWrapper(activation="silu")` with `activation_type=ActivationType.Swiglu`
(an enum for a string), 0.6.3 replaced `gated_act_type=0` (GatedActType.SwiGlu) with
`activation_type=ActivationType.Swiglu.value` (3: another number for the same activation). The
release data can say that a keyword went and another came; only a person can say how the values
map. Those facts live in ``migrate_fi/data/values/<release>.toml``, one file per release, read
by FI010 (`migrate_fi.codemods.value_migrations`); a file in the user's data folder
(``<data folder>/values/<release>.toml``, next to what `signatures update` writes) adds releases.
For a release in both, the bundled file is used.

The format (every key but ``new_keyword``, ``import``, ``link``, ``reason_zh`` and ``old_member``
required)::

    [[change]]
    apis = ["flashinfer.CuteDslMoEWrapper"]   # public paths of the callables (on the old release)
    keyword = "activation"                   # the keyword on the release before
    new_keyword = "activation_type"          # its name on this release (default: the same)
    import = { module = "flashinfer", name = "ActivationType" }   # what the new values need
    reason = "the activation is an ActivationType member, no longer a string"
    reason_zh = "激活函数改为 `ActivationType` 成员，不再是字符串"   # (the Chinese report)
    link = "https://github.com/flashinfer-ai/flashinfer/pull/3737"
    values = [
      # old: the literal the call passes; old_member: the same value written as an enum member
      # (resolved like any FlashInfer name); new: the Python expression passed instead
      { old = "silu", new = "ActivationType.Swiglu" },
    ]

A file that does not follow it stops the run with one line naming the file and what is wrong.
"""

from __future__ import annotations

import ast
import os
from functools import cache
from typing import Any, NamedTuple

from migrate_fi.api.store import release_files
from migrate_fi.base.versions import parse_version

__all__ = [
    "VALUES_DIR",
    "ValueChange",
    "ValueDataError",
    "ValueMap",
    "changes_in_range",
    "load_value_changes",
]

VALUES_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "values"
)
_KEYS = {"apis", "keyword", "new_keyword", "import", "reason", "reason_zh", "link", "values"}
_VALUE_KEYS = {"old", "old_member", "new"}


class ValueDataError(Exception):
    """A value-change file that cannot be used; one line naming it."""


class ValueMap(NamedTuple):
    old: object  # the literal value a call passes on the old release
    old_member: str | None  # the same value as a FlashInfer enum member (a public path)
    new: str  # the Python expression that means the same on the new release


class ValueChange(NamedTuple):
    release: str  # the release that made the change
    apis: tuple[str, ...]
    keyword: str
    new_keyword: str
    values: tuple[ValueMap, ...]
    import_module: str | None
    import_name: str | None
    reason: str
    link: str | None
    source: str  # the file it was read from (for messages)
    reason_zh: str = ""  # ``reason`` in Chinese (code in backquotes); "": not given

    def mapped(self, value: object) -> ValueMap | None:
        for entry in self.values:
            if type(entry.old) is type(value) and entry.old == value:
                return entry
        return None


@cache
def load_value_changes() -> tuple[ValueChange, ...]:
    """Every value change of every release there is a file for, oldest release first."""
    from migrate_fi.base.toml import load_reviewed

    out: list[ValueChange] = []
    for release, path in release_files(VALUES_DIR, "values").items():
        try:
            parse_version(release)
        except ValueError:
            raise ValueDataError(
                f"{path}: the file name must be a FlashInfer release (0.6.15.toml)"
            ) from None
        try:
            data = load_reviewed(path)
        except OSError as exc:
            raise ValueDataError(f"{path}: cannot be read ({exc.strerror})") from None
        except ValueError as exc:  # (`tomllib.TOMLDecodeError`)
            raise ValueDataError(f"{path}: not valid TOML ({exc})") from None
        unknown = set(data) - {"change"}
        if unknown:
            raise ValueDataError(f"{path}: unknown table {sorted(unknown)[0]!r} (only [[change]])")
        changes = data.get("change", [])
        if not isinstance(changes, list):
            raise ValueDataError(f"{path}: `change` must be an array of tables ([[change]])")
        for i, entry in enumerate(changes, 1):
            out.append(_change(release, path, i, entry))
    return tuple(sorted(out, key=lambda c: parse_version(c.release)))


def _change(release: str, path: str, index: int, entry: Any) -> ValueChange:
    where = f"{path}: change {index}"
    if not isinstance(entry, dict):
        raise ValueDataError(f"{where}: not a table")
    unknown = set(entry) - _KEYS
    if unknown:
        raise ValueDataError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    apis = entry.get("apis")
    if (
        not isinstance(apis, list)
        or not apis
        or not all(isinstance(a, str) and a.startswith("flashinfer.") for a in apis)
    ):
        raise ValueDataError(f"{where}: `apis` must list public paths (flashinfer.X)")
    keyword = _identifier(entry.get("keyword"), f"{where}: `keyword`")
    new_keyword = _identifier(entry.get("new_keyword", keyword), f"{where}: `new_keyword`")
    reason = entry.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueDataError(f"{where}: `reason` must say why (a sentence)")
    reason_zh = entry.get("reason_zh", "")
    if not isinstance(reason_zh, str):
        raise ValueDataError(f"{where}: `reason_zh` must be a string (the reason in Chinese)")
    link = entry.get("link")
    if link is not None and (not isinstance(link, str) or not link.startswith("https://")):
        raise ValueDataError(f"{where}: `link` must be an https:// address")
    module = name = None
    if "import" in entry:
        spec = entry["import"]
        if not isinstance(spec, dict) or set(spec) - {"module", "name"} or "module" not in spec:
            raise ValueDataError(f"{where}: `import` must be {{ module = ..., name = ... }}")
        module = str(spec["module"])
        name = _identifier(spec.get("name"), f"{where}: `import.name`")
    values = entry.get("values")
    if not isinstance(values, list) or not values:
        raise ValueDataError(f"{where}: `values` must list {{ old = ..., new = ... }}")
    maps = []
    for j, value in enumerate(values, 1):
        here = f"{where}, value {j}"
        if (
            not isinstance(value, dict)
            or set(value) - _VALUE_KEYS
            or not {"old", "new"} <= set(value)
        ):
            raise ValueDataError(f"{here}: must be {{ old = ..., new = ... }}")
        old = value["old"]
        if not isinstance(old, (str, int, float, bool)):
            raise ValueDataError(f"{here}: `old` must be a string, number or boolean")
        new = value["new"]
        try:
            ast.parse(str(new), mode="eval")
        except SyntaxError:
            raise ValueDataError(f"{here}: `new` is not a Python expression: {new!r}") from None
        member = value.get("old_member")
        if member is not None and not (
            isinstance(member, str) and member.startswith("flashinfer.")
        ):
            raise ValueDataError(f"{here}: `old_member` must be a public path (flashinfer.X.Y)")
        maps.append(ValueMap(old, member, str(new)))
    return ValueChange(
        release,
        tuple(apis),
        keyword,
        new_keyword,
        tuple(maps),
        module,
        name,
        reason.strip(),
        link,
        path,
        reason_zh.strip(),
    )


def _identifier(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise ValueDataError(f"{what} must be a Python identifier")
    return value


def changes_in_range(from_version: str, to_version: str) -> tuple[ValueChange, ...]:
    """The changes of the releases after ``from_version`` up to ``to_version``."""
    lo, hi = parse_version(from_version), parse_version(to_version)
    return tuple(c for c in load_value_changes() if lo < parse_version(c.release) <= hi)


def forget() -> None:
    load_value_changes.cache_clear()
