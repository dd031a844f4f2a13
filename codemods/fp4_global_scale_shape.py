"""FI003: point at FP4 quantize calls whose global scale may hold more than one element (0.6.11)."""

from __future__ import annotations

import ast

from migrate_fi.calls import CallArgs
from migrate_fi.codemod import Codemod, FileContext
from migrate_fi.resolver import NameResolver
from migrate_fi.results import FixSafety
from migrate_fi.scopes import Scope
from migrate_fi.values import assigned_values

# qualified paths -> (parameter name, positional index)
_FP4 = ("global_scale", 1)
_NVFP4 = ("a_global_sf", 1)
TARGETS: dict[str, tuple[str, int]] = {
    "flashinfer.fp4_quantize": _FP4,
    "flashinfer.quantization.fp4_quantize": _FP4,
    "flashinfer.quantization.fp4_quantization.fp4_quantize": _FP4,
    "flashinfer.fp4_quantization.fp4_quantize": _FP4,
    "flashinfer.nvfp4_quantize": _NVFP4,
    "flashinfer.quantization.nvfp4_quantize": _NVFP4,
    "flashinfer.quantization.fp4_quantization.nvfp4_quantize": _NVFP4,
    "flashinfer.fp4_quantization.nvfp4_quantize": _NVFP4,
}
# torch constructors whose size argument we can read
_SIZED = frozenset({"ones", "zeros", "empty", "full", "rand", "randn"})
_ONE_ELEMENT_SIZES = ("1", "(1,)", "[1]", "(1)")


def _single_element(expr: ast.expr, resolver: NameResolver, scope: Scope, depth: int = 0) -> bool:
    """Is ``expr`` obviously a tensor with one element (or None)?"""
    if isinstance(expr, ast.Constant):
        return True  # None (no global scale) or a Python scalar
    if isinstance(expr, ast.Subscript):
        s = expr.slice
        if isinstance(s, ast.Slice) and s.step is None:
            lo = (
                s.lower.value
                if isinstance(s.lower, ast.Constant)
                else (0 if s.lower is None else None)
            )
            hi = s.upper.value if isinstance(s.upper, ast.Constant) else None
            if isinstance(lo, int) and isinstance(hi, int) and hi - lo == 1 and lo >= 0:
                return True  # x[:1], x[0:1], x[3:4]
            if lo == -1 and s.upper is None:
                return True  # x[-1:]
        # x[0]: one element of a 1-D tensor
        return isinstance(s, ast.Constant) and isinstance(s.value, int)
    if isinstance(expr, ast.Call):
        quals = resolver.resolve(expr.func, scope).qualnames
        if len(quals) != 1:
            return False
        (qual,) = quals
        if qual == "torch.tensor" and expr.args:
            data = expr.args[0]
            if isinstance(data, (ast.List, ast.Tuple)):
                return len(data.elts) == 1 and not isinstance(data.elts[0], (ast.List, ast.Tuple))
            return isinstance(data, (ast.Constant, ast.Name, ast.Attribute, ast.BinOp, ast.UnaryOp))
        if qual.startswith("torch.") and qual.rsplit(".", 1)[-1] in _SIZED and expr.args:
            size = ast.unparse(expr.args[0]).replace(" ", "")
            return size in _ONE_ELEMENT_SIZES and (
                qual.rsplit(".", 1)[-1] == "full" or len(expr.args) == 1
            )
        return False
    if isinstance(expr, ast.Name) and depth < 3:
        # a local built obviously with one element: `gs = torch.tensor([1.0], ...)`
        assigned = assigned_values(resolver, expr.id, scope, only_in=scope)
        return assigned is not None and all(
            _single_element(v, resolver, scope, depth + 1) for v, _ in assigned
        )
    return False


class Fp4GlobalScaleShape(Codemod):
    """FP4 quantize calls whose `global_scale` may hold more than one element (review only).

    Since FlashInfer 0.6.11 the C++ binding of `fp4_quantize` (and of `nvfp4_quantize`, through it)
    checks that the global scale is float32 with 1 or num_tokens elements ("globalScale should
    have shape [1] or [num_tokens]"), and a scale with more than one element now means one scale
    per row. Before, only its element 0 was read. Code that passed, say, a per-expert scale
    tensor ran fine on 0.6.10 and now fails, or silently scales each row differently. The SGLang
    upgrade had to pass `input_global_scale[:1]`.

    Which tensor a call passes cannot be known statically, so nothing is rewritten: calls whose
    global scale is not obviously a single element are pointed out. Obviously single: `None`,
    a slice of length one (`x[:1]`, `x[0:1]`, `x[-1:]`), an integer index (`x[0]`),
    `torch.tensor([v])`/`torch.tensor(v)`, `torch.ones(1)`, `torch.full((1,), v)`, and a local
    variable assigned only such values. A line a person has checked can be left as it is.
    """

    code = "FI003"
    summary = "fp4_quantize: a global_scale with more than one element means per-row scales since 0.6.11 (review)"
    introduced_in = "0.6.11"
    fix_safety = FixSafety.NONE
    triggers = (("flashinfer", "fp4_quantize"), ("flashinfer", "nvfp4_quantize"))

    def find(self, ctx: FileContext) -> None:
        resolver = ctx.resolver
        for call, scope in resolver.iter_calls():
            target, _ambiguity = resolver.resolve(call.func, scope).match(frozenset(TARGETS))
            if target is None:
                continue  # FI001 reports names that may not be FlashInfer's
            param, index = TARGETS[target]
            args = CallArgs.of(call, resolver, scope)
            passed = args.passed(param)
            if passed is not None:
                value = passed
            elif len(args.positional) > index:
                value = args.positional[index]
            else:
                continue  # not passed (or hidden in *args/**kwargs): nothing to point at
            if _single_element(value, resolver, scope):
                continue
            name = target.rsplit(".", 1)[-1]
            ctx.report(
                value,
                f"{name}: {param} `{ast.unparse(value)}` may hold more than one element; since"
                " 0.6.11 that means one scale per row (num_tokens elements, float32) instead of"
                " element 0: pass a one-element scale (e.g. `[:1]`) if that is what was meant",
            )
