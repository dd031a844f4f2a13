"""Where a project writes FlashInfer's version: pins, install lines, variables, checks, examples.

`scan(path, text)` finds every version written in one file, in the formats projects use:
- requirements: PEP 508 strings in `pyproject.toml` (PEP 621 dependencies and optional
  dependencies), `requirements*.txt` / `*.in`, `setup.cfg`, string literals of `setup.py` and
  other Python files, `pip install` lines of Dockerfiles and shell scripts, with extras
  (`flashinfer_python[cu13]==0.6.12`), ranges (`>=0.6.8,<0.7`), wildcards, local tags;
- Poetry dependencies (`flashinfer-python = "^0.6.12"`, `{version = "0.6.12", ...}`);
- variables: `ARG FLASHINFER_VERSION=0.6.12`, `ENV ...`, `FLASHINFER_PYTHON_REQUIRED=...` in shell
  scripts, `FLASHINFER_VERSION: 0.6.12` in YAML;
- JSON and YAML keys naming FlashInfer (`"flashinfer": "0.6.12"`);
- checks in Python: a call with a string naming FlashInfer's distribution and a version string
  (`assert_pkg_version("flashinfer_python", "0.6.12", ...)`, `check_pkg_version_at_least(...)`);
- examples: the version being migrated from, in a comment or docstring within a few lines of a
  FlashInfer mention (`min_version: Minimum version required (e.g., "0.6.12")`).
Names: `flashinfer-python`, `flashinfer_python`, the old `flashinfer`, and the packages kept in
step with it (`flashinfer-cubin`, `flashinfer-jit-cache`); other packages only when asked
(`companions`), never by accident: a name is matched whole.
"""

from __future__ import annotations

import ast
import enum
import io
import os
import re
import tokenize
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import cache

__all__ = [
    "CUBIN",
    "DEPENDENCY_FILE_PATTERNS",
    "JIT_CACHE",
    "MAIN",
    "PIN_FILE_PATTERNS",
    "Kind",
    "VersionRef",
    "canonical_name",
    "may_hold_versions",
    "scan",
]

MAIN = "flashinfer-python"
CUBIN = "flashinfer-cubin"
JIT_CACHE = "flashinfer-jit-cache"
FAMILY = {
    "flashinfer-python": MAIN,
    "flashinfer": MAIN,
    "flashinfer-cubin": CUBIN,
    "flashinfer-jit-cache": JIT_CACHE,
}

# files that declare dependencies (besides setup.py)
DEPENDENCY_FILE_PATTERNS = (
    "pyproject.toml",
    "requirements*.txt",
    "*requirements.txt",
    "requirements*.in",
    "requirements/*.txt",
    "requirements/*.in",
    "constraints*.txt",
    "setup.cfg",
)
# files that may hold pins or install lines (besides *.py)
PIN_FILE_PATTERNS = (
    *DEPENDENCY_FILE_PATTERNS,
    "Dockerfile",
    "Dockerfile.*",
    "*.Dockerfile",
    "*.dockerfile",
    "*.sh",
    "*.bash",
    "*.yml",
    "*.yaml",
    "*.json",
    "*.env",
)

_OP = r"(?:===|==|>=|<=|~=|!=|<|>)"
_VER = r"[0-9][0-9A-Za-z.*+!_-]*"
# a requirement: name, optional extras, one or more clauses
_REQUIREMENT = re.compile(
    rf"(?<![\w.-])(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<extras>\[[^\]]*\])?\s*"
    rf"(?P<spec>{_OP}\s*{_VER}(?:\s*,\s*{_OP}\s*{_VER})*)"
)
_WHOLE_REQUIREMENT = re.compile(
    rf"^[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*{_OP}\s*{_VER}(\s*,\s*{_OP}\s*{_VER})*\s*(;.*)?$"
)
_CLAUSE = re.compile(rf"(?P<op>{_OP})\s*(?P<ver>{_VER})")
# ARG/ENV/export FLASHINFER..._VERSION=0.6.12, FLASHINFER_REQUIRED: "0.6.12"
_VARIABLE = re.compile(
    r"(?P<var>\bFLASHINFER[A-Z0-9_]*?(?:VERSION|REQUIRED|VER)\b)\s*(?:=|:|\s)\s*[\"']?(?P<ver>"
    + _VER
    + r")"
)
# JSON / YAML keys: "flashinfer-python": "0.6.12", flashinfer_version: ==0.6.12
_KEY = re.compile(
    r"[\"']?(?P<key>flashinfer[A-Za-z0-9_-]*)[\"']?\s*:\s*[\"']?(?P<op>"
    + _OP
    + r")?\s*(?P<ver>"
    + _VER
    + r")"
)
# Poetry: flashinfer-python = "^0.6.12" / { version = "0.6.12", ... }
_POETRY = re.compile(
    r"^\s*[\"']?(?P<name>flashinfer[A-Za-z0-9_-]*)[\"']?\s*=\s*(?:\{[^}]*?version\s*=\s*)?"
    r"[\"'](?P<op>[\^~=<>!]*)\s*(?P<ver>" + _VER + r")"
)
_VERSION_LIKE = re.compile(r"^\d+(\.\d+)+([a-z]+\d*|\.post\d+|\.dev\d+)*(\+[\w.]+)?$")
# in source text, a string literal that may hold such a version (a cheap test before the walk)
_VERSION_LITERAL = re.compile(r"[\"']\d+(?:\.\d+)+[\w.+]*[\"']")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_NEAR = 3  # lines around a FlashInfer mention where an example of the old version counts


def canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


class Kind(str, enum.Enum):
    REQUIREMENT = "requirement"  # a PEP 508 pin or install line
    VARIABLE = "variable"  # FLASHINFER_VERSION=..., and JSON/YAML version keys
    CHECK = "check"  # a version check call in Python
    EXAMPLE = "example"  # the old version in a comment or docstring near a FlashInfer mention


@dataclass(frozen=True)
class VersionRef:
    """One version written in a file."""

    path: str
    line: int  # 1-based
    col: int  # 0-based, in characters, where the version text starts
    end_col: int
    version: str  # as written: "0.6.12", "0.6.*", "0.6.10+cu128"
    package: str  # canonical distribution name
    kind: Kind
    operator: str = ""  # "==", ">=", "~=", "<"... ("" for variables, checks, examples)
    context: str = ""  # the requirement, assignment or call, for messages
    in_comment: bool = False
    marker: bool = False  # the requirement has an environment marker

    @property
    def span(self) -> tuple[int, int, int, int]:
        return (self.line, self.col, self.line, self.end_col)


def _lines(text: str) -> list[str]:
    return [m.group(0).rstrip("\r\n") for m in _LINE.finditer(text)]


def _comment_start(line: str, hash_comments: bool) -> int:
    """Where a `#` comment starts on a line (outside quotes); len(line) when none."""
    if not hash_comments:
        return len(line)
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return i
    return len(line)


def _requirements(
    path: str, number: int, line: str, names: Collection[str], comment_at: int, offset: int = 0
) -> Iterator[VersionRef]:
    for m in _REQUIREMENT.finditer(line):
        package = canonical_name(m.group("name"))
        package = FAMILY.get(package, package)
        if package not in names:
            continue
        rest = line[m.end() :].lstrip()
        marker = rest.startswith(";")
        for clause in _CLAUSE.finditer(m.group("spec")):
            start = m.start("spec") + clause.start("ver")
            yield VersionRef(
                path,
                number,
                offset + start,
                offset + start + len(clause.group("ver")),
                clause.group("ver"),
                package,
                Kind.REQUIREMENT,
                clause.group("op"),
                m.group(0),
                in_comment=m.start() >= comment_at,
                marker=marker,
            )


def _family_names(companions: Collection[str]) -> set[str]:
    return {MAIN, CUBIN, JIT_CACHE} | {canonical_name(c) for c in companions}


def may_hold_versions(
    path: str, data: bytes, old_version: str | None = None, companions: Collection[str] = ()
) -> bool:
    """Whether `scan` may find anything in the file, from its bytes, without parsing it: what a
    Python file must contain to hold a version (other files: always)."""
    if not path.endswith(".py"):
        return True
    # Latin-1 maps every byte to one character: the ASCII names and operators match as in
    # the decoded text, whatever the file's encoding
    return _python_may_hold(data.decode("latin-1"), old_version, _family_names(companions))


def scan(
    path: str,
    text: str,
    old_version: str | None = None,
    companions: Collection[str] = (),
    tree: ast.Module | None = None,
) -> list[VersionRef]:
    """Every FlashInfer version written in the file (and the versions of ``companions``).
    ``tree``: the file's parsed tree when the caller has it (Python files)."""
    names = _family_names(companions)
    if path.endswith(".py"):
        if not _python_may_hold(text, old_version, names):
            return []
        return _scan_python(path, text, old_version, names, tree)
    base = os.path.basename(path)
    hash_comments = not base.endswith(".json")
    out: list[VersionRef] = []
    lines = _lines(text)
    poetry = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if base == "pyproject.toml" and stripped.startswith("["):
            poetry = stripped.startswith("[tool.poetry") and "dependencies" in stripped
        comment_at = _comment_start(line, hash_comments)
        found = list(_requirements(path, number, line, names, comment_at))
        if poetry and not found:
            m = _POETRY.match(line)
            if m and FAMILY.get(canonical_name(m.group("name"))):
                op = {"": "==", "^": "^", "~": "~"}.get(m.group("op"), m.group("op"))
                package = FAMILY[canonical_name(m.group("name"))]
                found.append(
                    _ref(path, number, m, package, Kind.REQUIREMENT, op, stripped, len(line))
                )
        if not found:
            found = [
                _ref(
                    path,
                    number,
                    m,
                    _package_of(m.group("var")),
                    Kind.VARIABLE,
                    "",
                    stripped,
                    comment_at,
                )
                for m in _VARIABLE.finditer(line)
            ]
        if not found and base.endswith((".json", ".yml", ".yaml")):
            found = [
                _ref(
                    path,
                    number,
                    m,
                    _package_of(m.group("key")),
                    Kind.VARIABLE,
                    m.group("op") or "",
                    stripped,
                    comment_at,
                )
                for m in _KEY.finditer(line)
            ]
        out += found
    if old_version:
        out += _examples_in_text(
            path, lines, old_version, {(r.line, r.col) for r in out}, hash_comments
        )
    return out


def _package_of(name: str) -> str:
    """The package a variable or key names: FLASHINFER_CUBIN_VERSION is the cubin's."""
    upper = name.upper()
    return CUBIN if "CUBIN" in upper else JIT_CACHE if "JIT" in upper else MAIN


def _ref(
    path: str,
    number: int,
    m: re.Match[str],
    package: str,
    kind: Kind,
    operator: str,
    context: str,
    comment_at: int,
) -> VersionRef:
    """A version found by a pattern with a ``ver`` group."""
    return VersionRef(
        path,
        number,
        m.start("ver"),
        m.end("ver"),
        m.group("ver"),
        package,
        kind,
        operator,
        context,
        in_comment=m.start() >= comment_at,
    )


def _mentions(line: str) -> bool:
    return "flashinfer" in line.lower()


def _near_mention(lines: list[str], number: int) -> bool:
    lo, hi = max(1, number - _NEAR), min(len(lines), number + _NEAR)
    return any(_mentions(lines[i - 1]) for i in range(lo, hi + 1))


def _examples_in_text(
    path: str, lines: list[str], old: str, taken: set[tuple[int, int]], hash_comments: bool
) -> list[VersionRef]:
    """The old version in a comment near a FlashInfer mention (text files)."""
    out = []
    if not hash_comments:
        return out
    pattern = re.compile(rf"(?<![\w.]){re.escape(old)}(?![\w.]*\d)")
    for number, line in enumerate(lines, 1):
        at = _comment_start(line, True)
        if at == len(line) or not _near_mention(lines, number):
            continue
        for m in pattern.finditer(line, at):
            if (number, m.start()) not in taken and _is_example(line, m.start(), m.end()):
                out.append(
                    VersionRef(
                        path,
                        number,
                        m.start(),
                        m.end(),
                        old,
                        MAIN,
                        Kind.EXAMPLE,
                        "",
                        line.strip(),
                        True,
                    )
                )
    return out


# ---------------------------------------------------------------------- Python


def _dist_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return FAMILY.get(canonical_name(node.value.split("[")[0].strip()))
    return None


@cache
def _rough_gate(names: frozenset[str]) -> re.Pattern[str]:
    """Matches wherever `_gate` does (in lower-cased text), and some more."""
    heads = sorted({re.split(r"[-_.]", n)[0].lower() for n in names} | {"flashinfer"})
    alternatives = "|".join(re.escape(h) for h in heads)
    return re.compile(rf"(?:{alternatives})[\w.-]*(?:\s*\[[^\]]*\])?(?:\s*{_OP}|[\"'])")


@cache
def _gate(names: frozenset[str], pins_only: bool = False) -> re.Pattern[str]:
    """What a Python file must contain to hold a pin, a check or a requirement of ``names``:
    a name followed by a version operator, or a quoted distribution name (a check's argument;
    ``pins_only``: not that)."""
    spelled = "|".join(
        sorted(
            (r"[-_.]".join(re.escape(part) for part in re.split(r"[-_.]", n)) for n in names),
            key=len,
            reverse=True,
        )
    )
    if "flashinfer-python" in names:
        spelled += "|flashinfer"  # the old name of the main package
    pin = rf"(?<![\w.-])(?:{spelled})(?:\s*\[[^\]]*\])?\s*{_OP}"
    quoted = rf"[\"'](?:{spelled})(?:\[[^\]]*\])?[\"']"
    return re.compile(pin if pins_only else f"{pin}|{quoted}", re.IGNORECASE)


def _python_may_hold(text: str, old: str | None, names: Collection[str]) -> bool:
    """A cheap test that most Python files fail: the full scan tokenizes the whole file."""
    if old is not None and old in text:
        return True
    key = frozenset(names)
    # a necessary condition first: the exact test's leading look-behind and case folding make
    # it scan slowly; this one starts with a literal, which the regex engine finds fast
    if _rough_gate(key).search(text.lower()) is None:
        return False
    return _gate(key).search(text) is not None


def _scan_python(
    path: str, text: str, old: str | None, names: Collection[str], tree: ast.Module | None
) -> list[VersionRef]:
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return []
    lines = _lines(text)
    out: list[VersionRef] = []
    taken: set[tuple[int, int]] = set()
    docstrings: set[int] | None = None  # read when the old version is met in a string
    # checks: a call with a FlashInfer distribution name and a version string
    calls = ast.walk(tree) if _VERSION_LITERAL.search(text) else ()
    for node in calls:
        if not isinstance(node, ast.Call):
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        packages = [p for p in (_dist_name(a) for a in args) if p]
        if not packages:
            continue
        for a in args:
            if (
                isinstance(a, ast.Constant)
                and isinstance(a.value, str)
                and _VERSION_LIKE.match(a.value)
                and a.lineno == a.end_lineno
            ):
                ref = _string_ref(
                    path, lines, a, a.value, packages[0], Kind.CHECK, ast.unparse(node.func)
                )
                if ref is not None:
                    out.append(ref)
                    taken.add((ref.line, ref.col))
    # requirements and examples inside strings and comments (tokenizing is the costly part:
    # skipped where no line holds a requirement or the old version)
    if not ((old is not None and old in text) or _gate(frozenset(names), True).search(text)):
        return out
    for token in _tokens(text):
        number, col = token.start
        if token.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        in_comment = token.type == tokenize.COMMENT
        whole: bool | None = None  # is the string one requirement? (asked when one is found)
        for k, piece in enumerate(token.string.splitlines()):
            line_no = number + k
            offset = col if k == 0 else 0
            for ref in _requirements(path, line_no, piece, names, len(piece), offset):
                if (ref.line, ref.col) in taken:
                    continue
                if whole is None:
                    whole = not in_comment and _is_requirement_string(token.string)
                if whole:  # the string is a requirement: `install_requires=["flashinfer..."]`
                    out.append(ref)
                elif ref.operator == "==" and ref.version == old:
                    # prose and messages: only an exact pin of the old version is an example;
                    # "requires FlashInfer >= 0.6.18" states when a feature came, and stays
                    out.append(_as_comment(ref))
                else:
                    continue
                taken.add((ref.line, ref.col))
            if old is None or old not in piece:
                continue
            if token.type == tokenize.STRING:
                if docstrings is None:
                    docstrings = _docstring_lines(tree)
                if number not in docstrings:
                    continue
            if not _near_mention(lines, line_no):
                continue
            for m in re.finditer(rf"(?<![\w.]){re.escape(old)}(?![\w.]*\d)", piece):
                key = (line_no, offset + m.start())
                if key in taken or not _is_example(piece, m.start(), m.end()):
                    continue
                taken.add(key)
                out.append(
                    VersionRef(
                        path,
                        line_no,
                        offset + m.start(),
                        offset + m.end(),
                        old,
                        MAIN,
                        Kind.EXAMPLE,
                        "",
                        lines[line_no - 1].strip(),
                        in_comment,
                    )
                )
    return out


_QUOTES = "\"'`"
_EXAMPLE_LEAD = re.compile(r"(e\.g\.|for example|such as|i\.e\.)[\s,:]*\(?[\"'`]?$", re.IGNORECASE)


def _is_example(piece: str, start: int, end: int) -> bool:
    """A version written as an example: quoted (``"0.6.12"``, `` `0.6.12` ``) or after "e.g.";
    a version in prose ("FlashInfer 0.7.2 exposes ...") is a statement of fact, and stays."""
    before, after = piece[start - 1 : start], piece[end : end + 1]
    if before and after and before in _QUOTES and after in _QUOTES:
        return True
    return bool(_EXAMPLE_LEAD.search(piece[max(0, start - 20) : start]))


def _is_requirement_string(token: str) -> bool:
    """A string literal whose whole value is one requirement (`"flashinfer-python==0.6.12"`)."""
    try:
        value = ast.literal_eval(token)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return False
    return isinstance(value, str) and bool(_WHOLE_REQUIREMENT.match(value.strip()))


def _as_comment(ref: VersionRef) -> VersionRef:
    return VersionRef(
        ref.path,
        ref.line,
        ref.col,
        ref.end_col,
        ref.version,
        ref.package,
        Kind.EXAMPLE,
        ref.operator,
        ref.context,
        True,
        ref.marker,
    )


def _tokens(text: str) -> Iterator[tokenize.TokenInfo]:
    try:
        yield from tokenize.generate_tokens(io.StringIO(text).readline)
    except (tokenize.TokenError, SyntaxError):
        return


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The lines where docstrings (a body's first bare string) start."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body:
            first = body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.add(first.lineno)
    return out


def _string_ref(
    path: str,
    lines: list[str],
    node: ast.Constant,
    value: str,
    package: str,
    kind: Kind,
    context: str,
) -> VersionRef | None:
    """The span of ``value`` inside the string literal ``node`` (on one line)."""
    line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    raw = line.encode("utf-8")[node.col_offset : node.end_col_offset].decode("utf-8", "replace")
    start_chars = len(line.encode("utf-8")[: node.col_offset].decode("utf-8", "replace"))
    at = raw.find(value)
    if at < 0:
        return None
    col = start_chars + at
    return VersionRef(path, node.lineno, col, col + len(value), value, package, kind, "", context)
