"""FI015: FlashInfer modules and names a project names in strings that the target no longer has."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from migrate_fi.analysis import nodes
from migrate_fi.api.paths import is_flashinfer
from migrate_fi.api.store import on_forget
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import in_flashinfer, module_identity
from migrate_fi.base.results import FixAvailability
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

from ._api import last_names
from ._imports import IMPORT_ERRORS, handled_at, statement_of

if TYPE_CHECKING:
    from migrate_fi.analysis.resolver import NameResolver
    from migrate_fi.analysis.scopes import Scope
    from migrate_fi.api.differ import Api

__all__ = ["NamedPaths"]

# a FlashInfer path in a string, whole (`"flashinfer.comm.trtllm_alltoall"`)
_PATH = re.compile(r"flashinfer(?:\.[A-Za-z_]\w*)*")
# what follows "flashinfer" in a string naming a path: the rest of the path, the closing quote,
# and a name written as a second string (`("flashinfer.comm", "Mapping")`): the finer test
_REST = patterns.compile(rb"""((?:\.\w+)*)(["'])(?:\s*,\s*(["'])(\w+)\3)?""")
_QUOTES = (b'"', b"'")
# `hasattr(module, "name")`, `getattr(module, "name", default)`: the name asked of an object
# (what follows `attr(`: the object's first word, and the name asked)
_ASKED = patterns.compile(rb"""\s*(\w+)[\w.]*\s*,\s*["'](\w+)["']""")
# a file's imports of FlashInfer modules (what binds the object a probe asks)
_FLASHINFER_IMPORT = patterns.compile(
    rb"(?m)^[ \t]*(?:from[ \t]+flashinfer[\w.]*[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)"
    rb"|import[ \t]+flashinfer[^\n]*)"
)
_PROBES = frozenset({"hasattr", "getattr"})
_WORD_BYTES = frozenset(
    bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_."
)
# calls that import the module they are given by name
_IMPORTERS = frozenset({"importlib.import_module", "pytest.importorskip", "builtins.__import__"})
_FIND_SPEC = frozenset({"importlib.util.find_spec"})
# calls that replace what they are given by name: FI013 reports those its data lists
_SETTERS = frozenset({"patch", "setattr", "delattr"})
_LOOKUP_ERRORS = frozenset({"AttributeError", "LookupError", "Exception", "BaseException"})


class _Named(NamedTuple):
    node: ast.Constant  # the string (of a module and a name: the module's)
    path: str  # the FlashInfer path it names
    call: ast.Call | None  # the call it is given to (first), if any
    qualnames: frozenset[str]  # what that call calls


class NamedPaths(Rule):
    """FlashInfer modules and names that a project names in strings and the target release no
    longer has (review only).

    Code that reaches FlashInfer by name, not by an import statement, fails quietly or late
    when a release removes what it names: a feature probe (vLLM's
    `has_flashinfer_nvlink_one_sided()` asks `importlib.util.find_spec(
    "flashinfer.comm.trtllm_moe_alltoall")`, `has_flashinfer_nvlink_two_sided()` walks
    `("flashinfer.comm.trtllm_alltoall", "MnnvlMoe")` pairs with `hasattr`, its all-reduce
    fusion pass asks `hasattr(flashinfer_comm, "allreduce_fusion")`) starts saying the
    feature is missing, so the code it gates turns off without an error; a lazy import
    (`importlib.import_module("flashinfer.x")`, a `LazyImport("flashinfer.x", "name")`
    helper) fails where it is first used; `pytest.importorskip` skips the whole test module
    (inside a function: the tests that run it);
    a patch manager's target string (`"flashinfer.decode.Wrapper.run"`) is skipped or raises.

    A string that is a dotted FlashInfer path, a pair of strings that are a FlashInfer module
    and a name (two items of a tuple or list, the first two arguments of a call), or the name
    `hasattr` or `getattr` asks of a FlashInfer module or class (one the file certainly holds)
    is reported where what it names is in the older release of the range and not in the target
    (the module, where the whole module went). The message says what the call it is given to
    does with it there (an import by name, `find_spec`, `hasattr`, `getattr` with or without
    a default, `mock.patch`), where a `try` around
    it catches the error, and the function it is in (a probe's name says what turns off).
    Left alone: docstrings, string annotations, keys of `sys.modules` (a stub the project puts
    there), FlashInfer's own modules, and the patch targets FI013 reports (a name its data
    lists as changed by the range).
    """

    code = "FI015"
    summary = "FlashInfer modules and names named in strings that the target no longer has (review)"
    summary_zh = "以字符串指名、目标版本中已不存在的 FlashInfer 模块和名称（需审阅）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_availability = FixAvailability.NONE  # (where it went, if anywhere, is a person's)
    triggers = ("flashinfer",)
    needs_api_data = True
    # (a string names FlashInfer without importing it: a probe, a patch target)
    reaches_by_import = False
    via_reexports = False

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # (a path in a string, one of whose parts the range may have removed, outside
        # FlashInfer's own modules)
        if b"flashinfer" not in data or (
            f"flashinfer{os.sep}" in path and in_flashinfer(module_identity(path)[0])
        ):
            return False
        listed = _listed(str(options.from_version), str(options.to_version))
        if any(_may_be_gone(named, listed) for named in _strings_in(data)):
            return True
        if b"attr(" not in data:
            return False
        names = last_names(listed)[1]
        asked = [m for m in _asked_in(data) if m.group(2) in names]
        if not asked:
            return False
        # (the object asked must be bound by an import of FlashInfer: `hasattr(torch, "cuda")`
        # and `getattr(model, "config")` name a word of the range too)
        bound = {b"flashinfer"}
        for statement in _FLASHINFER_IMPORT.finditer(data):
            bound.update(re.findall(rb"\w+", statement.group()))
        return any(m.group(1) in bound for m in asked)

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        if in_flashinfer(ctx.module_name):
            return  # (FlashInfer's own modules: they are the release)
        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        _check(ctx, api_for(old_v), api_for(new_v), old_v, new_v)


@lru_cache(maxsize=16)
def _listed(from_version: str, to_version: str) -> frozenset[str]:
    """The paths the range may have removed or changed (the prefilter index's, public and
    private): a string no leading part of which is one names nothing gone."""
    from migrate_fi.api.index import private_gone_in_range, trigger_paths

    return frozenset(trigger_paths(from_version, to_version)) | private_gone_in_range(
        from_version, to_version
    )


def _strings_in(data: bytes) -> Iterator[str]:
    """The FlashInfer paths strings of a file's text name (a module and a name written as two
    strings: joined), found where the word follows a quote (a search for the quote first, by a
    pattern, took twelve times longer over SGLang's 360 files that say "flashinfer")."""
    at = data.find(b"flashinfer")
    while at >= 0:
        quote = data[at - 1 : at]
        if quote in _QUOTES and (m := _REST.match(data, at + 10)) and m.group(2) == quote:
            rest = m.group(1) + (b"." + m.group(4) if m.group(4) else b"")
            yield "flashinfer" + rest.decode("ascii", "replace")
        at = data.find(b"flashinfer", at + 10)


def _asked_in(data: bytes) -> Iterator[re.Match[bytes]]:
    """Each ``hasattr(obj, "name")`` or ``getattr(obj, "name"...`` of a file's text: the object's
    first word and the name (found by `bytes.find`: a pattern searching for the call took 18 ms
    over SGLang 0.5.11's 58 files that say both "flashinfer" and "attr(")."""
    at = data.find(b"attr(")
    while at >= 0:
        if data[at - 3 : at] in (b"has", b"get") and (
            at < 4 or data[at - 4 : at - 3] not in _WORD_BYTES
        ):
            m = _ASKED.match(data, at + 5)
            if m is not None:
                yield m
        at = data.find(b"attr(", at + 5)


def _may_be_gone(path: str, listed: frozenset[str]) -> bool:
    """Whether a leading part of ``path`` (``flashinfer.a``, ``flashinfer.a.b``, ...) is
    listed."""
    at = path.find(".")
    while at >= 0:
        at = path.find(".", at + 1)
        if (path if at < 0 else path[:at]) in listed:
            return True
    return False


on_forget(_listed.cache_clear)  # (a data folder that changes drops what was read of it)


def _check(ctx: FileContext, old_api: Api, new_api: Api, old_v: str, new_v: str) -> None:
    from migrate_fi.api.index import patched_in_range

    resolver = ctx.resolver
    tree = resolver.tree
    listed = _listed(old_v, new_v)
    parents = nodes.parents(tree)
    skipped = _docstrings_and_annotations(tree)
    patched = patched_in_range(old_v, new_v)
    # once per statement and path; and once per statement and gone module, the other names of
    # it told in the same finding (vLLM's probe list of `(module, name)` pairs: one module gone)
    found: dict[tuple[int, str], tuple[_Named, str, bool, ast.AST, list[str]]] = {}
    for named in _named(resolver, parents, skipped, listed):
        gone = _gone_prefix(named.path.split("."), old_api, new_api)
        if gone is None:
            continue
        if named.call is not None and _is_setter(named.call) and named.path in patched:
            continue  # (FI013's: a patch of a name the range changed)
        statement = statement_of(named.node, parents)
        module = gone in old_api.modules
        key = (id(statement), gone if module and gone != named.path else named.path)
        if key in found:
            first, others = found[key][0], found[key][4]
            if named.path != first.path and named.path not in others:
                others.append(named.path)
            continue
        found[key] = (named, gone, module, statement, [])
    for named, gone, module, statement, others in found.values():
        handler = (
            None  # (nothing raised: it answers that the name is missing)
            if _answers(named)
            else handled_at(statement, parents, IMPORT_ERRORS | _LOOKUP_ERRORS)
        )
        function = _function_of(resolver, named.node)
        message = _message(named, gone, module, handler, function, new_v)
        if others:
            message += say(
                " (so does {others}, named beside it)",
                "（同一处提到的 {others} 也是如此）",
                others=Said(", ".join(others), "、".join(f"`{o}`" for o in others)),
            )
        ctx.report(named.node, message)


def _named(
    resolver: NameResolver,
    parents: dict[int, ast.AST],
    skipped: set[int],
    listed: frozenset[str],
) -> list[_Named]:
    """The strings of the file that name a FlashInfer path a leading part of which the range
    may have removed (``listed``), in source order: a dotted path, a module and a name written
    as two strings side by side, or the name `hasattr`/`getattr` asks of a FlashInfer object."""
    out: list[_Named] = []
    for node in nodes.of_type(resolver.tree, ast.Constant):
        value = node.value
        if not isinstance(value, str):
            continue
        if not value.startswith("flashinfer"):
            asked = _asked_of(resolver, node, parents.get(id(node)))
            if asked is not None and _may_be_gone(asked.path, listed):
                out.append(asked)
            continue
        if id(node) in skipped or not _PATH.fullmatch(value):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.JoinedStr) or _module_table_key(node, parent, parents):
            continue
        call = parent if isinstance(parent, ast.Call) and node in parent.args else None
        if isinstance(parent, ast.keyword):
            grand = parents.get(id(parent))
            call = grand if isinstance(grand, ast.Call) else None
        name = _paired_name(node, parent, call)
        path = f"{value}.{name}" if name is not None else value
        if path == "flashinfer" or not _may_be_gone(path, listed):
            continue  # (what the call is, resolved only for a path that may be gone)
        qualnames: frozenset[str] = frozenset()
        if call is not None:
            scope = resolver.scope_at(call)
            qualnames = frozenset(resolver.resolve(call.func, scope).qualnames)
        out.append(_Named(node, path, call, qualnames))
    out.sort(key=lambda n: (n.node.lineno, n.node.col_offset))
    return out


def _module_table_key(
    node: ast.Constant, parent: ast.AST | None, parents: dict[int, ast.AST]
) -> bool:
    """Whether the string is a key of ``sys.modules`` (``sys.modules["flashinfer.x"] = stub``,
    ``mock.patch.dict(sys.modules, {"flashinfer.x": stub})``): the project puts a module
    there, which needs no release to have it."""
    if isinstance(parent, ast.Subscript) and parent.slice is node:
        return _is_module_table(parent.value)
    if isinstance(parent, ast.Dict) and any(key is node for key in parent.keys):
        call = parents.get(id(parent))
        return isinstance(call, ast.Call) and any(_is_module_table(a) for a in call.args)
    return False


def _is_module_table(expr: ast.expr) -> bool:
    return (
        isinstance(expr, ast.Attribute)
        and expr.attr == "modules"
        and (isinstance(expr.value, ast.Name) and expr.value.id == "sys")
    )


def _asked_of(resolver: NameResolver, node: ast.Constant, parent: ast.AST | None) -> _Named | None:
    """The string as the name ``hasattr`` or ``getattr`` asks of a FlashInfer object (a module,
    a class) the resolver is certain of: ``hasattr(flashinfer_comm, "MoeAlltoAll")``."""
    if not (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in _PROBES
        and len(parent.args) >= 2
        and parent.args[1] is node
        and isinstance(node.value, str)
        and node.value.isidentifier()
    ):
        return None
    name: str = node.value
    scope = resolver.scope_at(parent)
    if resolver.lookup(parent.func.id, scope) is not None:
        return None  # (the project's own `getattr`)
    found = resolver.resolve(parent.args[0], scope)
    owners = found.qualnames
    if len(owners) != 1 or len(found.candidates) != 1:
        return None
    (owner,) = owners
    if not is_flashinfer(owner):
        return None
    return _Named(node, f"{owner}.{name}", parent, frozenset({f"builtins.{parent.func.id}"}))


def _paired_name(node: ast.Constant, parent: ast.AST | None, call: ast.Call | None) -> str | None:
    """The name a module string is paired with: the string right after it in a tuple or list,
    or the second argument of the call it is the first argument of (not a setter's: its second
    argument is the value put in)."""
    items: list[ast.expr] | None = None
    if isinstance(parent, ast.Tuple | ast.List):
        items = parent.elts
    elif call is not None and parent is call and not _is_setter(call):
        items = call.args
    if items is None:
        return None
    at = next((i for i, item in enumerate(items) if item is node), None)
    if at is None or at + 1 >= len(items):
        return None
    following = items[at + 1]
    if (
        isinstance(following, ast.Constant)
        and isinstance(following.value, str)
        and following.value.isidentifier()
    ):
        return following.value
    return None


def _answers(named: _Named) -> bool:
    """Whether the call the string is given to answers "missing" instead of raising:
    `find_spec`, `hasattr`, `getattr` with a default."""
    calls = named.qualnames
    if calls & _FIND_SPEC or "builtins.hasattr" in calls:
        return True
    call = named.call
    return (
        "builtins.getattr" in calls and call is not None and len(call.args) + len(call.keywords) > 2
    )


def _is_setter(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name in _SETTERS


def _gone_prefix(parts: list[str], old_api: Api, new_api: Api) -> str | None:
    """The shortest part of the path (a module, a class, a name) that the older release has
    and the target surely lacks; None where the path is there, or was not in the older one."""
    for i in range(2, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if old_api.exists(prefix) is not True:
            return None
        if new_api.exists(prefix) is False:
            return prefix
    return None


def _docstrings_and_annotations(tree: ast.AST) -> set[int]:
    """Ids of the strings that are docstrings or annotations (never evaluated to a name)."""
    out: set[int] = set()
    for node in nodes.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            out.add(id(node.value))
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.AnnAssign | ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        for annotation in annotations:
            if annotation is not None:
                out.update(id(n) for n in ast.walk(annotation) if isinstance(n, ast.Constant))
    return out


def _function_of(resolver: NameResolver, node: ast.AST) -> str | None:
    """The name of the function the string is in, if any."""
    scope: Scope | None = resolver.scope_at(node)
    while scope is not None:
        if isinstance(scope.node, ast.FunctionDef | ast.AsyncFunctionDef):
            return scope.node.name
        scope = scope.parent
    return None


def _message(
    named: _Named,
    gone: str,
    module: bool,
    handler: int | None,
    function: str | None,
    new_v: str,
) -> Said:
    whole = (
        Said("", "")
        if gone == named.path
        else say(" (the module {gone} is gone)", "（模块 `{gone}` 已不存在）", gone=gone)
        if module
        else say(" ({gone} is gone)", "（`{gone}` 已不存在）", gone=gone)
    )
    calls = named.qualnames
    if "builtins.hasattr" in calls:
        effect = say(
            "hasattr() answers False there, with no error: the code it gates takes its path"
            " for a missing feature",
            "hasattr() 在那里返回 False，不报错：它守护的代码走功能缺失时的路径",
        )
    elif "builtins.getattr" in calls and named.call is not None:
        effect = (
            say(
                "getattr() gives its default there, with no error",
                "getattr() 在那里返回其默认值，不报错",
            )
            if _answers(named)
            else say("reading it raises AttributeError there", "读取它会在那里抛出 AttributeError")
        )
    elif calls & _FIND_SPEC:
        effect = say(
            "find_spec() finds nothing there, with no error: what it tests for reads as missing"
            " and the code it gates takes its path for a missing feature",
            "find_spec() 在那里找不到它，不报错：它检测的功能被视为缺失，它守护的代码走功能缺失时的路径",
        )
    elif "pytest.importorskip" in calls and function is not None:
        effect = say(
            "pytest.importorskip() in {function} skips what runs it there (the test, or every"
            " test of a fixture): those tests stop running",
            "`{function}` 中的 pytest.importorskip() 在那里会跳过运行它的测试（该测试，或使用该"
            " fixture 的所有测试）：这些测试不再运行",
            function=function,
        )
    elif "pytest.importorskip" in calls:
        effect = say(
            "pytest.importorskip() skips the whole test module there: its tests stop running",
            "pytest.importorskip() 在那里跳过整个测试模块：其中的测试不再运行",
        )
    elif calls & _IMPORTERS:
        effect = say(
            "importing it by name raises ModuleNotFoundError there",
            "按名称导入它会在那里抛出 ModuleNotFoundError",
        )
    elif named.call is not None and _is_setter(named.call):
        effect = say(
            "patching it by this name raises there (ModuleNotFoundError or AttributeError)",
            "按此名称打补丁会在那里抛出异常（ModuleNotFoundError 或 AttributeError）",
        )
    else:
        effect = say(
            "code that imports, probes or patches it by this name finds nothing there (a"
            " probe reads it as missing, an import by name fails)",
            "按此名称导入、探测或打补丁的代码在那里找不到它（探测会判定其缺失，按名称导入会失败）",
        )
    caught = (
        say(
            ", caught at line {handler}: what that handler does runs instead",
            "，被第 {handler} 行捕获：转而运行该处理代码",
            handler=handler,
        )
        if handler is not None
        else Said("", "")
    )
    where = (
        say(" (in {function}())", "（位于 {function}() 中）", function=function)
        if function is not None
        else Said("", "")
    )
    asked = calls & {"builtins.hasattr", "builtins.getattr"}
    return say(
        "{path}, {named}{where}, no longer exists in FlashInfer {new_v}{whole}:"
        " {effect}{caught}: migrate by hand",
        "{named}的 `{path}`{where}在 FlashInfer {new_v} 中已不存在{whole}：{effect}{caught}："
        "请手动迁移",
        named=say("asked for by name", "按名称探测")
        if asked
        else say("named in this string", "此字符串指名"),
        path=named.path,
        where=where,
        new_v=new_v,
        whole=whole,
        effect=effect,
        caught=caught,
    )
