"""FI003: point at FP4 quantize calls whose global scale may hold more than one element (0.6.11)."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from migrate_fi.analysis import nodes
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.analysis.values import assigned_values, read_dict
from migrate_fi.api.paths import ApiPath
from migrate_fi.api.store import on_forget
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.results import FixAvailability
from migrate_fi.base.versions import parse_version
from migrate_fi.framework.rule import FileContext, Rule

from . import _callers
from ._api import api_calls
from ._values import bound_function, own_returns, parameter_default

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api

# the definitions whose global scale changed meaning, by a public path of each (every path to
# the same definition counts, from the release data), and the parameter that holds it
SCALES: dict[str, str] = {
    "flashinfer.fp4_quantize": "global_scale",
    "flashinfer.nvfp4_quantize": "a_global_sf",
}

# torch constructors whose first argument is the size
_SIZED = frozenset({"ones", "zeros", "empty", "full", "rand", "randn"})
_ONE_ELEMENT_SIZES = frozenset({"1", "(1,)", "[1]", "(1)", "()", "[]"})  # (empty: 0-d)
# a tensor's methods that make a new one of a size given first (`x.new_ones(1)`)
_NEW_SIZED = frozenset({"new_ones", "new_zeros", "new_empty", "new_full"})
# a tensor's methods that give a Python number (`x.numel()`; `x.size(0)` with one argument)
_NUMBER_METHODS = frozenset({"item", "numel", "nelement", "dim", "ndimension", "element_size"})
# torch functions that make a tensor of the data given first, as `torch.tensor` does
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray", "torch.scalar_tensor"})
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
        "unsqueeze",
        "requires_grad_",
    }
)
# reductions that give one element when no dimension is named
_REDUCTIONS = frozenset({"max", "min", "amax", "amin", "sum", "mean", "norm", "prod", "median"})
_DIM_KEYWORDS = frozenset({"dim", "axis"})
_FLAT_SIZES = frozenset({"-1", "(-1,)", "[-1]"})
_SCALAR_ANNOTATIONS = frozenset(
    {"float", "int", "float|None", "None|float", "Optional[float]", "int|float", "float|int"}
)
_SCALAR_WORDS = patterns.compile(
    r"(?<!non-)(?<!non )(?<!not a )\bscalar(i[sz]ed)?\b"
    r"|\b(one|1|single)[- ]element\b|shape \[1\]|shape \(1,\)"
)
# ... unless the same words also say it may be more (`scalarized for v2, per-expert for v1`)
_MANY_WORDS = patterns.compile(r"\bper[- ](expert|token|row|channel|group|block|head)s?\b|\bvector")
# functions of torch that keep the number of elements of their first argument
_TORCH_ELEMENTWISE = frozenset({"abs", "reciprocal", "sqrt", "rsqrt", "exp", "log", "clamp"})
# functions of torch of two tensors, elementwise (broadcast): one element when both are
_TORCH_BINARY = frozenset(
    {"maximum", "minimum", "fmax", "fmin", "mul", "div", "true_divide", "add", "sub"}
)
_DEPTH = 12


class _Shape:
    """Is an expression certainly one element (a Python number, a one-element tensor)? And if
    not, why it may be more, in words a person can act on.

    One instance per file; a parameter is judged by what every caller in the project passes
    (`rules._callers`), each caller's file with its own instance."""

    def __init__(
        self,
        resolver: NameResolver,
        path: str,
        shared: dict[str, _Shape] | None = None,
        lines: Sequence[str] | None = None,
    ) -> None:
        self.resolver = resolver
        self.path = path
        self._lines = lines  # the file's lines (its comments), read when first asked
        # one instance per file of the run, so a file's judgements are made once
        self.shared = {} if shared is None else shared
        self.shared.setdefault(path, self)
        # (id of the function node, parameter) -> the call that passes a doubtful value, or None
        # when its calls cannot all be seen; also guards recursion
        self.blame: dict[tuple[int, str], _callers.Passed | None] = {}
        self._judged: dict[tuple[int, str], bool] = {}
        self.uncalled: set[tuple[int, str]] = set()  # functions nothing in the project calls
        self._assuming: set[tuple[int, str]] = set()  # names whose own values are being read

    def _for(self, resolver: NameResolver, path: str) -> _Shape:
        found = self.shared.get(path)
        if found is None or found.resolver is not resolver:
            found = _Shape(resolver, path, self.shared)
            self.shared[path] = found
        return found

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
        lookup = _lookup(expr)
        if lookup is not None:  # `scales["input"]`, `scales.get("input")`: a dict's value
            values = self._dict_values(lookup, scope)
            return values is not None and all(self.one(v, where, depth + 1) for v, where in values)
        if isinstance(expr, ast.Subscript):
            if _one_element_subscript(expr.slice):
                # (the first scale, as the code means it; but not of a tensor known to have two
                # dimensions or more, where it is a row)
                rank = self.rank(expr.value, scope, depth + 1)
                return rank is None or rank <= 1
            # one index into a 1-D tensor: a 0-d tensor
            return _single_index(expr.slice) and self.rank(expr.value, scope, depth + 1) == 1
        if isinstance(expr, ast.Attribute):
            # `torch.finfo(dtype).max` and friends are Python numbers
            if isinstance(expr.value, ast.Call):
                return self.qualname(expr.value.func, scope) in ("torch.finfo", "torch.iinfo")
            return self._declared_scalar(expr, scope)
        if isinstance(expr, ast.Call):
            return self._call(expr, scope, depth)
        if isinstance(expr, ast.Name):
            return self._name(expr.id, scope, depth)
        return False

    def _name(self, name: str, scope: Scope, depth: int) -> bool:
        """Every binding of the name gives one element: assigned values, and a parameter (see
        `_parameter`). A value that reads the name itself (`s = s.unsqueeze(0)`) is judged on
        the other bindings: the name is assumed one element while its own values are read."""
        found = self.resolver.lookup(name, scope)
        if found is None or not found[1]:
            return False
        owner, bindings = found
        key = (id(owner), name)
        if key in self._assuming:
            return True
        self._assuming.add(key)
        try:
            for b in bindings:
                if b.what == "parameter":
                    if not self._parameter(name, scope, depth):
                        return False
                elif b.what == "assignment" and b.value is None:
                    # `lo, hi = x.aminmax()`: one element each; other unpackings unknown
                    unpacked = _unpacked(owner.node, name, b.line)
                    if unpacked is None or not self._pair_of_ones(unpacked, owner):
                        return False
                elif b.value is None or b.scope is None:
                    return False  # an import, a loop variable, a `with ... as`: unknown
                elif not self.one(b.value, b.scope, depth + 1):
                    return False
            return True
        finally:
            self._assuming.discard(key)

    # ------------------------------------------------------------ parameters

    def _parameter(self, name: str, scope: Scope, depth: int) -> bool:
        """A parameter annotated or documented as a scalar, or one every caller in the project
        passes one element for (its default when a caller leaves it out)."""
        function = _callers.function_of_parameter(self.resolver, self.path, name, scope)
        if function is None:
            return False
        node = function.node
        if _annotated_scalar(node, name) or _documented_scalar(node, name):
            return True
        key = (id(node), name)
        if key in self._judged:
            return self._judged[key]
        self._judged[key] = False  # a recursive call of itself proves nothing
        passes = _callers.arguments(function, name)
        self.blame[key] = None
        if passes is None:
            return False
        if not passes:
            self.uncalled.add(key)
            return False
        for passed in passes:
            if passed.value is None:
                default = parameter_default(node, name)
                ok = default is not None and self.one(default, function.owner, depth + 1)
            else:
                shape = self._for(passed.resolver, passed.path)
                ok = shape.one(passed.value, passed.scope, depth + 1)
            if not ok:
                self.blame[key] = passed
                return False
        self._judged[key] = True
        return True

    # ------------------------------------------------------------ calls

    def _call(self, call: ast.Call, scope: Scope, depth: int) -> bool:
        func = call.func
        named_dim = any(k.arg in _DIM_KEYWORDS for k in call.keywords)
        if isinstance(func, ast.Attribute):
            method, receiver = func.attr, func.value
            if method in _NUMBER_METHODS or (method == "size" and len(call.args) == 1):
                return True
            if method in _NEW_SIZED and call.args:  # `x.new_ones(1)`, `x.new_full((), v)`
                size = ast.unparse(call.args[0]).replace(" ", "")
                return size in _ONE_ELEMENT_SIZES and (method == "new_full" or len(call.args) == 1)
            if method == "new_tensor" and call.args:  # as `torch.tensor`, of x's dtype and device
                return self._from_data(call.args[0], scope, depth)
            if method in ("reshape", "view", "expand") and len(call.args) == 1:
                size = ast.unparse(call.args[0]).replace(" ", "")
                if size in _ONE_ELEMENT_SIZES:
                    return True
                if method != "expand" and size in _FLAT_SIZES:  # `.view(-1)`: the same elements
                    return self._of_value(func, scope) and self.one(receiver, scope, depth + 1)
                return False
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
            defined = bound_function(self.resolver, func.id, scope)
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
        if qual in _FROM_DATA and call.args:
            return self._from_data(call.args[0], scope, depth)
        if name in _SIZED and qual == f"torch.{name}" and call.args:
            size = ast.unparse(call.args[0]).replace(" ", "")
            return size in _ONE_ELEMENT_SIZES and (name == "full" or len(call.args) == 1)
        if name in _REDUCTIONS and len(call.args) == 1 and not named_dim:
            return True  # `torch.amax(x)`: 0-d
        if name in _TORCH_ELEMENTWISE and call.args:
            return self.one(call.args[0], scope, depth + 1)
        if name in _TORCH_BINARY and len(call.args) == 2:  # `torch.maximum(lo.abs(), hi.abs())`
            return all(self.one(a, scope, depth + 1) for a in call.args)
        return False

    def _from_data(self, data: ast.expr, scope: Scope, depth: int) -> bool:
        """A tensor made of ``data`` (`torch.tensor(data)`) has one element: a list or tuple of
        one value, or a value of one element."""
        if isinstance(data, (ast.List, ast.Tuple)):
            return len(data.elts) == 1 and not isinstance(data.elts[0], (ast.List, ast.Tuple))
        return self.one(data, scope, depth + 1)

    def _pair_of_ones(self, value: ast.expr, scope: Scope) -> bool:
        """``value`` gives a tuple of one-element tensors: ``x.aminmax()`` or
        ``torch.aminmax(x)``, no dimension named."""
        if not isinstance(value, ast.Call) or any(k.arg in _DIM_KEYWORDS for k in value.keywords):
            return False
        func = value.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "aminmax"
            and self._of_value(func, scope)
        ):
            return not value.args
        return self.qualname(func, scope) == "torch.aminmax" and len(value.args) == 1

    # ------------------------------------------------------------ declared attributes

    def _declared_scalar(self, expr: ast.Attribute, scope: Scope) -> bool:
        """``info.scale`` where ``info`` is a parameter annotated with a class of this module
        whose body declares ``scale`` a scalar: annotated a Python number, or described as a
        scalar (or one element) by a comment on or just above its line or by the class's
        docstring (the author's contract, as a parameter's docstring is)."""
        declared = self._declared_in(expr, scope)
        return declared is not None and _field_scalar(*declared, self.lines())

    def _declared_in(
        self, expr: ast.Attribute, scope: Scope
    ) -> tuple[ast.ClassDef, ast.AnnAssign] | None:
        """The class of this module that ``info`` of ``info.scale`` is annotated with, and its
        declaration of ``scale``, when it declares it."""
        if not isinstance(expr.value, ast.Name):
            return None
        found = self.resolver.lookup(expr.value.id, scope)
        if found is None or len(found[1]) != 1:
            return None
        (binding,) = found[1]
        if binding.what != "parameter" or binding.scope is None:
            return None
        cls = self._class_of(binding.annotation, binding.scope)
        field = _field(cls, expr.attr) if cls is not None else None
        return (cls, field) if cls is not None and field is not None else None

    def _class_of(self, annotation: ast.expr | None, scope: Scope) -> ast.ClassDef | None:
        """The class of this module an annotation names (``Info`` or ``"Info"``), bound once."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            name = annotation.value.strip()
        elif isinstance(annotation, ast.Name):
            name = annotation.id
        else:
            return None
        found = self.resolver.lookup(name, scope)
        if found is None or found[0] is not self.resolver.module_scope or len(found[1]) != 1:
            return None
        if found[1][0].what != "class":
            return None
        return next(
            (n for n in self.resolver.tree.body if isinstance(n, ast.ClassDef) and n.name == name),
            None,
        )

    def lines(self) -> Sequence[str]:
        """The file's lines (another file's: from the bytes its resolver was parsed from, which
        the caller search keeps, not read again)."""
        if self._lines is None:
            data = _callers.read_kept(self.path)
            self._lines = (
                [] if data is None else patterns.split_lines(data.decode("utf-8", "replace"))
            )
        return self._lines

    def _of_value(self, func: ast.Attribute, scope: Scope) -> bool:
        qual = self.qualname(func, scope)
        return qual is None or ApiPath(qual).is_method

    # ------------------------------------------------------------ ranks

    def rank(self, expr: ast.expr, scope: Scope, depth: int = 0) -> int | None:
        """The number of dimensions of a tensor expression, when it can be read; else None."""
        if depth > _DEPTH:
            return None
        if isinstance(expr, ast.Name):
            assigned = assigned_values(self.resolver, expr.id, scope)
            if not assigned:
                return None
            ranks = {self.rank(value, value_scope, depth + 1) for value, value_scope in assigned}
            return ranks.pop() if len(ranks) == 1 else None
        if isinstance(expr, ast.Constant):
            return 0 if isinstance(expr.value, (int, float)) else None
        if (  # `torch.finfo(dtype).max` and friends: Python numbers
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Call)
            and self.qualname(expr.value.func, scope) in ("torch.finfo", "torch.iinfo")
        ):
            return 0
        if isinstance(expr, ast.UnaryOp):
            return self.rank(expr.operand, scope, depth + 1)
        if isinstance(expr, ast.BinOp):  # broadcasting: the larger rank
            left, right = (
                self.rank(expr.left, scope, depth + 1),
                self.rank(expr.right, scope, depth + 1),
            )
            return None if left is None or right is None else max(left, right)
        if isinstance(expr, ast.Subscript):
            inner = self.rank(expr.value, scope, depth + 1)
            if inner is None:
                return None
            if isinstance(expr.slice, ast.Slice):
                return inner
            return inner - 1 if _single_index(expr.slice) else None
        if not isinstance(expr, ast.Call):
            return None
        func, args = expr.func, expr.args
        keywords: dict[str, ast.expr] = {k.arg: k.value for k in expr.keywords if k.arg}
        if isinstance(func, ast.Attribute) and self._of_value(func, scope):
            method, receiver = func.attr, func.value
            if (
                method in ("view", "reshape")
                and args
                and not any(isinstance(a, ast.Starred) for a in args)
            ):
                if len(args) == 1:  # (a size, a tuple or a shape: `_dims`; a dtype: unknown)
                    return self._dims(args[0], scope, depth + 1)
                return len(args) if not isinstance(args[0], (ast.Tuple, ast.List)) else None
            if method == "flatten" and not args and not keywords:
                return 1
            if method == "unsqueeze":  # (one more dimension: the same number of elements)
                inner = self.rank(receiver, scope, depth + 1)
                return None if inner is None else inner + 1
            if method in _SAME_SIZE and method not in ("squeeze", "flatten"):
                return self.rank(receiver, scope, depth + 1)
            if method in _REDUCTIONS:
                return self._reduced(self.rank(receiver, scope, depth + 1), args, keywords)
            return None
        qual = self.qualname(func, scope)
        if qual is None or not qual.startswith("torch."):
            return None
        name = qual.rsplit(".", 1)[-1]
        if name in _SIZED and qual == f"torch.{name}" and args:
            if name == "full" or len(args) == 1:  # (one argument: a size, a tuple or a shape)
                return self._dims(args[0], scope, depth + 1)
            if any(isinstance(a, ast.Starred) for a in args):
                return None
            return len(args)
        if qual in ("torch.arange", "torch.linspace", "torch.logspace"):
            return 1
        if qual == "torch.tensor" and args and isinstance(args[0], (ast.List, ast.Tuple)):
            elts = args[0].elts
            return (
                1 if elts and not any(isinstance(e, (ast.List, ast.Tuple)) for e in elts) else None
            )
        if (
            qual in ("torch.tensor", "torch.as_tensor")
            and args
            and isinstance(args[0], ast.Name)
            and self._list_of_ones(args[0].id, scope, depth)
        ):
            return 1  # (a list of one-element values, made into a tensor: one row of them)
        if name in _REDUCTIONS and args:
            return self._reduced(self.rank(args[0], scope, depth + 1), args[1:], keywords)
        if name in _TORCH_ELEMENTWISE and args:
            return self.rank(args[0], scope, depth + 1)
        return None

    def _list_of_ones(self, name: str, scope: Scope, depth: int) -> bool:
        """A list bound once, to a list of one-element values (``[]`` too), and grown only by
        ``name.append(v)`` of one-element values; read only by `torch.tensor` (or
        `torch.as_tensor`) and `len` (``scales = []``, ``scales.append(x.abs().max())`` in a
        loop, ``torch.tensor(scales)``: a 1-D tensor of them). Any other use may change it."""
        found = self.resolver.lookup(name, scope)
        if found is None or len(found[1]) != 1:
            return False
        owner, (binding,) = found
        made = binding.value
        if not isinstance(made, ast.List) or binding.scope is None:
            return False
        if not all(
            not isinstance(e, (ast.List, ast.Tuple, ast.Starred))
            and self.one(e, binding.scope, depth + 1)
            for e in made.elts
        ):
            return False
        seen: set[int] = set()  # (the uses accounted for)
        for node in nodes.of_type(owner.node, ast.Call):
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id == name
            ):
                if func.attr != "append" or len(node.args) != 1 or node.keywords:
                    return False  # (extend, insert, pop...: not only appended to)
                value = node.args[0]
                if isinstance(value, (ast.List, ast.Tuple, ast.Starred)) or not self.one(
                    value, self.resolver.scope_at(node), depth + 1
                ):
                    return False
                seen.add(id(func.value))
                continue
            reads = self.qualname(func, scope) in ("torch.tensor", "torch.as_tensor") or (
                isinstance(func, ast.Name) and func.id == "len"
            )
            for arg in node.args:
                if reads and isinstance(arg, ast.Name) and arg.id == name:
                    seen.add(id(arg))
        return all(
            id(n) in seen or id(n) == id(made)
            for n in nodes.of_type(owner.node, ast.Name)
            if n.id == name and isinstance(n.ctx, ast.Load)
        )

    def _dims(self, size: ast.expr, scope: Scope, depth: int) -> int | None:
        """How many dimensions a tensor made with the size ``size`` has (``torch.ones(size)``):
        an integer gives 1; a tuple or list, its length; ``t.shape`` or ``t.size()``, the rank
        of ``t``; a name, what it is bound to, or how many names it is unpacked into
        (``b, m, n = shape``: 3). None when it cannot be read (a name that may be an int or a
        tuple is not taken for either)."""
        if depth > _DEPTH:
            return None
        if isinstance(size, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in size.elts):
                return None
            return len(size.elts)
        if _int(size) is not None:
            return 1
        if isinstance(size, ast.Attribute) and size.attr == "shape":
            return self.rank(size.value, scope, depth + 1)
        if (
            isinstance(size, ast.Call)
            and isinstance(size.func, ast.Attribute)
            and size.func.attr == "size"
            and not size.args
            and not size.keywords
        ):
            return self.rank(size.func.value, scope, depth + 1)
        if not isinstance(size, ast.Name):
            return None
        found: set[int | None] = set()
        bound = self.resolver.lookup(size.id, scope)
        if bound is not None and len(bound[1]) == 1:  # (one binding: every use is that value)
            found |= {len(t.elts) for t in _unpackings(bound[0].node, size.id)}
        for value, where in assigned_values(self.resolver, size.id, scope) or ():
            found.add(self._dims(value, where, depth + 1))
        return found.pop() if len(found) == 1 else None

    @staticmethod
    def _reduced(
        rank: int | None, args: list[ast.expr], keywords: dict[str, ast.expr]
    ) -> int | None:
        """The rank after a reduction over ``dim`` (given by position or keyword)."""
        if rank is None:
            return None
        dim = keywords.get("dim", keywords.get("axis", args[0] if args else None))
        keep = keywords.get("keepdim")
        if keep is not None and not (isinstance(keep, ast.Constant) and keep.value is False):
            return None
        if dim is None:
            return 0
        if isinstance(dim, (ast.Tuple, ast.List)):
            count = len(dim.elts)
        elif _int(dim) is not None:
            count = 1
        else:
            return None
        return rank - count if rank >= count else None

    # ------------------------------------------------------------ functions of this file

    def _returns_one(self, function: ast.FunctionDef | ast.Lambda, depth: int) -> bool:
        """Every ``return`` of the function gives one element (and it is not a generator)."""
        inner = self.resolver.scope_of(function)
        if inner is None:
            return False
        if isinstance(function, ast.Lambda):
            return self.one(function.body, inner, depth + 1)
        returns = own_returns(function)
        return bool(returns) and all(
            r.value is not None and self.one(r.value, inner, depth + 1) for r in returns or ()
        )

    # ------------------------------------------------------------ why

    def why(self, expr: ast.expr, scope: Scope, depth: int = 0) -> Said:
        """Why ``expr`` may hold more than one element, as a person can check it."""
        if isinstance(expr, ast.Name):
            found = self.resolver.lookup(expr.id, scope)
            if found is not None:
                owner, bindings = found
                kinds = {b.what for b in bindings}
                if "parameter" in kinds:
                    return self._why_parameter(expr.id, scope, owner, depth)
                if kinds == {"import"}:
                    return say("imported from another module", "从另一个模块导入")
                assigned = [b for b in bindings if b.value is not None]
                if assigned:
                    b = assigned[0]
                    return say(
                        "assigned `{value}` at line {line}",
                        "第 {line} 行赋值为 `{value}`",
                        value=_short(b.value),
                        line=b.line,
                    )
            return _UNREADABLE
        if isinstance(expr, ast.Attribute):
            declared = self._declared_in(expr, scope)
            if declared is not None:
                cls, field = declared
                return say(
                    "a field of `{cls}` declared at line {line}, not as one element",
                    "`{cls}` 在第 {line} 行声明的字段，未声明为单个元素",
                    cls=cls.name,
                    line=field.lineno,
                )
            return self._why_attribute(expr)
        lookup = _lookup(expr)
        if lookup is not None:
            values = self._dict_values(lookup, scope)
            if values:
                for v, where in values:
                    if not self.one(v, where, depth + 1):
                        return self.why(v, where, depth + 1)
            return say(
                "the value at {key} of a dict whose values cannot all be read here",
                "字典在 `{key}` 处的值，而这里读不出该字典的全部值",
                key=repr(lookup.key),
            )
        if isinstance(expr, ast.Subscript):
            rank = self.rank(expr.value, scope)
            if rank is not None and rank > 1 and _single_index(expr.slice):
                return say(
                    "one index into a {rank}-D tensor gives {less}-D",
                    "对 {rank} 维张量取一个下标得到 {less} 维",
                    rank=rank,
                    less=rank - 1,
                )
            return say(
                "an element at a computed index: one element only if the tensor is 1-D",
                "按计算出的下标取元素：只有张量是一维时才是一个元素",
            )
        if isinstance(expr, ast.BinOp):
            parts = [p for p in (expr.left, expr.right) if not self.one(p, scope)]
            return self.why(parts[0], scope, depth) if parts else _UNREADABLE
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Name):
                defined = bound_function(self.resolver, expr.func.id, scope)
                if isinstance(defined, ast.FunctionDef):
                    return say(
                        "what `{name}` (line {line}) returns",
                        "`{name}`（第 {line} 行）的返回值",
                        name=defined.name,
                        line=defined.lineno,
                    )
            return say(
                "the result of `{func}(...)`", "`{func}(...)` 的结果", func=_short(expr.func)
            )
        return _UNREADABLE

    def _dict_values(self, lookup: _Lookup, scope: Scope) -> list[tuple[ast.expr, Scope]] | None:
        """What ``d["k"]`` or ``d.get("k", default)`` may be, where ``d`` is a local bound once
        to a dict whose keys can be read (`migrate_fi.analysis.values.read_dict`: built in
        sight, keys written after): the values given for ``"k"``, and for ``get`` its default
        (``None`` where none is given: the key may be missing); None where the keys cannot be
        read or none is ``"k"``."""
        if not isinstance(lookup.dict, ast.Name):
            return None
        source = read_dict(self.resolver, lookup.dict, scope)
        assigned = assigned_values(self.resolver, lookup.dict.id, scope)
        if source is None or not assigned:
            return None
        key = lookup.key
        values = [(w.value, w.scope) for w in source.writes if w.key == key and w.value]
        built = source.keys.get(key)
        if built is not None and all(built is not v for v, _ in values):
            values.insert(0, (built, assigned[0][1]))  # (in the dict as it was built)
        if values and lookup.default is not None:
            values.append((lookup.default, scope))
        return values or None

    def _why_attribute(self, expr: ast.Attribute) -> Said:
        """An attribute: where this file sets one of that name (``x.attr = value``), the first
        such place and its value, as a person checks it; else set elsewhere."""
        written = [
            (node.lineno, node.value)
            for node in nodes.of_type(self.resolver.tree, ast.Assign)
            if any(isinstance(t, ast.Attribute) and t.attr == expr.attr for t in node.targets)
        ]
        if not written:
            return say("an attribute, set elsewhere", "一个属性，在别处设置")
        line, value = min(written, key=lambda w: w[0])
        more = (
            say(
                " and at {n} more places",
                "，另有 {n} 处",
                n=len(written) - 1,
            )
            if len(written) > 1
            else say("", "")
        )
        return say(
            "an attribute; this file sets .{attr} at line {line} to `{value}`{more}",
            "一个属性；本文件在第 {line} 行把 `.{attr}` 设为 `{value}`{more}",
            attr=expr.attr,
            line=line,
            value=_short(value),
            more=more,
        )

    def _why_parameter(self, name: str, scope: Scope, owner: Scope, depth: int) -> Said:
        where = getattr(owner.node, "name", None)
        of = (
            say("a parameter of `{where}`", "`{where}` 的一个参数", where=where)
            if where
            else say("a parameter of a lambda", "一个 lambda 的参数")
        )
        function = _callers.function_of_parameter(self.resolver, self.path, name, scope)
        if function is None:
            return say(
                "{of}, not a name its calls can be followed by",
                "{of}，无法沿着它的名字找到调用处",
                of=of,
            )
        key = (id(function.node), name)
        if key not in self.blame:
            self.one(ast.Name(id=name, ctx=ast.Load()), scope)
        passed = self.blame.get(key)
        if key in self.uncalled:
            return say(
                "{of}, which nothing in the project calls: its callers decide",
                "{of}，项目中没有任何地方调用它：由它的调用者决定",
                of=of,
            )
        if passed is None:
            return say(
                "{of}; not all of its calls can be seen (a method, passed as a value, or"
                " decorated)",
                "{of}；看不到它的全部调用（它是方法、被当作值传递或带有装饰器）",
                of=of,
            )
        if passed.value is None:
            return say(
                "{of}; the call at {at} leaves it at its default",
                "{of}；{at} 处的调用让它取默认值",
                of=of,
                at=passed.where(self.path),
            )
        shape = self._for(passed.resolver, passed.path)
        reason = (
            shape.why(passed.value, passed.scope, depth + 1)
            if depth < 3
            else say("see there", "见该处")
        )
        return say(
            "{of}; the call at {at} passes `{value}` ({reason})",
            "{of}；{at} 处的调用传入 `{value}`（{reason}）",
            of=of,
            at=passed.where(self.path),
            value=_short(passed.value),
            reason=reason,
        )


_UNREADABLE = say("its size cannot be read here", "这里读不出它的大小")


def _unpackings(node: ast.AST, name: str) -> list[ast.Tuple | ast.List]:
    """The targets of ``a, b, c = name`` statements in ``node``'s own body (not in the
    functions, lambdas and classes it holds), without a starred target."""
    out: list[ast.Tuple | ast.List] = []
    pending = list(ast.iter_child_nodes(node))
    while pending:
        child = pending.pop()
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if (
            isinstance(child, ast.Assign)
            and len(child.targets) == 1
            and isinstance(child.targets[0], (ast.Tuple, ast.List))
            and not any(isinstance(e, ast.Starred) for e in child.targets[0].elts)
            and isinstance(child.value, ast.Name)
            and child.value.id == name
        ):
            out.append(child.targets[0])
        pending.extend(ast.iter_child_nodes(child))
    return out


def _unpacked(node: ast.AST, name: str, line: int) -> ast.expr | None:
    """The value of the ``a, b = value`` statement at ``line`` of ``node``'s own body whose
    targets hold ``name`` (plainly, no starred target)."""
    for child in nodes.of_type(node, ast.Assign):
        if child.lineno != line or len(child.targets) != 1:
            continue
        target = child.targets[0]
        if not isinstance(target, (ast.Tuple, ast.List)):
            continue
        elts = target.elts
        if any(isinstance(e, ast.Name) and e.id == name for e in elts) and not any(
            isinstance(e, ast.Starred) for e in elts
        ):
            return child.value
    return None


def _field(cls: ast.ClassDef, attr: str) -> ast.AnnAssign | None:
    """The declaration ``attr: T`` of ``cls``'s body."""
    return next(
        (
            stmt
            for stmt in cls.body
            if isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == attr
        ),
        None,
    )


def _field_scalar(cls: ast.ClassDef, stmt: ast.AnnAssign, lines: Sequence[str]) -> bool:
    """``cls`` declares the field of ``stmt`` a scalar: see `_declared_scalar`."""
    if _scalar_annotation(stmt.annotation):
        return True
    said = []
    at = stmt.lineno - 1
    if at < len(lines) and "#" in lines[at]:
        said.append(lines[at].split("#", 1)[1])
    at -= 1
    while 0 <= at < len(lines) and lines[at].lstrip().startswith("#"):
        said.append(lines[at].lstrip()[1:])
        at -= 1
    if said and _says_scalar(" ".join(said).lower()):
        return True
    assert isinstance(stmt.target, ast.Name)  # (`_field` finds only these)
    return _documented_scalar(cls, stmt.target.id)


def _scalar_annotation(annotation: ast.expr) -> bool:
    """``float`` (or int, ``float | None``, ``Optional[float]``): a Python number."""
    text = ast.unparse(annotation).replace(" ", "").replace("typing.", "")
    return text in _SCALAR_ANNOTATIONS


def _annotated_scalar(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str) -> bool:
    """``name: float`` (or int, ``float | None``, ``Optional[float]``): a Python number."""
    for arg in _all_args(node):
        if arg.arg == name and arg.annotation is not None:
            return _scalar_annotation(arg.annotation)
    return False


def _documented_scalar(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef, name: str
) -> bool:
    """The function's (or class's) docstring describes ``name`` as a scalar (or one-element
    tensor)."""
    if isinstance(node, ast.Lambda):
        return False
    doc = ast.get_docstring(node)
    if not doc:
        return False
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        head = re.match(rf"\s*[`*]*{re.escape(name)}[`*]*\s*(\(|:)", line)
        if head is None:
            continue
        indent = len(line) - len(line.lstrip())
        text = [line]
        for more in lines[i + 1 :]:
            if more.strip() and len(more) - len(more.lstrip()) <= indent:
                break
            text.append(more)
        return _says_scalar(" ".join(text).lower())
    return False


def _says_scalar(text: str) -> bool:
    return _SCALAR_WORDS.search(text) is not None and _MANY_WORDS.search(text) is None


def _all_args(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = node.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


class _Lookup(NamedTuple):
    """A dict's value by a string key: ``d["k"]``, or ``d.get("k"[, default])``."""

    dict: ast.expr  # ``d``
    key: str
    default: ast.expr | None  # `get`'s (a `None` constant where it gives none); None for ``d[k]``


def _lookup(expr: ast.expr) -> _Lookup | None:
    """``expr`` as a dict's value by a string key (a dict's value, never a tensor's element);
    None for anything else. ``d.get(...)`` is one only when ``d`` is then found to be a dict
    (`_Shape._dict_values`): any other ``get`` is judged as the call it is."""
    if isinstance(expr, ast.Subscript):
        key = expr.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return _Lookup(expr.value, key.value, None)
        return None
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "get"
        and not expr.keywords
        and 1 <= len(expr.args) <= 2
        and isinstance(expr.args[0], ast.Constant)
        and isinstance(expr.args[0].value, str)
    ):
        default = expr.args[1] if len(expr.args) == 2 else ast.Constant(None)
        return _Lookup(expr.func.value, expr.args[0].value, default)
    return None


def _single_index(s: ast.expr) -> bool:
    """``x[i]``: one index (not a slice, a tuple of indices, ``None`` or ``...``)."""
    if isinstance(s, (ast.Slice, ast.Tuple, ast.List, ast.Starred)):
        return False
    return not (isinstance(s, ast.Constant) and (s.value is None or s.value is Ellipsis))


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


class Fp4GlobalScaleShape(Rule):
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
      `math.*`, `torch.finfo(...).max`, `.item()`, `.numel()`, `.size(0)`;
    - a slice of length one (`x[:1]`, `x[0:1]`, `x[i:i + 1]`, `x[-1:]`) or a constant index
      (`x[0]`), the first scale as the code means it, unless `x` is known to have two
      dimensions or more (then it is a row); any index into a tensor known to be 1-D. The
      dimensions of a tensor are read from how it is made: `torch.ones(8, 2)`, a size argument
      (`torch.randn(shape)` with `b, m, n = shape`: three), `.view(...)`, `.reshape(...)`,
      `.unsqueeze(...)`, `.flatten()`, reductions over named dimensions, and `torch.tensor`
      of a list bound once and grown only by `.append` of values of one element (per-expert
      scales gathered in a loop: one dimension);
    - `torch.tensor(v)`, `torch.tensor([v])` (`torch.as_tensor`, `x.new_tensor` alike),
      `torch.ones(1)`, `torch.full((1,), v)`, `x.new_ones(1)`, `.reshape(1)`, `.view(1)`, and
      the 0-d sizes (`torch.full((), v)`, `.reshape(())`);
    - a reduction with no dimension (`x.abs().max()`, `torch.amax(x)`), either half of
      `lo, hi = x.aminmax()`, and `torch.maximum`/`torch.minimum` of one-element operands;
    - a field `info.scale` where `info` is a parameter annotated with a class of the same
      module that declares `scale` a scalar: annotated `float`, or called a scalar (or
      "scalarized", or one element) by a comment on or just above the declaration or by the
      class docstring, and not per-expert (or per-token, per-row) in the same words;
    - any of these through `.to(...)`, `.float()`, `.cuda()`, `.contiguous()`, `.clone()` and
      other size-keeping methods, arithmetic of one-element operands (`1.0 / scale[:1]`), a
      variable assigned only such values, in any scope, and a call of a function of the same
      file (undecorated, bound once) whose every `return` gives such a value;
    - a dict's value (`scales["input"]`, a key, never a tensor's index; `scales.get("input")`,
      with its default if one is given) where the dict is built in sight (`{...}`, `dict(...)`,
      keys written after) and each value given for the key is one of these; a dict whose value
      for the key cannot be read is reported as such.

    A line a person has checked can be marked `# migrate-fi: ignore[FI003]`.
    """

    code = "FI003"
    summary = "fp4_quantize: a global_scale with more than one element means per-row scales since 0.6.11 (review)"
    summary_zh = "fp4_quantize：自 0.6.11 起，多于一个元素的 global_scale 表示逐行缩放（需审阅）"
    introduced_in = "0.6.11"
    fix_availability = FixAvailability.NONE
    triggers = (("flashinfer", "fp4_quantize"), ("flashinfer", "nvfp4_quantize"))
    concerns = frozenset(SCALES)
    reaches_by_import = True
    searches_project = True  # (what callers pass: `_callers.arguments`)

    def find(self, ctx: FileContext) -> None:
        old_api, params = _targets(str(ctx.options.from_version), self.introduced_in)
        resolver = ctx.resolver
        shape = _Shape(resolver, ctx.path, lines=ctx.lines)
        try:
            for call in api_calls(ctx, old_api, params):
                if not call.certain:
                    continue  # names that may not be FlashInfer's are the positional rules' business
                view, scope = call.view, call.view.scope
                param, index = params[call.key]
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
                name = call.path.rsplit(".", 1)[-1]
                text = _short(value)
                one = (
                    f"{text}[:1]"
                    if isinstance(value, (ast.Name, ast.Attribute))
                    else f"({text})[:1]"
                )
                ctx.report(
                    value,
                    say(
                        "{name}: {param} `{text}` may hold more than one element ({why}); since"
                        " {since} num_tokens elements mean one scale per row and other sizes fail,"
                        " where before only element 0 was read: pass `{one}` if one global scale"
                        " is meant, else mark the line `# migrate-fi: ignore[{code}]` once checked",
                        "{name}：传给 `{param}` 的 `{text}` 可能不止一个元素（{why}）；自 {since} 起，"
                        "`num_tokens` 个元素表示逐行各一个缩放，其他大小会报错，而以前只读第 0 个"
                        "元素：如果本意是一个全局缩放，请传入 `{one}`；否则核对后给该行加上"
                        " `# migrate-fi: ignore[{code}]`",
                        name=name,
                        param=param,
                        text=text,
                        why=shape.why(value, scope),
                        since=self.introduced_in,
                        one=one,
                        code=self.code,
                    ),
                )
        finally:
            shape.shared.clear()  # (it holds every instance: a cycle that would keep the trees)


@cache  # (asked by every file of the run)
def _targets(version: str, since: str) -> tuple[Api, dict[str, tuple[str, int]]]:
    """The release the calls are matched against, and by definition key the parameter that
    holds the global scale with its positional index (-1: keyword only). The release is
    --from's, the code being written for it; for a --from older than the data (no API data
    needed: the rule knows its change), the last bundled release before the change."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.store import available_releases

    known = {parse_version(v): v for v in available_releases()}
    wanted = parse_version(version)
    if wanted not in known:
        before = [v for v in known if v < parse_version(since)]
        wanted = max(before) if before else min(known)
    old_api = api_for(known[wanted])
    params: dict[str, tuple[str, int]] = {}
    for path, param in SCALES.items():
        key, signature = old_api.key(path), old_api.callable(path)
        if key is not None and signature is not None:
            at = [i for i, p in enumerate(signature.positional) if p.name == param]
            params[key] = (param, at[0] if at else -1)
    return old_api, params


on_forget(_targets.cache_clear)  # (a data folder that changes drops what was read of it)
