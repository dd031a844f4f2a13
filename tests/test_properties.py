"""Property tests (hypothesis): random calls of APIs whose positional binding changed (positional
and keyword mixes, comments, line breaks, nested calls, starred arguments) are rewritten so that

- the output parses;
- binding the new call against the OLD signature gives the same parameter-to-argument mapping
  as the old call did, and binding it against the NEW signature gives that mapping too (the
  call means on the new release what it meant on the old one);
- a call whose positions cannot be known (``*args``) is left as it was;
- a second run changes nothing.

Signatures come from the bundled API data, the same the rules read: `fp4_quantize` (FI001,
0.6.10 -> 0.6.11) and a function the data-driven rule (FI002) finds changed.
"""

from __future__ import annotations

import ast
import inspect
import itertools
from dataclasses import dataclass
from functools import cache

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from migrate_fi.api.differ import CallSignature, api_for, callable_diff, changed_callables  # noqa: E402
from migrate_fi.base.results import Status  # noqa: E402
from migrate_fi.base.versions import parse_version  # noqa: E402
from migrate_fi.framework.rule import RunOptions  # noqa: E402
from migrate_fi.run.pipeline import Mode, process_source  # noqa: E402
from migrate_fi.run.registry import select  # noqa: E402

_KINDS = {
    "P": inspect.Parameter.POSITIONAL_ONLY,
    "A": inspect.Parameter.POSITIONAL_OR_KEYWORD,
    "V": inspect.Parameter.VAR_POSITIONAL,
    "K": inspect.Parameter.KEYWORD_ONLY,
    "W": inspect.Parameter.VAR_KEYWORD,
}


@dataclass(frozen=True)
class Target:
    rule: str
    old: str
    new: str
    path: str  # flashinfer.<name>

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    def signature(self, version: str) -> inspect.Signature:
        return to_inspect(api_for(version).callable(self.path))


def to_inspect(sig: CallSignature | None) -> inspect.Signature:
    assert sig is not None
    params = []
    for p in sig.params:
        default = inspect.Parameter.empty if p.default is None else p.default
        if p.kind in ("V", "W"):
            default = inspect.Parameter.empty
        params.append(inspect.Parameter(p.name, _KINDS[p.kind], default=default))
    return inspect.Signature(params)


@cache
def fi002_target() -> Target:
    """A FlashInfer function (not a method) whose positional binding changed between two
    consecutive releases, with a plain signature (no shim, no *args), no parameter removed or
    newly required, other than FI001's."""
    from migrate_fi.api.store import available_releases

    releases = available_releases()
    for old, new in itertools.pairwise(releases):
        for path, (_, diff) in sorted(changed_callables(old, new).items()):
            if diff is None or diff.affected_from is None or "(" in path or path == FP4.path:
                continue
            if diff.removed or diff.newly_required:
                continue  # (reported, never rewritten: no binding to keep)
            before, after = diff.old, diff.new
            plain = all(p.kind in ("A", "K") for p in (*before.params, *after.params))
            simple = not before.shim and not after.shim and len(before.positional) <= 12
            if plain and simple and callable_diff(path, old, new) is not None:
                return Target("FI002", old, new, path)
    pytest.skip("no plain function with a positional change in the bundled data")


FP4 = Target("FI001", "0.6.10", "0.6.11", "flashinfer.fp4_quantize")

VALUES = st.sampled_from(
    [
        "x",
        "y_1",
        "0",
        "16",
        "True",
        "None",
        "f(a, b)",
        "g(h(1), k=2)",
        "(a + b)",
        "((a))",
        "(a) * b",
        "[1, 2]",
        "'s,t'",
        "'#('",
        "(x for x in a)",
        "(b := 1)",
        "lambda q: (q, 1)",
    ]
)


@st.composite
def calls(draw, target: Target, nested: str | None = None, callee: str | None = None) -> str:
    """A call of ``target`` (through ``callee``, its name by default) in source form, valid
    for its old signature (or with *args)."""
    sig = api_for(target.old).callable(target.path)
    assert sig is not None
    positional = sig.positional
    n = draw(st.integers(0, len(positional)))
    pos_values = [draw(VALUES) for _ in range(n)]
    if nested is not None and pos_values and draw(st.booleans()):
        pos_values[draw(st.integers(0, n - 1))] = nested
    taken = {p.name for p in positional[:n]}
    free = [p.name for p in sig.params if p.kind in ("A", "K") and p.name not in taken]
    required = [p.name for p in sig.params if p.default is None and p.name not in taken]
    chosen = draw(st.lists(st.sampled_from(free), unique=True)) if free else []
    keywords = list(dict.fromkeys([*required, *chosen]))
    starred = draw(st.booleans()) and draw(st.booleans())  # a quarter of the calls
    pieces = pos_values + (["*rest"] if starred else []) + [f"{k}={draw(VALUES)}" for k in keywords]
    out = []
    for i, piece in enumerate(pieces):
        out.append(piece)
        if i < len(pieces) - 1:
            out.append(",")
            out.append(
                draw(st.sampled_from([" ", "\n        ", "  # note, (\n        ", " \\\n        "]))
            )
    trailing = draw(st.sampled_from(["", ",\n    "])) if pieces else ""
    return f"{callee or target.name}({''.join(out)}{trailing})"


def run(target: Target, source: str, mode: Mode = Mode.APPLY, splice_text: bool = True):
    from_v, to_v = parse_version(target.old), parse_version(target.new)
    selection = select(from_v, to_v, [target.rule])
    options = RunOptions(from_v, to_v, rules=selection.settings(), splice_text=splice_text)
    return process_source(source.encode(), "t.py", selection.rules, options, mode)


def calls_of(source: str, callee: str) -> list[ast.Call]:
    """The calls of ``callee`` (as `ast.unparse` writes it), in source order (a rewrite only
    inserts `name=`: the order of calls, and of the arguments in each, stays)."""
    found = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and ast.unparse(n.func) == callee
    ]
    return sorted(found, key=lambda c: (c.lineno, c.col_offset))


def mapping(sig: inspect.Signature, call: ast.Call) -> dict[str, int]:
    """Parameter -> which argument of the call (its place in the source) it binds to."""
    written = sorted(
        [*call.args, *(k.value for k in call.keywords)], key=lambda a: (a.lineno, a.col_offset)
    )
    ordinal = {id(a): i for i, a in enumerate(written)}
    args = [ordinal[id(a)] for a in call.args]
    kwargs = {k.arg: ordinal[id(k.value)] for k in call.keywords if k.arg is not None}
    return dict(sig.bind(*args, **kwargs).arguments)


# How the code reaches the function: each a module with ``{call}`` in it, and the callee as
# the call names it. Every form is one the resolution is certain of: the call is rewritten.
FORMS = {
    "imported name": (
        "from {module} import {name}\n\n\ndef t(x, y_1, a, b, rest):\n    return {call}\n",
        "{name}",
    ),
    "dict of functions": (
        "from {module} import {name}\n\nOPS = {{'k': {name}}}\n\n\n"
        "def t(x, y_1, a, b, rest):\n    return {call}\n",
        "OPS['k']",
    ),
    "staticmethod class attribute": (
        "import {module} as m\n\n\nclass K:\n    fn = staticmethod(m.{name})\n\n"
        "    def t(self, x, y_1, a, b, rest):\n        return {call}\n",
        "self.fn",
    ),
    "parameter default": (
        "from {module} import {name}\n\n\ndef outer(x, y_1, a, b, rest):\n"
        "    def t(x, y_1, a, b, rest, fn={name}):\n        return {call}\n\n"
        "    return t(x, y_1, a, b, rest)\n",
        "fn",
    ),
    "parameter passed the function": (
        "import {module}\n\n\ndef outer(x, y_1, a, b, rest):\n"
        "    def t(fn, x, y_1, a, b, rest):\n        return {call}\n\n"
        "    return t({path}, x, y_1, a, b, rest)\n",
        "fn",
    ),
}


def callee(target: Target, form: str) -> str:
    return FORMS[form][1].format(name=target.name)


def module(target: Target, call: str, form: str = "imported name") -> str:
    template = FORMS[form][0]
    mod = target.path.rsplit(".", 1)[0]
    return template.format(module=mod, name=target.name, call=call, path=target.path)


def check_property(target: Target, call: str, form: str = "imported name") -> None:
    source = module(target, call, form)
    result = run(target, source)
    assert result.error is None, (result.error, source)
    new = result.new_text if result.status is Status.CHANGED else source
    ast.parse(new)
    old_sig, new_sig = target.signature(target.old), target.signature(target.new)
    name = callee(target, form)
    old_calls, new_calls = calls_of(source, name), calls_of(new, name)
    assert len(old_calls) == len(new_calls)
    for old_call, new_call in zip(old_calls, new_calls, strict=True):
        if any(isinstance(a, ast.Starred) for a in old_call.args):
            # positions unknown: reported, never rewritten
            assert len(new_call.args) == len(old_call.args), new
            assert [k.arg for k in new_call.keywords] == [k.arg for k in old_call.keywords], new
            continue
        before = mapping(old_sig, old_call)
        assert mapping(old_sig, new_call) == before, new
        assert mapping(new_sig, new_call) == before, new
    # the edits said as text (no LibCST) give the same bytes as the LibCST transforms
    through_libcst = run(target, source, splice_text=False)
    assert through_libcst.new_text == result.new_text, source
    # idempotent
    again = run(target, new)
    assert again.error is None and again.status is not Status.CHANGED, new


PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY
@given(data=st.data())
def test_fp4_quantize_calls_keep_their_binding(data: st.DataObject) -> None:
    form = data.draw(st.sampled_from(sorted(FORMS)))
    inner = data.draw(calls(FP4, callee=callee(FP4, form)))
    check_property(FP4, data.draw(calls(FP4, nested=inner, callee=callee(FP4, form))), form)


@PROPERTY
@given(data=st.data())
def test_data_driven_calls_keep_their_binding(data: st.DataObject) -> None:
    target = fi002_target()
    form = data.draw(st.sampled_from(sorted(FORMS)))
    check_property(target, data.draw(calls(target, callee=callee(target, form))), form)
