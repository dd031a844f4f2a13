"""``[tool.migrate-fi]`` in ``pyproject.toml``: a project's defaults, and the rules' options.

    [tool.migrate-fi]
    to = "0.7.4"                 # the FlashInfer version to migrate to
    from = "0.6.8.post1"         # default: read from the project's pins
    select = ["FI0"]             # rules by code, code prefix or id
    ignore = ["FI003"]
    exclude = ["third_party/"]   # gitignore patterns, relative to this file's folder
    unsafe-fixes = false         # also apply `review` fixes
    keywords = "tail"            # or "all"
    respect-gitignore = true
    output-format = "text"       # text, json, github, sarif

    [tool.migrate-fi.rules.FI004]   # a rule's own options, by code or id (`migrate-fi explain`)
    group-names = ["device_group", "tp_group"]

Found next to the code: the nearest ``pyproject.toml`` with a ``[tool.migrate-fi]`` table, from
the first path given upward (``--config FILE`` names one), else the one table under the paths
checked (`migrate_fi.cli` reads it from the pin search); any other table under the paths is not
read, and the run says so. Precedence: command line, then this table, then the built-in
defaults. A key that is not known is an error naming it, as is a value
of the wrong type: a typo must never silently change what a CI gate checks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from migrate_fi.base.depends import watch
from migrate_fi.base.files import read_regular
from migrate_fi.base.toml import tomllib

__all__ = [
    "Config",
    "ConfigError",
    "RuleOptions",
    "find_config",
    "load_config",
]

# Checks the rules' tables against the options each rule declares (`migrate_fi.run.registry`
# knows the rules; this module does not): the tables and where they were read, to each rule
# id's values. Raises ConfigError.
RuleOptions = Callable[[Mapping[str, Any], str], dict[str, dict[str, Any]]]


TABLE = "migrate-fi"
_CHOICES = {
    "keywords": ("tail", "all"),
    "output-format": ("text", "json", "github", "sarif"),
}
_TYPES: dict[str, type] = {
    "from": str,
    "to": str,
    "select": list,
    "ignore": list,
    "exclude": list,
    "unsafe-fixes": bool,
    "keywords": str,
    "respect-gitignore": bool,
    "output-format": str,
    "rules": dict,
}


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Config:
    path: str | None = None  # the pyproject.toml it came from (None: no configuration)
    values: Mapping[str, Any] = field(default_factory=dict)  # top-level keys as written
    rules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # id -> option -> value

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def folder(self) -> str:
        return os.path.dirname(self.path) if self.path else os.getcwd()


def _read_toml(path: str) -> dict[str, Any]:
    toml = tomllib()
    try:
        return toml.loads(read_regular(path).decode("utf-8"))  # type: ignore[no-any-return]
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not valid TOML (not UTF-8)") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None


def find_config(paths: Iterable[str]) -> str | None:
    """The nearest pyproject.toml with a [tool.migrate-fi] table, upward from the first path."""
    first = next(iter(paths), ".")
    folder = os.path.abspath(first if os.path.isdir(first) else os.path.dirname(first) or ".")
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        watch(candidate)  # (a run replayed relies on it: `migrate_fi.run.warm`)
        if os.path.isfile(candidate):
            try:
                raw = read_regular(candidate)
            except OSError:
                raw = b""
            if b"migrate-fi" in raw and TABLE in _read_toml(candidate).get("tool", {}):
                return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def load_config(path: str | None, rule_options: RuleOptions) -> Config:
    """Read and check ``[tool.migrate-fi]`` of ``path`` (None: the empty configuration);
    ``rule_options`` checks the rules' own tables."""
    if path is None:
        return Config()
    table = _read_toml(path).get("tool", {}).get(TABLE)
    if table is None:
        raise ConfigError(f"{path}: no [tool.{TABLE}] table")
    where = f"{path}: [tool.{TABLE}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key, value in table.items():
        expected = _TYPES.get(key)
        if expected is None:
            known = ", ".join(sorted(_TYPES))
            raise ConfigError(f"{where}: unknown key {key!r} (known keys: {known})")
        if not isinstance(value, expected):
            raise ConfigError(f"{where}: {key} must be a {_type_name(expected)}")
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key} must be a list of strings")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise ConfigError(f"{where}: {key} must be one of {', '.join(_CHOICES[key])}")
    rules = rule_options(table.get("rules", {}), f"{path}: [tool.{TABLE}.rules]")
    values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in table.items() if k != "rules"}
    return Config(path, values, rules)


def _type_name(t: type) -> str:
    return {str: "string", list: "list of strings", bool: "boolean (true or false)", dict: "table"}[
        t
    ]
