"""Which GPUs a call runs on, read from the capability tests before it (`analysis.gpus`)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from migrate_fi.analysis.gpus import reached_on
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.base.gpus import EVERY_GPU, GpusError, gpus_named, said


def _reached(source: str, elsewhere: frozenset[str] = frozenset()) -> dict[int, str]:
    """What each `kernel(...)` call of ``source`` is reached on, by line; ``elsewhere``: the
    names another file of the project mentions (the project search's answer)."""
    tree = ast.parse(textwrap.dedent(source))
    resolver = NameResolver(tree, "m")
    resolver.only_here = lambda name: name not in elsewhere
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("kernel"):
            out[node.lineno] = said(reached_on(resolver, tree, node))
    return out


def test_a_flag_set_in_init_from_the_major_and_raised_on_in_the_method() -> None:
    found = _reached(
        """
        import torch
        class K:
            def __init__(self):
                sm_major = torch.cuda.get_device_capability()[0]
                self.use_state_pool = sm_major != 9
            def extend(self, x):
                if self.use_state_pool:
                    raise NotImplementedError
                return self.fn.kernel(x)
            def decode(self, x):
                return self.fn.kernel(x)
        """
    )
    assert found == {10: "SM9x", 12: "any GPU"}


def test_vllm_platform_tests_branch_by_branch() -> None:
    found = _reached(
        """
        from vllm.platforms import current_platform
        def f(x):
            if current_platform.is_device_capability(90):
                kernel(x)
            elif current_platform.has_device_capability((10, 0)):
                kernel(x)
            elif current_platform.is_device_capability_family(120):
                kernel(x)
            else:
                kernel(x)
        """
    )
    assert found == {
        5: "SM90",
        7: "SM100 and newer",
        9: "any GPU",  # (a family test under `not >= 10.0`: no GPU at all, a misreading)
        11: "below SM90, SM91-SM99",
    }


def test_tests_read_through_names_tuples_and_arithmetic() -> None:
    found = _reached(
        """
        import torch
        _IS_SM100 = is_sm100_supported()
        def early(x):
            if not _IS_SM100:
                return None
            kernel(x)
        def unpacked():
            major, minor = torch.cuda.get_device_capability()
            if major * 10 + minor < 100:
                raise RuntimeError
            kernel()
        def asserted():
            cap = torch.cuda.get_device_capability()
            assert cap >= (9, 0) and cap < (10, 0)
            kernel()
        def membership():
            if torch.cuda.get_device_properties(0).major in (10, 12):
                kernel()
        def loop(xs):
            for x in xs:
                if torch.cuda.get_device_capability()[0] < 9:
                    continue
                kernel(x)
        """
    )
    assert found == {
        7: "SM10x",
        12: "SM100 and newer",
        16: "SM9x",
        19: "SM10x, SM12x",
        24: "SM90 and newer",
    }


def test_a_class_whose_init_refuses_other_gpus() -> None:
    found = _reached(
        """
        from vllm.platforms import current_platform
        class A:
            def __init__(self):
                if not current_platform.has_device_capability(100):
                    raise ValueError("Blackwell only")
            def run(self):
                kernel()
            @staticmethod
            def anywhere():
                kernel()
        """
    )
    assert found == {8: "SM100 and newer", 11: "any GPU"}


def test_a_function_of_the_file_and_the_callers_of_a_private_method() -> None:
    found = _reached(
        """
        import functools
        from vllm.platforms import current_platform
        @functools.cache
        def use_fi_prefill() -> bool:
            if not (has_flashinfer() and current_platform.is_device_capability_family(100)):
                return False
            return is_compatible()
        class Impl:
            def __init__(self):
                self._use_fi = use_fi_prefill()
            def build(self, meta):
                if self._use_fi and meta.num_prefills > 0:
                    self._plan(meta)
            def _plan(self, meta):
                self.wrapper.kernel(meta)
            def _anywhere(self, meta):
                self.wrapper.kernel(meta)
            def run(self, meta):
                self._anywhere(meta)
        def _helper(x):
            kernel(x)
        def public(x):
            if current_platform.is_device_capability(90):
                _helper(x)
        """
    )
    assert found == {16: "SM10x", 18: "any GPU", 22: "SM90"}


@pytest.mark.parametrize(
    ("decorator", "followed"),
    [
        ("@functools.lru_cache(maxsize=1)", True),
        ("@torch.compile", True),
        ("@functools.cache\n@torch.no_grad()", True),
        ("@my_cache", False),  # (the project's own: it may return anything)
        ("@functools.wraps(other)", False),
    ],
)
def test_a_function_of_the_file_is_read_through_decorators_that_keep_its_returns(
    decorator: str, followed: bool
) -> None:
    source = textwrap.indent(decorator, " " * 8).lstrip() + "\n"
    found = _reached(
        f"""
        import functools
        import torch
        from vllm.platforms import current_platform
        from .utils import my_cache
        {source}
        def use_fi() -> bool:
            return current_platform.is_device_capability(90)
        class Impl:
            def __init__(self):
                self._use_fi = use_fi()
            def run(self, meta):
                if self._use_fi:
                    self.wrapper.kernel(meta)
        """
    )
    assert list(found.values()) == ["SM90" if followed else "any GPU"]


@pytest.mark.parametrize("elsewhere", [frozenset(), frozenset({"_plan"})])
def test_a_private_method_named_otherwise_is_not_followed(elsewhere: frozenset[str]) -> None:
    found = _reached(
        """
        import torch
        class Impl:
            def build(self):
                if torch.cuda.get_device_capability()[0] == 9:
                    self._plan()
                self.hooks.append(self._plan)
            def _plan(self):
                kernel()
        """
    )
    assert found == {9: "any GPU"}
    # (named in another file of the project, a subclass's call say: not followed either)
    found = _reached(
        """
        import torch
        class Impl:
            def build(self):
                if torch.cuda.get_device_capability()[0] == 9:
                    self._plan()
            def _plan(self):
                kernel()
        """,
        elsewhere,
    )
    assert found == {8: "any GPU" if elsewhere else "SM9x"}


@pytest.mark.parametrize(
    "source",
    [
        # tests that may go either way on any GPU
        "def f(flag):\n    if flag:\n        return\n    kernel()\n",
        "def f(x):\n    if x.shape[0] == 9:\n        return\n    kernel()\n",
        # a name given two different values, a parameter, a call of something else
        "import torch\ndef f(p):\n    m = 9\n    m = torch.cuda.get_device_capability()[0]\n"
        "    if m != 9:\n        return\n    kernel()\n",
        "def f(major):\n    if major != 9:\n        return\n    kernel()\n",
        "def f():\n    if is_blackwell():\n        return\n    kernel()\n",
        # a raise that may not be reached (not the last statement of its block) and a test
        # after the call
        "import torch\ndef f():\n    if torch.cuda.get_device_capability()[0] != 9:\n"
        "        log()\n    kernel()\n    if torch.cuda.get_device_capability()[0] != 9:\n"
        "        raise RuntimeError\n",
        # a generator's call is a generator, whatever it returns; a flag a class also binds
        # in its body (an instance may keep that value)
        "import torch\ndef gen():\n    if torch.cuda.get_device_capability()[0] != 10:\n"
        "        return\n    yield 1\ndef f():\n    if not gen():\n        return\n    kernel()\n",
        "import torch\nclass K:\n    use = False\n    def __init__(self):\n"
        "        self.use = torch.cuda.get_device_capability()[0] == 9\n    def run(self):\n"
        "        if not self.use:\n            return\n        kernel()\n",
        # SGLang's helpers may be false on their own GPUs (a CUDA version test): their `not`
        # says nothing
        "def f():\n    if is_sm100_supported():\n        return\n    kernel()\n",
    ],
)
def test_what_is_not_read_leaves_every_gpu(source: str) -> None:
    (found,) = _reached(source).values()
    assert found == "any GPU"


_THROUGH_A_HELPER = """
import torch
def _on_hopper():
    if torch.cuda.get_device_capability()[0] != 9:
        return False
    return True
class K:
    def run(self, x):
        if _on_hopper():
            return self.fn.kernel(x)
        return None
"""


def test_only_the_way_to_the_call_is_mapped() -> None:
    # (the parents of the nodes from the call up, and of the returns of the function its test
    # calls: not a map of the whole file, which a large file makes costly)
    from migrate_fi.analysis import nodes

    tree = ast.parse(_THROUGH_A_HELPER)
    resolver = NameResolver(tree, "m")
    resolver.only_here = lambda name: True
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and "kernel" in ast.unparse(n))
    assert said(reached_on(resolver, tree, call)) == "SM9x"
    assert "parents" not in nodes._entry(tree)[2]


def test_positions_that_do_not_lead_to_the_call_map_the_whole_file() -> None:
    tree = ast.parse(_THROUGH_A_HELPER)
    resolver = NameResolver(tree, "m")
    resolver.only_here = lambda name: True
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and "kernel" in ast.unparse(n))
    method = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "run")
    method.end_lineno = method.lineno  # (a span that leaves the call out: it is found otherwise)
    assert said(reached_on(resolver, tree, call)) == "SM9x"


def test_gpu_sets_as_notes_write_them() -> None:
    assert gpus_named(["10.x"]) == frozenset(range(100, 110))
    assert gpus_named(["<9.0"]) == frozenset(c for c in EVERY_GPU if c < 90)
    assert gpus_named(["9.0", ">=12.0"]) == frozenset({90} | set(range(120, 160)))
    assert said(gpus_named(["10.0", "10.3"])) == "SM100, SM103"
    assert said(gpus_named(["<10.0", "12.x"])) == "below SM100, SM12x"
    assert said(gpus_named([">=12.0"])) == "SM120 and newer"
    assert said(EVERY_GPU) == "any GPU"
    for bad in ("sm90", "10", "<10.x", "10.10"):
        with pytest.raises(GpusError):
            gpus_named([bad])
