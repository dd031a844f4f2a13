"""The shared analysis, tested directly: scopes, name resolution, reading values and dicts."""

from __future__ import annotations

import ast
import textwrap

import pytest

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.values import assigned_values, read_dict


def resolver_for(source: str, module: str | None = None, package: bool = False, aliases=None):
    return NameResolver(ast.parse(textwrap.dedent(source)), module, package, aliases)


def resolve_call(source: str, index: int = -1, **kw) -> set[str | None]:
    """Qualified names the ``index``-th call's callee may refer to (None for opaque ones)."""
    r = resolver_for(source, **kw)
    call, scope = r.calls[index]
    return {c.qualname for c in r.resolve(call.func, scope).candidates}


def method_calls(r: NameResolver, method: str) -> list[set[str | None]]:
    """For each call of a method named ``method``, in order, what its callee may be."""
    return [
        {c.qualname for c in r.resolve(call.func, scope).candidates}
        for call, scope in r.calls
        if isinstance(call.func, ast.Attribute) and call.func.attr == method
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import flashinfer\nflashinfer.fp4_quantize(x)", {"flashinfer.fp4_quantize"}),
        ("import flashinfer as fi\nfi.fp4_quantize(x)", {"flashinfer.fp4_quantize"}),
        ("import flashinfer.comm\nflashinfer.comm.f(x)", {"flashinfer.comm.f"}),
        ("from flashinfer import comm as c\nc.f(x)", {"flashinfer.comm.f"}),
        ("from flashinfer import fp4_quantize as q\nq(x)", {"flashinfer.fp4_quantize"}),
        ("import flashinfer\nq = flashinfer.fp4_quantize\nq(x)", {"flashinfer.fp4_quantize"}),
        (
            "import pytest\nfi = pytest.importorskip('flashinfer')\nfi.f(x)",
            {"flashinfer.f"},
        ),
        ("from flashinfer import *\nfp4_quantize(x)", {"flashinfer.fp4_quantize"}),
        ("print(x)", set()),  # a builtin: nothing known
    ],
)
def test_import_forms(source: str, expected: set[str]) -> None:
    assert resolve_call(source) == expected


def test_relative_imports_use_the_module_path() -> None:
    src = "from ..quantization import fp4_quantize\nfp4_quantize(x)"
    assert resolve_call(src, module="flashinfer.fused_moe.core") == {
        "flashinfer.quantization.fp4_quantize"
    }
    src = "from . import comm\ncomm.f(x)"
    assert resolve_call(src, module="flashinfer", package=True) == {"flashinfer.comm.f"}


def test_function_scope_shadows_the_module() -> None:
    src = """
    from flashinfer import fp4_quantize
    def f(fp4_quantize):
        return fp4_quantize(x)
    def g():
        return fp4_quantize(x)
    """
    assert resolve_call(src, 0) == {None}  # the parameter
    assert resolve_call(src, 1) == {"flashinfer.fp4_quantize"}


def test_class_body_is_invisible_from_methods() -> None:
    src = """
    import flashinfer
    q = flashinfer.fp4_quantize
    class A:
        q = other
        def m(self):
            return q(x)
    """
    assert resolve_call(src) == {"flashinfer.fp4_quantize"}


def test_try_except_fallbacks_are_alternatives() -> None:
    src = """
    try:
        from flashinfer import fp4_quantize
    except ImportError:
        from sgl_kernel import fp4_quantize
    fp4_quantize(x)
    """
    assert resolve_call(src) == {"flashinfer.fp4_quantize", "sgl_kernel.fp4_quantize"}


def test_a_none_fallback_is_no_alternative() -> None:
    src = """
    try:
        from flashinfer import fp4_quantize
    except ImportError:
        fp4_quantize = None
    fp4_quantize(x)
    """
    assert resolve_call(src) == {"flashinfer.fp4_quantize"}


def test_global_and_nonlocal() -> None:
    src = """
    q = None
    def setup():
        global q
        from flashinfer import fp4_quantize as q
    def use():
        return q(x)
    """
    assert resolve_call(src) == {"flashinfer.fp4_quantize"}


def test_instances_and_self_attributes() -> None:
    src = """
    import flashinfer
    class Layer:
        def __init__(self):
            self.w = flashinfer.Wrapper(buf)
        def forward(self):
            return self.w.plan(x)
    """
    assert resolve_call(src) == {"flashinfer.Wrapper().plan"}


def test_attributes_of_an_instance_of_a_class_of_the_module() -> None:
    """An instance of a class of this module, however it is known (a parameter annotated with
    the class, a dataclass field that declares it, a construction), holds in ``attr`` what the
    class's methods set on ``self.attr``: Aphrodite's sparse MLA backend plans through
    ``self.wrapper`` in its ``_SM90State`` and runs through ``state.wrapper`` outside it (a
    private class is the project's class too). What the methods set to something else, or an
    attribute they never set, is not FlashInfer's."""
    src = """
    from dataclasses import dataclass
    import flashinfer

    class _State:
        def __init__(self, ws):
            from flashinfer.mla import BatchMLAPagedAttentionWrapper
            self.wrapper = BatchMLAPagedAttentionWrapper(ws)
            self.other = make_other()

    @dataclass
    class Meta:
        state: _State | None = None

    def forward(meta: Meta, state: _State, x):
        held = meta.state
        assert held is not None
        held.wrapper.run(x)
        state.wrapper.run(x)
        _State(ws).wrapper.run(x)
        state.other.run(x)
        state.missing.run(x)
    """
    found = method_calls(resolver_for(src, module="proj.backend"), "run")
    instance = {"flashinfer.mla.BatchMLAPagedAttentionWrapper().run"}
    assert found[:3] == [instance] * 3
    assert not any(q and q.startswith("flashinfer.") for f in found[3:] for q in f), found


def test_a_union_of_classes_of_the_module_keeps_those_that_have_the_attribute() -> None:
    """SGLang's MLA backend holds ``Union[PrefillMetadata, DecodeMetadata]`` in
    ``self.forward_metadata`` and runs ``self.forward_metadata.decode_wrapper.run(...)``: a field
    of the second only, so the wrapper is FlashInfer's, as a type checker reads it (the first,
    a dataclass with no base, cannot have the attribute). A class that may get attributes
    another way keeps the call unknown: a base, a subclass in the file, a ``__getattr__``, a
    decorator other than ``dataclass``, the attribute assigned on some object of the file,
    ``setattr``. A method's
    ``self.decode_wrapper = ...`` sets it on its own class's instances only."""
    template = """
    from dataclasses import dataclass
    from typing import Union
    from flashinfer import BatchMLAPagedAttentionWrapper

    @dataclass
    class DecodeMetadata:
        decode_wrapper: BatchMLAPagedAttentionWrapper

    {prefill}
    class PrefillMetadata{base}:
        prefill_wrapper: BatchMLAPagedAttentionWrapper
        {body}

    class Backend:
        def __init__(self, ws):
            self.decode_wrapper = BatchMLAPagedAttentionWrapper(ws)
            self.forward_metadata: Union[PrefillMetadata, DecodeMetadata] = None

        def forward_decode(self, q_nope, q_rope, ckv, kpe):
            decode_wrapper = self.forward_metadata.decode_wrapper
            {extra}
            return decode_wrapper.run(q_nope, q_rope, ckv, kpe)
    """
    run = {"flashinfer.BatchMLAPagedAttentionWrapper().run"}

    def runs(
        prefill: str = "@dataclass", base: str = "", body: str = "", extra: str = "", tail: str = ""
    ) -> set[str | None]:
        src = textwrap.dedent(template.format(prefill=prefill, base=base, body=body, extra=extra))
        return method_calls(resolver_for(src + "\n" + tail + "\n", module="proj.mla"), "run")[0]

    assert runs() == run
    assert runs(prefill="") == run  # (a plain class: the same)
    assert runs(prefill="@dataclass(frozen=True)") == run
    unknown = [
        runs(base="(Base)"),
        runs(body="def __getattr__(self, name): ..."),
        runs(prefill="@attr.s"),
        runs(tail="class Chunked(PrefillMetadata):\n    decode_wrapper = None"),
        runs(extra="self.forward_metadata.decode_wrapper = None"),
        runs(extra="setattr(self.forward_metadata, 'decode_wrapper', None)"),
    ]
    for found in unknown:
        assert found != run and run <= found, found


def test_what_a_method_of_the_project_is_annotated_to_return() -> None:
    """A method (or property) of a class of the project annotated with a FlashInfer class
    gives an instance of it, where the instance of the class is known: constructed, a
    parameter or a class attribute annotated with the class. Another top package's class, a
    decorated method and an annotation of another type give nothing; a method annotated with
    a type reached through an attribute (``torch.Tensor``) is no cycle."""
    src = """
    from typing import TYPE_CHECKING, Optional
    import functools
    import torch
    import other.comm
    if TYPE_CHECKING:
        from flashinfer.moe_ep import NVLinkOneSidedAlltoAll

    class Manager:
        def get_comm(self) -> "NVLinkOneSidedAlltoAll":
            return self.c
        @property
        def comm(self) -> Optional[NVLinkOneSidedAlltoAll]:
            return self.c
        @functools.cache
        def cached(self) -> "NVLinkOneSidedAlltoAll":
            return self.c
        def tensor(self) -> torch.Tensor:
            return self.t

    class User:
        manager: Manager
        theirs: other.comm.Manager
        def __init__(self, m):
            self.manager = m.manager
        def go(self, m: Manager, o: other.comm.Manager):
            m.get_comm().dispatch(x)
            m.comm.dispatch(x)
            Manager().get_comm().dispatch(x)
            self.manager.get_comm().dispatch(x)
            m.cached().dispatch(x)
            m.tensor().dispatch(x)
            o.get_comm().dispatch(x)
            self.theirs.get_comm().dispatch(x)
    """
    r = resolver_for(src, module="proj.comm")
    found = method_calls(r, "dispatch")
    instance = {"flashinfer.moe_ep.NVLinkOneSidedAlltoAll().dispatch"}
    assert found[:4] == [instance] * 4
    assert not any(q and q.startswith("flashinfer.") for f in found[4:] for q in f), found
    assert r.exports() == {
        "proj.comm.NVLinkOneSidedAlltoAll": "flashinfer.moe_ep.NVLinkOneSidedAlltoAll",
        "proj.comm.Manager().get_comm()": "flashinfer.moe_ep.NVLinkOneSidedAlltoAll()",
        "proj.comm.Manager().comm": "flashinfer.moe_ep.NVLinkOneSidedAlltoAll()",
    }
    # (in another module of the project: through the exports)
    user = """
    from proj.comm import Manager
    class P:
        manager: Manager
        def go(self):
            c = self.manager.get_comm()
            c.dispatch(x)
    """
    aliases = r.exports()
    assert resolve_call(user, module="proj.user", aliases=aliases) == instance


def test_project_reexports() -> None:
    aliases = {"proj.ops.quant": "flashinfer.fp4_quantize"}
    src = "from proj.ops import quant\nquant(x)"
    assert resolve_call(src, aliases=aliases) == {"flashinfer.fp4_quantize"}
    # a module name longer than the one the exporting file knows (namespace packages)
    src = "from src.proj.ops import quant\nquant(x)"
    assert resolve_call(src, aliases=aliases) == {"flashinfer.fp4_quantize"}


def test_exports_only_flashinfer_bindings() -> None:
    r = resolver_for(
        "from flashinfer import fp4_quantize as q\nimport os\ndef wrap(x):\n    return q(x)\n",
        module="proj.ops",
    )
    assert r.exports() == {"proj.ops.q": "flashinfer.fp4_quantize"}


# ------------------------------------------------------------------------ values


def call_and_scope(source: str):
    """The resolver, the call of `f` and its scope."""
    r = resolver_for(source)
    call, scope = next((c, s) for c, s in r.calls if ast.unparse(c.func) in ("f", "g"))
    return r, call, scope


def test_assigned_values_of_a_local() -> None:
    r, _call, scope = call_and_scope("def f(s):\n    a = s[:1]\n    g(a)\n")
    values = assigned_values(r, "a", scope)
    assert values is not None and ast.unparse(values[0][0]) == "s[:1]"
    assert assigned_values(r, "s", scope) is None  # a parameter
    r, _call, scope = call_and_scope("def f():\n    for a in x:\n        g(a)\n")
    assert assigned_values(r, "a", scope) is None  # a loop variable


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        ("f(**{'a': 1, 'b': 2})", {"a", "b"}),
        ("f(**dict(a=1, **{'b': 2}))", {"a", "b"}),
        ("kw = dict(a=1)\nf(**kw)", {"a"}),
        ("kw = {'a': 1}\nkw['group'] = g\nf(**kw)", {"a", "group"}),
        ("kw = {'a': 1}\nif c:\n    kw['group'] = g\nf(**kw)", {"a", "group"}),
        ("kw = {'a': 1}\nkw.update(group=g)\nf(**kw)", {"a", "group"}),
        ("kw = {'a': 1}\nkw.setdefault('group', g)\nf(**kw)", {"a", "group"}),
    ],
)
def test_dicts_built_in_plain_sight(source: str, keys: set[str]) -> None:
    r, call, scope = call_and_scope(source)
    source_dict = read_dict(r, call.keywords[-1].value, scope)
    assert source_dict is not None and set(source_dict.keys) == keys


@pytest.mark.parametrize(
    "source",
    [
        "kw = make()\nf(**kw)",
        "kw = {'a': 1}\nkw.update(other)\nf(**kw)",
        "kw = {'a': 1}\nkw[name] = 1\nf(**kw)",
        "kw = {'a': 1}\ndel kw['a']\nf(**kw)",
        "kw = {'a': 1}\nkw.pop('a')\nf(**kw)",
        "def dict(**k): ...\nf(**dict(a=1))",  # not the builtin
        "kw = {'a': 1}\nkw = {'b': 2}\nf(**kw)",  # bound twice
    ],
)
def test_dicts_that_cannot_be_read(source: str) -> None:
    r, call, scope = call_and_scope(source)
    assert read_dict(r, call.keywords[-1].value, scope) is None


def test_a_write_in_another_scope_is_another_dict() -> None:
    src = "kw = {'a': 1}\ndef g():\n    kw = {}\n    kw['b'] = 2\nf(**kw)"
    r, call, scope = call_and_scope(src)
    source_dict = read_dict(r, call.keywords[-1].value, scope)
    assert source_dict is not None and set(source_dict.keys) == {"a"}


def test_where_the_dict_is_built_and_written() -> None:
    src = "def m(self, g):\n    kw = dict(a=1)\n    kw['b'] = 2\n    f(**kw)\n"
    r, call, scope = call_and_scope(src)
    source_dict = read_dict(r, call.keywords[-1].value, scope)
    assert source_dict is not None
    assert isinstance(source_dict.built, ast.Call) and source_dict.built.lineno == 2
    assert [w.key for w in source_dict.writes] == ["b"]


def test_a_name_imported_again_and_again_is_one_candidate() -> None:
    """A generated file that imports the name in each of its 2,000 blocks: each call has one
    candidate, not 2,000 (which made a check of such a file quadratic, 6 GB at 1 MB)."""
    block = "from flashinfer import fp4_quantize\n\ndef q{n}(x):\n    return fp4_quantize(x)\n\n"
    source = "".join(block.format(n=n) for n in range(200))
    r = resolver_for(source)
    call = [c for c, _ in r.iter_calls()][-1]
    scope = r.scope_at(call)
    assert [c.qualname for c in r.resolve(call.func, scope).candidates] == [
        "flashinfer.fp4_quantize"
    ]


def test_a_released_resolver_lets_its_tree_go() -> None:
    import gc
    import weakref

    from migrate_fi.analysis import nodes

    r = resolver_for("import flashinfer\nflashinfer.fp4_quantize(x)\n")
    tree = weakref.ref(r.tree)
    r.release()
    nodes.release()
    gc.collect()
    assert tree() is None  # (the resolver kept alive a moment longer holds no tree)


_KERNELS = """
_prefill = None
_quant = None

def kernels():
    global _prefill, _quant
    if _prefill is None:
        from flashinfer import fp4_quantize
        from flashinfer.gdn_prefill import chunk_gated_delta_rule
        _prefill, _quant = chunk_gated_delta_rule, fp4_quantize
    return True, _prefill, _quant
"""


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        # a tuple a function of the module returns, unpacked or indexed: the element at its place
        ("ok, prefill, quant = kernels()\nquant(x)", {"flashinfer.fp4_quantize"}),
        ("q = kernels()[2]\nq(x)", {"flashinfer.fp4_quantize"}),
        ("p = kernels()[-2]\np(x)", {"flashinfer.gdn_prefill.chunk_gated_delta_rule"}),
        ("ok, *_, quant = kernels()\nquant(x)", {"flashinfer.fp4_quantize"}),
        (
            "ok, prefill, *rest = kernels()\nprefill(x)",
            {"flashinfer.gdn_prefill.chunk_gated_delta_rule"},
        ),
        ("got = kernels()\ngot[1](x)", {"flashinfer.gdn_prefill.chunk_gated_delta_rule"}),
        (
            "class A:\n    def __init__(self):\n        _, self.p, self.q = kernels()\n"
            "    def run(self, x):\n        self.q(x)",
            {"flashinfer.fp4_quantize"},
        ),
        # a tuple written out, named, then indexed
        (
            "from flashinfer import fp4_quantize, mxfp8_quantize\npair = (mxfp8_quantize, fp4_quantize)\npair[1](x)",
            {"flashinfer.fp4_quantize"},
        ),
        # left as any element: a starred target itself, a place past the end, a list in a name
        # (it may be changed in place), what another module's function returns
        ("ok, *rest = kernels()\nrest(x)", {None}),
        ("a, b, c, d = kernels()\nd(x)", {None}),
        (
            "from flashinfer import fp4_quantize, mxfp8_quantize\nfs = [mxfp8_quantize, fp4_quantize]\nfs[1](x)",
            {"flashinfer.fp4_quantize", "flashinfer.mxfp8_quantize"},
        ),
        ("from pkg import loader\na, b = loader()\nb(x)", {None}),
    ],
)
def test_the_element_at_a_place_of_a_tuple(use: str, expected: set[str | None]) -> None:
    assert resolve_call(_KERNELS + use) == expected


def test_a_function_that_may_return_something_else_gives_any_element() -> None:
    src = """
    from flashinfer import fp4_quantize, mxfp8_quantize
    def kernels(fast):
        if fast:
            return mxfp8_quantize, fp4_quantize
        return make()
    a, b = kernels(True)
    b(x)
    """
    assert resolve_call(src) == {None}


def test_an_attribute_unpacked_is_one_of_its_values() -> None:
    # (an attribute a tuple target also sets is no longer only what its plain assignment gives)
    src = """
    from flashinfer import fp4_quantize
    from pkg import loader
    class A:
        def __init__(self):
            self.q = fp4_quantize
        def reload(self):
            _, self.q = loader()
        def run(self, x):
            self.q(x)
    """
    assert resolve_call(src) == {"flashinfer.fp4_quantize", None}


_NARROWED = "flashinfer.BatchPrefillWithPagedKVCacheWrapper().run"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # the forms a type checker reads: an assert, an `if not ...: raise`, an `if` around
        ("assert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\nw.run(q)", {_NARROWED}),
        (
            "assert isinstance(w, BatchPrefillWithPagedKVCacheWrapper) and ok, 'no'\nw.run(q)",
            {_NARROWED},
        ),
        (
            "if not isinstance(w, BatchPrefillWithPagedKVCacheWrapper):\n    raise TypeError\n"
            "w.run(q)",
            {_NARROWED},
        ),
        ("if isinstance(w, BatchPrefillWithPagedKVCacheWrapper):\n    w.run(q)", {_NARROWED}),
        # a closure defined after the test, the variable never assigned again
        (
            "assert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\n"
            "def inner():\n    return w.run(q)\ninner()",
            {_NARROWED},
        ),
        # a tuple of classes: either
        (
            "assert isinstance(w, (BatchPrefillWithPagedKVCacheWrapper, Other))\nw.run(q)",
            {_NARROWED, "flashinfer.Other().run"},
        ),
        # left alone: the test fails there, the read is before it or in another branch, the
        # variable is assigned again after it, a closure defined before it
        (
            "if isinstance(w, BatchPrefillWithPagedKVCacheWrapper):\n    pass\nelse:\n    w.run(q)",
            {"registry.get().run"},
        ),
        (
            "w.run(q)\nassert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)",
            {"registry.get().run"},
        ),
        (
            "if c:\n    assert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\nw.run(q)",
            {"registry.get().run"},
        ),
        (
            "assert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\nw = registry.get()\nw.run(q)",
            {"registry.get().run"},
        ),
        (
            "def inner():\n    return w.run(q)\nassert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\n"
            "inner()",
            {"registry.get().run"},
        ),
        # another variable of the same name, the builtin shadowed, a class of no one known
        (
            "assert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\n"
            "def inner(w):\n    return w.run(q)\ninner(x)",
            {None},
        ),
        (
            "isinstance = lambda a, b: True\nassert isinstance(w, BatchPrefillWithPagedKVCacheWrapper)\n"
            "w.run(q)",
            {"registry.get().run"},
        ),
        ("assert isinstance(w, dict)\nw.run(q)", {"registry.get().run"}),
    ],
)
def test_isinstance_tests_narrow_a_value_out_of_sight(body: str, expected: set[str | None]) -> None:
    """``w`` comes from a registry (nothing known); an isinstance test that holds where it is
    read says what it is, as type checkers read it."""
    src = (
        "import registry\nfrom flashinfer import BatchPrefillWithPagedKVCacheWrapper, Other\n"
        "def f(q, c, ok, x):\n    w = registry.get()\n" + textwrap.indent(body, "    ") + "\n"
    )
    r = resolver_for(src)
    call, scope = next(
        (c, s) for c, s in r.calls if isinstance(c.func, ast.Attribute) and c.func.attr == "run"
    )
    assert {c.qualname for c in r.resolve(call.func, scope).candidates} == expected


def test_isinstance_tests_pick_among_known_values() -> None:
    """Where the value may be several things, a test that holds keeps those it names (their
    own details, such as how the wrapper was made, kept), and one that fails drops them."""
    src = """
    from flashinfer import BatchPrefillWithPagedKVCacheWrapper as P
    from flashinfer import BatchDecodeWithPagedKVCacheWrapper as D
    def f(c, q):
        w = P(ws, backend="fa2") if c else D(ws)
        if isinstance(w, P):
            w.plan(q)
        else:
            w.run(q)
        w.end_forward()
    """
    r = resolver_for(src)
    got = {
        c.func.attr: {x.qualname for x in r.resolve(c.func, s).candidates}
        for c, s in r.calls
        if isinstance(c.func, ast.Attribute)
    }
    assert got["plan"] == {"flashinfer.BatchPrefillWithPagedKVCacheWrapper().plan"}
    assert got["run"] == {"flashinfer.BatchDecodeWithPagedKVCacheWrapper().run"}
    assert got["end_forward"] == {
        "flashinfer.BatchPrefillWithPagedKVCacheWrapper().end_forward",
        "flashinfer.BatchDecodeWithPagedKVCacheWrapper().end_forward",
    }


def test_the_path_down_to_a_node_is_its_parents() -> None:
    """`nodes.path_to` (what a narrowed read walks) gives the same parents as `nodes.parents`
    for every name and call of this package's own sources: decorators above a `def`, nodes
    with no place of their own (`arguments`, `comprehension`), several statements on a line."""
    import pathlib

    from migrate_fi.analysis import nodes

    root = pathlib.Path(__file__).parent.parent / "migrate_fi" / "analysis"
    checked = 0
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        up = nodes.parents(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name | ast.Call):
                expected, child = {}, node
                while id(child) in up:
                    expected[id(child)] = up[id(child)]
                    child = up[id(child)]
                assert nodes.path_to(tree, node) == expected, (path, node.lineno)
                checked += 1
        nodes.release()
    assert checked > 3_000
