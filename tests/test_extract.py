"""The extractor on a small synthetic `flashinfer` package: what Python synthesizes, what a
release serves lazily or under a condition, and when a name is surely gone."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from migrate_fi.api.differ import Api, compare_callables
from migrate_fi.api.extract import extract_release

FILES = {
    "__init__.py": """
        from .core import kernel
        from . import ops
        from .mamba import checkpointing_ssu
        try:
            from .fast import fast_kernel
        except ImportError:
            fast_kernel = None
        if is_cute_dsl_available():
            from .cute.deep.kernels import CuteOp
        with contextlib.suppress(ImportError):
            from .cute.deep.kernels import cute_fn
        if TYPE_CHECKING:
            from .core import OnlyForTypes
        __version__ = "9.9.9"

        _LAZY = frozenset({"lazy_fn"})

        def __getattr__(name):
            if name == "OldRunner":
                warnings.warn("deprecated")
                return Runner
            if name not in _LAZY:
                raise AttributeError(name)
            from .core import lazy_fn as _impl
            return getattr(_impl_module, name)
        from .core import Runner
    """,
    "core.py": """
        from dataclasses import KW_ONLY, InitVar, dataclass, field
        from typing import ClassVar, NamedTuple

        def kernel(x, scale=1.0): ...
        def lazy_fn(a, b): ...
        class Runner:
            def __init__(self, n): ...

        @dataclass
        class Base:
            a: int
            b: int = 2

        @dataclass(frozen=True)
        class Config(Base):
            c: float = 1.0
            d: list = field(default_factory=list)
            counter: ClassVar[int] = 0
            hidden: int = field(default=0, init=False)
            extra: InitVar[int] = 3
            _: KW_ONLY
            flag: bool = False

        @dataclass(kw_only=True)
        class KwOnly:
            x: int

        @dataclass
        class Written:
            a: int
            def __init__(self, z): ...

        class Point(NamedTuple):
            x: int
            y: int = 0

        @deprecated_aliases(old_name="new_name")
        def renamed(new_name=1): ...
    """,
    "mamba/__init__.py": """
        from .checkpointing_ssu import checkpointing_ssu, scratch
    """,
    "mamba/checkpointing_ssu.py": """
        def checkpointing_ssu(state, x, dt): ...
        def scratch(n): ...
    """,
    "moe/__init__.py": """
        import importlib
        import warnings
        from ..core import Runner

        _LAZY_EXPORTS = {"lazy_fn": "..core"}
        _MORE = frozenset({"kernel"})
        _SERVED = (frozenset({"Runner"}) | _MORE)

        def __getattr__(name):
            module_name = _LAZY_EXPORTS.get(name)
            if module_name is not None:
                value = getattr(importlib.import_module(module_name, __name__), name)
                globals()[name] = value
                return value
            if name == "OldMoeRunner":
                warnings.warn("deprecated", DeprecationWarning)
                return Runner
            if name in _SERVED:
                from .. import core
                return getattr(core, name)
            raise AttributeError(name)
    """,
    "ops.py": """
        from .core import kernel as k
        from ._private import hidden_helper
        import torch
        import os
        def op(a): ...
        def config_dir():
            return os.path.join(os.path.dirname(__file__), "configs")
        def lazy_ops():
            from . import core
            return core
        class Paths:
            root = os.path.dirname(__file__)
    """,
    "_private.py": """
        def hidden_helper(): ...
        CONSTANT = 3
    """,
    "cute/__init__.py": "",
    "cute/deep/__init__.py": "",
    "cute/deep/kernels.py": """
        class CuteOp:
            def __init__(self, m, n): ...
            def run(self, x): ...
        def cute_fn(a, b, c): ...
    """,
    "jit/fmha/generate.py": """
        def _setup(path): ...
        def generate(n): ...
    """,
    "jit/__init__.py": "",
    "dyn.py": """
        for _name in ("a", "b"):
            globals()[_name] = 1
    """,
}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Api:
    root: Path = tmp_path_factory.mktemp("release")
    for name, text in FILES.items():
        path = root / "flashinfer" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return Api("9.9.9", extract_release(str(root)))


def params(api: Api, path: str) -> list[tuple[str, str, str | None]]:
    c = api.callable(path)
    assert c is not None, path
    return [(p.name, p.kind, p.default) for p in c.params]


def test_dataclass_constructor_with_inheritance_and_fields(api: Api) -> None:
    assert params(api, "flashinfer.core.Config") == [
        ("a", "A", None),
        ("b", "A", "2"),
        ("c", "A", "1.0"),
        ("d", "A", "<factory list>"),
        ("extra", "A", "3"),
        ("flag", "K", "False"),
    ]
    assert params(api, "flashinfer.core.KwOnly") == [("x", "K", None)]
    assert params(api, "flashinfer.core.Written") == [("z", "A", None)]  # written __init__ wins


def test_namedtuple_constructor(api: Api) -> None:
    assert params(api, "flashinfer.core.Point") == [("x", "A", None), ("y", "A", "0")]


def test_a_field_inserted_in_the_middle_misbinds() -> None:
    from migrate_fi.api.differ import CallSignature, Param

    old = CallSignature("x", (Param("a", "A", None), Param("b", "A", None)))
    new = CallSignature("x", (Param("a", "A", None), Param("n", "A", "0"), Param("b", "A", None)))
    assert compare_callables(old, new).misbinding_index == 1


def test_conditional_and_try_reexports(api: Api) -> None:
    assert api.canonical("flashinfer.CuteOp") == "flashinfer.cute.deep.kernels.CuteOp"
    assert api.canonical("flashinfer.cute_fn") == "flashinfer.cute.deep.kernels.cute_fn"
    assert api.canonical("flashinfer.fast_kernel") is None  # from a module that is not there
    assert api.exists("flashinfer.fast_kernel") is True  # bound (to None) all the same
    assert params(api, "flashinfer.CuteOp().run") == [("x", "A", None)]


def test_type_checking_imports_do_not_exist(api: Api) -> None:
    assert api.exists("flashinfer.OnlyForTypes") is False


def test_a_package_attribute_shadows_its_submodule(api: Api) -> None:
    assert params(api, "flashinfer.mamba.checkpointing_ssu") == [
        ("state", "A", None),
        ("x", "A", None),
        ("dt", "A", None),
    ]
    assert params(api, "flashinfer.checkpointing_ssu") == params(
        api, "flashinfer.mamba.checkpointing_ssu"
    )


def test_names_served_by_module_getattr(api: Api) -> None:
    assert api.canonical("flashinfer.OldRunner") == "flashinfer.core.Runner"
    assert params(api, "flashinfer.OldRunner") == [("n", "A", None)]
    assert api.exists("flashinfer.lazy_fn") is True
    assert api.exists("flashinfer.not_served") is False  # the hook raises for other names
    # a lookup that does not end the hook (`if m is not None: return ...`), branches after it
    # (FlashInfer 0.7's fused_moe: its lazy exports, then the CuteDslNvfp4Runner shim)
    assert api.canonical("flashinfer.moe.lazy_fn") == "flashinfer.core.lazy_fn"
    assert api.canonical("flashinfer.moe.OldMoeRunner") == "flashinfer.core.Runner"
    assert api.exists("flashinfer.moe.not_served") is False
    # names of a union of constant sets (`frozenset({...}) | _MORE`: 0.7.4's decode module)
    assert api.canonical("flashinfer.moe.kernel") == "flashinfer.core.kernel"


def test_code_that_reads_where_its_module_is(api: Api) -> None:
    """``__file__`` (and the like) or a relative import in a definition: moved elsewhere, the
    same code is not the same behaviour (FI002 makes such a move a review fix)."""
    assert api.reads_location("flashinfer.ops.config_dir") is True
    assert api.reads_location("flashinfer.ops.lazy_ops") is True
    assert api.reads_location("flashinfer.ops.Paths") is True
    assert api.reads_location("flashinfer.ops.op") is False
    assert api.reads_location("flashinfer.core.kernel") is False


def test_deep_public_modules_are_recorded(api: Api) -> None:
    assert params(api, "flashinfer.cute.deep.kernels.cute_fn") == [
        ("a", "A", None),
        ("b", "A", None),
        ("c", "A", None),
    ]


def test_names_imported_into_a_module_exist(api: Api) -> None:
    assert api.exists("flashinfer.ops.hidden_helper") is True
    assert api.exists("flashinfer.ops.k") is True
    assert api.exists("flashinfer.ops.torch") is True
    assert api.exists("flashinfer._private.CONSTANT") is True  # private modules: names only
    assert api.exists("flashinfer.ops.gone") is False
    assert api.exists("flashinfer.nowhere.thing") is False
    assert api.exists("flashinfer.dyn.anything") is None  # globals()[...]: cannot say


def test_modules_of_a_folder_without_init_exist(api: Api) -> None:
    # (`jit/fmha/` has no `__init__.py`: a namespace package, imported all the same)
    assert api.exists("flashinfer.jit.fmha.generate") is True
    assert api.exists("flashinfer.jit.fmha.generate._setup") is True
    assert api.exists("flashinfer.jit.fmha.generate.gone") is False
    assert api.exists("flashinfer.jit.other.generate") is False


def test_methods_and_class_attributes(api: Api) -> None:
    assert api.exists("flashinfer.cute.deep.kernels.CuteOp.run") is True
    assert api.exists("flashinfer.cute.deep.kernels.CuteOp().run") is True
    assert api.exists("flashinfer.cute.deep.kernels.CuteOp().gone") is False


def test_renames_declared_by_the_release(api: Api) -> None:
    c = api.callable("flashinfer.core.renamed")
    assert c is not None and c.aliases == (("old_name", "new_name"),)
    assert c.accepts_keyword("old_name")


BEHAVIOUR = {
    "__init__.py": """
        from .comm import Workspace, top_k, quantize, decode
        from .consts import MAX_BLOCKS as _MB
    """,
    "consts.py": """
        MAX_BLOCKS = 128
        ALIAS = MAX_BLOCKS
        CHANGING = 1
        CHANGING = 2
        TABLE = make_table()
    """,
    "comm.py": """
        import warnings
        from .consts import MAX_BLOCKS, ALIAS, CHANGING, TABLE
        from . import consts

        LOCAL = "cuda"

        class Workspace:
            LOCAL = "class attribute"

            def __init__(self, max_blocks=MAX_BLOCKS, alias=ALIAS, changing=CHANGING,
                         table=TABLE, through=consts.MAX_BLOCKS, shadowed=LOCAL):
                ...

        def top_k(x, next_n=None, ratio=None, late=None, branch=None, expr=None):
            '''Doc.'''
            if next_n is None:
                next_n = 1
            ratio = LOCAL if ratio is None else ratio
            print(late)
            if late is None:
                late = 3
            if x:
                if branch is None:
                    branch = 4
            if expr is None:
                expr = x + 1

        def quantize(x, backend=LOCAL, q_len=None, old=None):
            if q_len is not None:
                warnings.warn("q_len is deprecated: pass it to plan()", DeprecationWarning)
            if old:
                warnings.warn("old", category=FutureWarning)
            if x is None:
                warnings.warn("x is None", UserWarning)

        def decode(x, n=None):
            def inner(y=None):
                if y is not None:
                    warnings.warn("inner", DeprecationWarning)
            if n is None:
                n = 1
""",
}


def test_constants_sentinels_and_deprecations_are_read(tmp_path: Path) -> None:
    """A default naming a module constant is its value (bound once, to a literal, here, imported
    or through another constant; not a class attribute of the same name, a name bound twice or
    a computed value); a `None` replaced by a literal on every path before anything reads it is
    recorded as that value; parameters warned about as deprecated are recorded."""
    for name, text in BEHAVIOUR.items():
        path = tmp_path / "flashinfer" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    api = Api("9.9.9", extract_release(str(tmp_path)))
    assert params(api, "flashinfer.Workspace") == [
        ("max_blocks", "A", "128"),
        ("alias", "A", "128"),
        ("changing", "A", "CHANGING"),
        ("table", "A", "TABLE"),
        ("through", "A", "128"),
        ("shadowed", "A", "LOCAL"),
    ]
    top_k = api.callable("flashinfer.top_k")
    assert top_k is not None
    assert {p.name: p.mapped for p in top_k.params} == {
        "x": None,
        "next_n": "1",
        "ratio": "'cuda'",
        "late": None,  # (read before it is replaced)
        "branch": None,  # (replaced on one path only)
        "expr": None,  # (not a literal)
    }
    quantize = api.callable("flashinfer.quantize")
    assert quantize is not None
    assert quantize.deprecated == {"q_len", "old"}
    assert params(api, "flashinfer.quantize")[1] == ("backend", "A", "'cuda'")
    decode = api.callable("flashinfer.decode")
    assert decode is not None and decode.deprecated == frozenset()
    assert [p.mapped for p in decode.params] == [None, "1"]


def test_functions_that_warn_they_are_deprecated_on_every_call(tmp_path: Path) -> None:
    """A ``warnings.warn(..., DeprecationWarning)`` statement of the body itself, before any
    ``return``, is recorded with its message (an f-string's fields in braces), for a
    function, a method and a constructor; one under an ``if``, after a ``return``, or of
    another category is not. So is a ``@typing_extensions.deprecated(...)`` function or
    class (its construction), unless it names no deprecation category."""
    path = tmp_path / "flashinfer" / "__init__.py"
    path.parent.mkdir(parents=True)
    path.write_text(
        textwrap.dedent(
            """
            import warnings

            def old(x):
                \"\"\"Deprecated.\"\"\"
                warnings.warn("old is deprecated; use new", DeprecationWarning, stacklevel=2)
                return new(x)

            def formatted(x):
                warnings.warn(f"{x} is going", category=FutureWarning)

            def new(x, legacy=None):
                if legacy is not None:
                    warnings.warn("legacy is deprecated", DeprecationWarning)
                return x

            def late(x):
                return x
                warnings.warn("never", DeprecationWarning)

            def user(x):
                warnings.warn("slow path", UserWarning)

            class Wrapper:
                def __init__(self):
                    warnings.warn("Wrapper is deprecated", DeprecationWarning)
                def run(self):
                    warnings.warn("run is deprecated", PendingDeprecationWarning)

            from dataclasses import dataclass
            from typing_extensions import deprecated

            @deprecated("use the unified API allreduce.py instead")
            def fusion(x):
                return x

            @deprecated("use Config", category=None)
            def quiet(x):
                return x

            @deprecated("use MoEConfig")
            @dataclass
            class Config:
                tile: int = 128
            """
        )
    )
    api = Api("9.9.9", extract_release(str(tmp_path)))
    warned = {
        p: (found.warns if (found := api.callable(p)) is not None else "missing")
        for p in (
            "flashinfer.old",
            "flashinfer.formatted",
            "flashinfer.new",
            "flashinfer.late",
            "flashinfer.user",
            "flashinfer.Wrapper",
            "flashinfer.Wrapper().run",
            "flashinfer.fusion",
            "flashinfer.quiet",
            "flashinfer.Config",
        )
    }
    assert warned == {
        "flashinfer.old": "old is deprecated; use new",
        "flashinfer.formatted": "{x} is going",
        "flashinfer.new": None,
        "flashinfer.late": None,
        "flashinfer.user": None,
        "flashinfer.Wrapper": "Wrapper is deprecated",
        "flashinfer.Wrapper().run": "run is deprecated",
        "flashinfer.fusion": "use the unified API allreduce.py instead",
        "flashinfer.quiet": None,  # (`category=None`: no warning)
        "flashinfer.Config": "use MoEConfig",  # (constructing it warns)
    }


def test_parameters_whose_value_is_never_used() -> None:
    """Not read at all, or read only to test it against None before a warning or a log line:
    ignored. Any other read, a decorated function, or `locals()`: not."""
    import ast

    from migrate_fi.api.extract import ignored_parameters

    source = textwrap.dedent(
        """
        def moe(x, tile_tokens_dim, unused=None, used=1, tested=None, raised=None):
            if tile_tokens_dim is not None:
                logger.warning_once("tile_tokens_dim is planned for deprecation")
            if not tested:
                warnings.warn("pass tested", DeprecationWarning)
            if raised is not None:
                raise ValueError("raised is gone")
            return run(x, used)

        @flashinfer_api
        def decorated(x, y):
            return x

        def reads_locals(x, y):
            return locals()

        @staticmethod
        def plain(x, y):
            return x
        """
    )
    found = {
        fn.name: ignored_parameters(fn)
        for fn in ast.parse(source).body
        if isinstance(fn, ast.FunctionDef)
    }
    assert found == {
        "moe": ["tile_tokens_dim", "unused", "tested"],
        "decorated": [],
        "reads_locals": [],
        "plain": ["y"],
    }


def test_a_default_mapped_back_is_the_same_default() -> None:
    """`_default_changes`: 1 -> None where the new release maps None to 1 is the same value
    for a call that leaves it out (FI008 leaves it; `api-diff` says why)."""
    from migrate_fi.api.differ import CallSignature, Param, _default_changes

    before = CallSignature("flashinfer.f", (Param("n", "A", "1"), Param("m", "A", "1")))
    after = CallSignature(
        "flashinfer.f", (Param("n", "A", "None", "1"), Param("m", "A", "None", "2"))
    )
    found = {c.name: c.same for c in _default_changes("flashinfer.f", before, after)}
    assert found == {"n": True, "m": False}


CACHED = """
    import functools
    from functools import lru_cache as memo

    from .other import cache

    @functools.cache
    def get_module(): ...

    @memo(maxsize=None)
    def get_spec(x): ...

    @cache
    def not_functools(): ...

    def plain(): ...
"""


def _release(root: Path, text: str) -> Api:
    (root / "flashinfer").mkdir(parents=True)
    (root / "flashinfer" / "__init__.py").write_text(textwrap.dedent(text))
    (root / "flashinfer" / "other.py").write_text("def cache(f):\n    return f\n")
    return Api(root.name, extract_release(str(root)))


def test_what_a_cache_gives_a_function(tmp_path: Path) -> None:
    """A function wrapped by functools.cache or lru_cache (however imported) has `cache_clear`,
    `cache_info` and `cache_parameters`, callables of no parameters; another decorator named
    `cache` gives none. Where a later release drops the cache, those are surely gone."""
    old = _release(tmp_path / "1.0", CACHED)
    assert old.cached("flashinfer.get_module") and old.cached("flashinfer.get_spec")
    assert not old.cached("flashinfer.not_functools") and not old.cached("flashinfer.plain")
    clear = old.callable("flashinfer.get_module.cache_clear")
    assert clear is not None and clear.params == ()
    assert old.key("flashinfer.get_spec.cache_info") == "flashinfer.get_spec.cache_info"
    assert old.callable("flashinfer.not_functools.cache_clear") is None
    assert old.exists("flashinfer.get_module.cache_parameters") is True
    assert old.exists("flashinfer.plain.cache_clear") is False
    assert old.exists("flashinfer.plain.other_attribute") is None  # (a function's: unknowable)
    new = _release(tmp_path / "2.0", CACHED.replace("    @functools.cache\n", ""))
    assert new.callable("flashinfer.get_module.cache_clear") is None
    assert new.surely_missing("flashinfer.get_module.cache_clear")
    assert not new.surely_missing("flashinfer.get_spec.cache_clear")


def test_what_a_module_reads_when_it_runs(tmp_path: Path) -> None:
    """`reads`: the module's names its functions and methods read when they run, not those
    read only at import (a decorator, a default, a module-level call)."""
    text = """
        from .other import cache as helper

        def used(): ...
        def decorating(f): return f
        def default_value(): return 1
        def only_at_import(): ...

        only_at_import()

        @decorating
        def caller(x=default_value()):
            return used()

        class Kernel:
            def run(self):
                return helper
    """
    api = _release(tmp_path / "1.0", text)
    assert api.reads("flashinfer") == {"used", "helper"}
    assert api.reads("flashinfer.missing") is None


def test_a_method_named_again_in_its_class_body_is_that_method(tmp_path: Path) -> None:
    """``begin_forward = plan``: a call of ``begin_forward`` (on the class or a subclass) is a
    call of ``plan``, with its signature and its key (what a release note on ``plan`` or a
    change of its parameters is about)."""
    text = """
        class Wrapper:
            def plan(self, indptr, indices, head_dim, data_type=None): ...

            def run(self, q, out=None): ...

            begin_forward = plan
            forward = run
            version = "1"

        class GraphWrapper(Wrapper):
            pass
    """
    api = _release(tmp_path / "1.0", text)
    for cls in ("flashinfer.Wrapper", "flashinfer.GraphWrapper"):
        key = api.key(f"{cls}().begin_forward")
        assert key is not None and key.endswith("Wrapper().plan"), key
        plan, begin = api.callable(f"{cls}().plan"), api.callable(f"{cls}().begin_forward")
        assert plan is not None and begin is not None and begin.params == plan.params
        assert api.key(f"{cls}().forward") == api.key(f"{cls}().run")
    assert api.key("flashinfer.Wrapper.begin_forward") == api.key("flashinfer.Wrapper().plan")
    # (a class attribute that is no method: left as it is)
    assert api.key("flashinfer.Wrapper().version") == "flashinfer.Wrapper().version"
    assert api.callable("flashinfer.Wrapper().version") is None
