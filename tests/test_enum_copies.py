"""FI016: a copy of a FlashInfer enum is judged by what the whole project reads of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_runs import messages

COPY = """\
from enum import IntEnum


# Keep in sync with flashinfer's RoutingMethodType.
class RoutingMethodType(IntEnum):
    Default = (0,)
    Renormalize = (1,)
    DeepSeekV3 = (2,)
    TopK = (5,)
    Unspecified = (8,)
"""


def _project(root: Path, user: str) -> None:
    package = root / "proj"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "routing.py").write_text(COPY)
    (package / "layer.py").write_text(user)


def test_a_member_read_in_another_file_is_reported_with_where(tmp_path: Path) -> None:
    _project(
        tmp_path,
        "from proj.routing import RoutingMethodType\n\n\n"
        "def method(cfg):\n    return cfg.method or RoutingMethodType.Unspecified\n",
    )
    (found,) = messages(tmp_path, "0.6.10", "0.6.11", "FI016")
    assert found.startswith("RoutingMethodType.Unspecified = 8 copies FlashInfer's")
    assert "the number 8 selects RoutingMethodType.Sigmoid there" in found
    assert "proj/layer.py:5" in found


def test_a_member_the_project_never_reads_is_left_alone(tmp_path: Path) -> None:
    _project(
        tmp_path,
        "from proj.routing import RoutingMethodType\n\n\n"
        "def method():\n    return RoutingMethodType.TopK\n",
    )
    assert messages(tmp_path, "0.6.10", "0.6.11", "FI016") == []


def test_a_range_that_renumbers_nothing_reports_nothing(tmp_path: Path) -> None:
    # (0.6.11 -> 0.6.12 leaves RoutingMethodType as it was: the copy's 8 is Sigmoid on both)
    _project(
        tmp_path, "from proj.routing import RoutingMethodType\nR = RoutingMethodType.Unspecified\n"
    )
    assert messages(tmp_path, "0.6.11", "0.6.12", "FI016") == []


FALLBACK = """\
from enum import IntEnum

try:
{imports}
except {caught}:

    class ActivationType(IntEnum):
        Swiglu = 3
        Geglu = 4
        Relu2 = 6
        Identity = 7


def activation(gated):
    return ActivationType.Swiglu if gated else ActivationType.Identity
"""


@pytest.mark.parametrize(
    ("imports", "caught", "reported"),
    [
        # the target has every name imported: the handler never runs there
        ("    from flashinfer.fused_moe.core import ActivationType", "ImportError", False),
        ("    from flashinfer import ActivationType", "(ImportError, AttributeError)", False),
        ("    from flashinfer.fused_moe.core import ActivationType", "Exception", False),
        # the target lacks a name the `try` imports: the copy is used there
        (
            "    from flashinfer.comm import MoeAlltoAll\n"
            "    from flashinfer.fused_moe.core import ActivationType",
            "ImportError",
            True,
        ),
        # something else may fail, or be caught: not a stand-in for a failed import alone
        (
            "    import torch\n    from flashinfer.fused_moe.core import ActivationType",
            "ImportError",
            True,
        ),
        ("    from flashinfer.fused_moe.core import ActivationType", "ValueError", True),
        # a `try` that does not import the enum: the class is the project's all the same
        ("    from flashinfer.fused_moe import cutlass_fused_moe", "ImportError", True),
    ],
)
def test_a_copy_that_stands_in_for_a_failed_import_is_reported_only_where_it_runs(
    tmp_path: Path, imports: str, caught: str, reported: bool
) -> None:
    (tmp_path / "quant.py").write_text(FALLBACK.format(imports=imports, caught=caught))
    found = messages(tmp_path, "0.6.12", "0.7.4", "FI016")
    assert bool(found) is reported, found
