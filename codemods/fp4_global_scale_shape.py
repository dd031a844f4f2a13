"""FI003: point at FP4 quantize calls whose global scale may hold more than one element (0.6.11)."""

from __future__ import annotations

import ast

from migrate_fi.api.paths import ApiPath
from migrate_fi.calls import callee_calls
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

# torch constructors whose first argument is the size
_SIZED = frozenset({"ones", "zeros", "empty", "full", "rand", "randn"})
_ONE_ELEMENT_SIZES = frozenset({"1", "(1,)", "[1]", "(1)"})
# methods that keep the number of elements (dtype, device, layout, elementwise maths)
_SAME_SIZE = frozenset(
    {
        "to",
        "cuda",
        "cpu",
        "float",
        "half",
        "bfloat16",
        "double",
        "contiguous",
        "clone",
        "detach",
        "type",
        "abs",
        "reciprocal",
        "sqrt",
        "rsqrt",
        "exp",
        "log",
        "clamp",
        "clamp_min",
        "clamp_max",
        "clamp_",
        "clamp_min_",
        "clamp_max_",
        "neg",
        "squeeze",
        "flatten",
        "requires_grad_",
    }
)
# reductions that give one element when no dimension is named
_REDUCTIONS = frozenset({"max", "min", "amax", "amin", "sum", "mean", "norm", "prod", "median"})
_DIM_KEYWORDS = frozenset({"dim", "axis"})
# functions of torch that keep the number of elements of their first argument
_TORCH_ELEMENTWISE = frozenset({"abs", "reciprocal", "sqrt", "rsqrt", "exp", "log", "clamp"})
_DEPTH = 6


class _Shape:
    """Is an expression certainly one element (a Python number, a one-element tensor)? And if
    not, why it may be more, in words a person can act on."""

    def __init__(self, resolver: NameResolver) -> None:
        self.resolver = resolver

    def qualname(self, func: ast.expr, scope: Scope) -> str | None:
        quals = self.resolver.resolve(func, scope).qualnames
        return next(iter(quals)) if len(quals) == 1 else None

    def one(self, expr: ast.expr, scope: Scope, depth: int = 0) -> bool:
        if depth > _DEPTH:
            return False
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, (int, float, bool)) or expr.value is None
        if isinstance(expr, ast.UnaryOp):
            return self.one(expr.operand, scope, depth + 1)
        if isinstance(expr, ast.BinOp):  # `1.0 / scale[:1]`: broadcasting keeps one element
            return self.one(expr.left, scope, depth + 1) and self.one(expr.right, scope, depth + 1)
        if isinstance(expr, ast.IfExp):
            return self.one(expr.body, scope, depth + 1) and self.one(expr.orelse, scope, depth + 1)
        if isinstance(expr, ast.Subscript):
            return _one_element_subscript(expr.slice)
        if isinstance(expr, ast.Attribute):
            # `torch.finfo(dtype).max` and friends are Python numbers
            return isinstance(expr.value, ast.Call) and self.qualname(expr.value.func, scope) in (
                "torch.finfo",
                "torch.iinfo",
            )
        if isinstance(expr, ast.Call):
            return self._call(expr, scope, depth)
        if isinstance(expr, ast.Name):
            assigned = assigned_values(self.resolver, expr.id, scope)
            return assigned is not None and all(
                self.one(value, value_scope, depth + 1) for value, value_scope in assigned
            )
        return False

    def _call(self, call: ast.Call, scope: Scope, depth: int) -> bool:
        func = call.func
        named_dim = any(k.arg in _DIM_KEYWORDS for k in call.keywords)
        if isinstance(func, ast.Attribute):
            method, receiver = func.attr, func.value
            if method == "item":
                return True
            if method in ("reshape", "view", "expand") and len(call.args) == 1:
                return ast.unparse(call.args[0]).replace(" ", "") in _ONE_ELEMENT_SIZES
            # a method of a value (`x.max()`, `torch.abs(x).max()`: the resolver names the
            # latter `torch.abs().max`), not a function of a module (`torch.max`)
            qual = self.qualname(func, scope)
            of_a_value = qual is None or ApiPath(qual).is_method
            reduction = method in _REDUCTIONS and not call.args and not named_dim
            if reduction and (of_a_value or not str(qual).startswith("torch.")):
                return True  # `x.abs().max()`: a tensor method, no dimension: 0-d
            if method in _SAME_SIZE and of_a_value:
                return self.one(receiver, scope, depth + 1)
        if (
            isinstance(func, ast.Name)
            and func.id in ("float", "int")
            and self.resolver.lookup(func.id, scope) is None
        ):
            return True  # the builtins give Python numbers
        if isinstance(func, ast.Name):
            defined = self._function(func.id, scope)
            if defined is not None:  # a function of this file: what it returns
                return self._returns_one(defined, depth)
        qual = self.qualname(func, scope)
        if qual is None:
            return False
        if qual.startswith("math."):
            return True
        if not qual.startswith("torch."):
            return False
        name = qual.rsplit(".", 1)[-1]
        if qual in ("torch.tensor", "torch.scalar_tensor") and call.args:
            data = call.args[0]
            if isinstance(data, (ast.List, ast.Tuple)):
                return len(data.elts) == 1 and not isinstance(data.elts[0], (ast.List, ast.Tuple))
            return self.one(data, scope, depth + 1)
        if name in _SIZED and qual == f"torch.{name}" and call.args:
            size = ast.unparse(call.args[0]).replace(" ", "")
            return size in _ONE_ELEMENT_SIZES and (name == "full" or len(call.args) == 1)
        if name in _REDUCTIONS and len(call.args) == 1 and not named_dim:
            return True  # `torch.amax(x)`: 0-d
        if name in _TORCH_ELEMENTWISE and call.args:
            return self.one(call.args[0], scope, depth + 1)
        return False

    def _function(self, name: str, scope: Scope) -> ast.FunctionDef | None:
        """The function statement ``name`` refers to, when it is bound once, by a def."""
        found = self.resolver.lookup(name, scope)
        if found is None:
            return None
        owner, bindings = found
        if len(bindings) != 1 or bindings[0].what != "def":
            return None
        for node in ast.walk(owner.node):
            if (
                isinstance(node, ast.FunctionDef)
                and node.name == name
                and node.lineno == bindings[0].line
                and not node.decorator_list  # a decorator may return anything
            ):
                return node
        return None

    def _returns_one(self, function: ast.FunctionDef, depth: int) -> bool:
        """Every ``return`` of the function gives one element (and it is not a generator)."""
        inner = self.resolver.scope_of(function)
        if inner is None:
            return False
        returns: list[ast.Return] = []
        pending: list[ast.AST] = list(function.body)
        while pending:
            node = pending.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue  # their returns are their own
            if isinstance(node, (ast.Yield, ast.YieldFrom)):
                return False
            if isinstance(node, ast.Return):
                returns.append(node)
            pending.extend(ast.iter_child_nodes(node))
        return bool(returns) and all(
            r.value is not None and self.one(r.value, inner, depth + 1) for r in returns
        )

    def why(self, expr: ast.expr, scope: Scope) -> str:
        """Why ``expr`` may hold more than one element, as a person can check it."""
        if isinstance(expr, ast.Name):
            found = self.resolver.lookup(expr.id, scope)
            if found is not None:
                owner, bindings = found
                kinds = {b.what for b in bindings}
                if "parameter" in kinds:
                    where = getattr(owner.node, "name", "the function")
                    return f"a parameter of `{where}`: its callers decide"
                if kinds == {"import"}:
                    return "imported from another module"
                assigned = [b for b in bindings if b.value is not None]
                if assigned:
                    b = assigned[0]
                    return f"assigned `{_short(b.value)}` at line {b.line}"
            return "its size cannot be read here"
        if isinstance(expr, ast.Attribute):
            return "an attribute, set elsewhere"
        if isinstance(expr, ast.Subscript):
            return "an element at a computed index: one element only if the tensor is 1-D"
        if isinstance(expr, ast.BinOp):
            parts = [p for p in (expr.left, expr.right) if not self.one(p, scope)]
            return self.why(parts[0], scope) if parts else "its size cannot be read here"
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name):
                defined = self._function(expr.func.id, scope)
                if defined is not None:
                    return f"what `{defined.name}` (line {defined.lineno}) returns"
            return f"the result of `{_short(expr.func)}(...)`"
        return "its size cannot be read here"


def _short(node: ast.AST | None, limit: int = 50) -> str:
    text = ast.unparse(node) if node is not None else ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _int(node: ast.expr) -> int | None:
    """An integer literal, negative ones included."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _one_element_subscript(s: ast.expr) -> bool:
    """``x[:1]``, ``x[0:1]``, ``x[3:4]``, ``x[i:i + 1]``, ``x[-1:]``, ``x[0]``."""
    if isinstance(s, ast.Slice):
        if s.step is not None:
            return False
        lower = s.lower
        lo = 0 if lower is None else _int(lower)
        hi = None if s.upper is None else _int(s.upper)
        if lo is not None and hi is not None and lo >= 0 and hi - lo == 1:
            return True
        if lo == -1 and s.upper is None:
            return True
        # `x[i:i + 1]`
        upper = s.upper
        return (
            lower is not None
            and isinstance(upper, ast.BinOp)
            and isinstance(upper.op, ast.Add)
            and isinstance(upper.right, ast.Constant)
            and upper.right.value == 1
            and ast.dump(upper.left) == ast.dump(lower)
        )
    # `x[0]`: one element of a 1-D tensor (global scales are 1-D)
    return _int(s) is not None


class Fp4GlobalScaleShape(Codemod):
    """FP4 quantize calls whose `global_scale` may hold more than one element (review only).

    Since FlashInfer 0.6.11 the C++ binding of `fp4_quantize` (and of `nvfp4_quantize`, through it)
    checks that the global scale is float32 with 1 or num_tokens elements ("globalScale should
    have shape [1] or [num_tokens]"), and a scale with more than one element now means one scale
    per row. Before, only its element 0 was read. Code that passed, say, a per-expert scale
    tensor ran fine on 0.6.10 and now fails, or silently scales each row differently. The SGLang
    upgrade had to pass `input_global_scale[:1]`.

    Which tensor a call passes cannot always be known statically, so nothing is rewritten: calls
    whose global scale is not certainly one element are pointed out, each with why (a parameter
    whose callers decide, an attribute set elsewhere, a computed index) and what to do.
    Certainly one element, and never reported:
    - `None`, Python numbers and constant arithmetic (`1.0 / (448.0 * 6.0)`), `float(...)`,
      `math.*`, `torch.finfo(...).max`, `.item()`;
    - a slice of length one (`x[:1]`, `x[0:1]`, `x[i:i + 1]`, `x[-1:]`) or a constant index
      (`x[0]`, of a 1-D scale);
    - `torch.tensor(v)`, `torch.tensor([v])`, `torch.ones(1)`, `torch.full((1,), v)`,
      `.reshape(1)`, `.view(1)`;
    - a reduction with no dimension (`x.abs().max()`, `torch.amax(x)`);
    - any of these through `.to(...)`, `.float()`, `.cuda()`, `.contiguous()`, `.clone()` and
      other size-keeping methods, arithmetic of one-element operands (`1.0 / scale[:1]`), a
      variable assigned only such values, in any scope, and a call of a function of the same
      file (undecorated, bound once) whose every `return` gives such a value.

    A line a person has checked can be marked `# migrate-fi: ignore[FI003]`.
    """

    code = "FI003"
    summary = "fp4_quantize: a global_scale with more than one element means per-row scales since 0.6.11 (review)"
    introduced_in = "0.6.11"
    fix_safety = FixSafety.NONE
    triggers = (("flashinfer", "fp4_quantize"), ("flashinfer", "nvfp4_quantize"))

    def find(self, ctx: FileContext) -> None:
        resolver = ctx.resolver
        shape = _Shape(resolver)
        for view in callee_calls(resolver):
            scope = view.scope
            target, _ambiguity = resolver.resolve(view.func, view.func_scope).match(
                frozenset(TARGETS)
            )
            if target is None:
                continue  # names that may not be FlashInfer's are the positional rules' business
            param, index = TARGETS[target]
            # what this call writes itself (a partial's own arguments are judged where it is made)
            args, index = view.own, index - view.bound_count
            passed = args.passed(param)
            if passed is not None:
                value = passed
            elif 0 <= index < len(args.positional) and not (view.bound and view.bound.starred):
                value = args.positional[index]
            else:
                continue  # not passed (or hidden in *args/**kwargs): nothing to point at
            if shape.one(value, scope):
                continue
            name = target.rsplit(".", 1)[-1]
            text = _short(value)
            one = f"{text}[:1]" if isinstance(value, (ast.Name, ast.Attribute)) else f"({text})[:1]"
            ctx.report(
                value,
                f"{name}: {param} `{text}` may hold more than one element ({shape.why(value, scope)});"
                f" since 0.6.11 num_tokens elements mean one scale per row and other sizes fail,"
                f" where before only element 0 was read: pass `{one}` if one global scale is"
                f" meant, else mark the line `# migrate-fi: ignore[{self.code}]` once checked",
            )
