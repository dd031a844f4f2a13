"""FI014: FlashInfer's private names a project reads that the target release no longer has."""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING, ClassVar

from migrate_fi.analysis import nodes
from migrate_fi.api.paths import is_flashinfer
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import in_flashinfer, module_identity
from migrate_fi.base.results import FixAvailability
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

from ._api import last_names, paths_words
from ._imports import IMPORT_ERRORS, handled_at, statement_of

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api

__all__ = ["PrivateNames"]

# the private identifiers of a file's text (what the finer test meets the range's names in)
_PRIVATE = patterns.compile(rb"(?<!\w)_\w+")
# what a `try` must catch to handle a name that is gone: reading it raises AttributeError
_ATTRIBUTE_ERRORS = frozenset({"AttributeError", "Exception", "BaseException"})


class PrivateNames(Rule):
    """FlashInfer's private names that a project reads and the target release no longer has
    (review only).

    Serving projects reach into FlashInfer where it offers no public way: a private helper
    (`gemm_base._get_cache_buf(...)`, to share `mm_mxfp8`'s workspace), a private module's
    function they wrap (`_fi_core._get_trtllm_gen_multi_ctas_kv_counter_buffer`, which
    SGLang 0.5.20-0.5.23 replace to size a persistent semaphore buffer). No release promises
    them, and the release data records them by name only, so the positional-binding check
    (FI002) never sees them. When a module no longer binds such a name (FlashInfer 0.7.4's
    `flashinfer.mla._core` no longer imports the counter-buffer helper, nor `gemm.gemm_base`
    `_get_cache_buf`), reading it raises AttributeError, and importing it ImportError, where
    the project's code runs (at start-up, or first on the path that needs it).

    Reported once per name and file, where it is first read (an import, or an attribute of
    FlashInfer's module read or called), with the other lines that read it; said to be handled
    where a `try` around it catches the error (what its handler does runs instead). The
    modules of the target release that still bind a name of that spelling are named (up to
    three): whether one of them is the same helper is a person's to check; so is a public
    function of the module that takes what the helper gives from its caller, a parameter named
    as the helper's name ends (0.7.4's `trtllm_batch_decode_sparse_mla_dsv4(...,
    multi_ctas_kv_counter_buffer=)` for SGLang's patched counter-buffer helper). Left alone: a read
    under `if hasattr(module, "name"):` (the project tests for it) and an import under `if
    TYPE_CHECKING:` (it never runs), names FlashInfer's modules still bind, public names
    (FI002's), and assignments (a patch: FI013's).
    """

    code = "FI014"
    summary = "FlashInfer's private names that the target release no longer has (review)"
    summary_zh = "目标版本中已不存在的 FlashInfer 私有名称（需审阅）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_availability = FixAvailability.NONE  # (where a private helper went is a person's)
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    needs_api_data = True
    reaches_by_import = True
    # (a project module that re-exports a private name: its import is the one reported)
    via_reexports = False

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import private_gone_in_range

        return paths_words(
            sorted(private_gone_in_range(str(options.from_version), str(options.to_version)))
        )

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # (one of the range's names, whole, not in FlashInfer's own modules)
        from migrate_fi.api.index import private_gone_in_range

        _, names = last_names(
            private_gone_in_range(str(options.from_version), str(options.to_version))
        )
        if not any(m.group() in names for m in _PRIVATE.finditer(data)):
            return False
        return f"flashinfer{os.sep}" not in path or not in_flashinfer(module_identity(path)[0])

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        if in_flashinfer(ctx.module_name):
            return  # (FlashInfer's own modules: they are the release)
        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        _check(ctx, api_for(old_v), api_for(new_v), old_v, new_v)


def _check(ctx: FileContext, old_api: Api, new_api: Api, old_v: str, new_v: str) -> None:
    from migrate_fi.api.index import private_gone_in_range

    listed = private_gone_in_range(old_v, new_v)
    names = last_names(listed)[0]
    resolver = ctx.resolver

    def gone(path: str) -> bool:  # (in the range's list, and gone between its two ends)
        return path in listed and old_api.exists(path) is True and new_api.exists(path) is False

    reads: dict[str, list[ast.AST]] = {}  # path -> where it is read
    for node in resolver.imports:
        if isinstance(node, ast.ImportFrom):
            module = resolver.absolute_module(node.module, node.level)
            if module is None or not is_flashinfer(module):
                continue
            for alias in node.names:
                path = f"{module}.{alias.name}"
                if alias.name in names and gone(path):
                    reads.setdefault(path, []).append(node)
    for attribute in nodes.of_type(resolver.tree, ast.Attribute):
        if attribute.attr not in names or not isinstance(attribute.ctx, ast.Load):
            continue
        found = resolver.resolve(attribute, resolver.scope_at(attribute)).qualnames
        for path in sorted(p for p in found if gone(p)):
            reads.setdefault(path, []).append(attribute)
    if not reads:
        return
    parents = nodes.parents(resolver.tree)
    for path, where in reads.items():
        name = path.rpartition(".")[2]
        kept = sorted(
            (n for n in where if not _tested(n, name, parents)),
            key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)),
        )  # (in source order: the tree's walk is not)
        if not kept:
            continue
        first = kept[0]
        errors = IMPORT_ERRORS if isinstance(first, ast.ImportFrom) else _ATTRIBUTE_ERRORS
        handler = handled_at(statement_of(first, parents), parents, errors)
        ctx.report(first, _message(path, first, kept, handler, new_api, old_v, new_v, ctx.text))


def _message(
    path: str,
    first: ast.AST,
    kept: list[ast.AST],
    handler: int | None,
    new_api: Api,
    old_v: str,
    new_v: str,
    text: str,
) -> Said:
    from migrate_fi.api.index import listed_in

    module, _, name = path.rpartition(".")
    error = "ImportError" if isinstance(first, ast.ImportFrom) else "AttributeError"
    fails = (
        say(
            "{error} there, caught at line {handler}: what that handler does runs instead",
            "在那里抛出 {error}，被第 {handler} 行捕获：转而运行该处理代码",
            error=error,
            handler=handler,
        )
        if handler is not None
        else say("{error} there", "在那里抛出 {error}", error=error)
    )
    went = next(iter(listed_in("private", path, old_v, new_v)), new_v)
    since = say(" (since {went})", "（自 {went} 起）", went=went) if went != new_v else Said("", "")
    lines = sorted({getattr(n, "lineno", 0) for n in kept[1:]} - {getattr(first, "lineno", 0)})
    also = (
        say(
            "; also read at line{s} {where}",
            "；第 {where} 行{s}也读取它",
            s=Said("s" if len(lines) > 1 else "", ""),  # (English plural)
            where=", ".join(map(str, lines)),
        )
        if lines
        else Said("", "")
    )
    return say(
        "{path} no longer exists in FlashInfer {new_v}{since}, a private name that any release"
        " may change: {reading} raises {fails}{elsewhere}{also}",
        "`{path}` 在 FlashInfer {new_v} 中已不存在{since}，这是任何版本都可能改动的私有名称："
        "{reading}{fails}{elsewhere}{also}",
        path=path,
        new_v=new_v,
        since=since,
        reading=(
            say("importing it", "导入它会")
            if isinstance(first, ast.ImportFrom)
            else say("reading it", "读取它会")
        ),
        fails=fails,
        elsewhere=_elsewhere(new_api, module, name, new_v)
        + _wider_name(new_api, module, name)
        + _public_way(new_api, module, name, text),
        also=also,
    )


# what a private helper's name starts with before the words of what it makes or finds
_HELPER_VERBS = ("get_", "resolve_", "make_", "create_", "alloc_", "allocate_", "init_")
# a parameter name this short is too common to say a helper's name ends with it (`buffer`)
_SHORTEST_WAY = 12


def _public_way(new_api: Api, module: str, name: str, text: str) -> Said:
    """A public function of the module that takes what the private helper makes, as a
    parameter named as the helper's name ends (`_get_trtllm_gen_multi_ctas_kv_counter_buffer`
    and `trtllm_batch_decode_sparse_mla_dsv4(multi_ctas_kv_counter_buffer=)`): a value of the
    caller's own may replace the helper the project patches or calls. The function the file
    names first (``text``)."""
    words = name.lstrip("_")
    for verb in _HELPER_VERBS:
        words = words.removeprefix(verb)
    # (the module's own names, each asked for its signature: not the release's map of every
    # public path, which held 6 MB in the worker that asked)
    found: list[tuple[tuple[bool, str], str, str]] = []  # (rank, the function's path, parameter)
    for function in new_api.modules.get(module, {}).get("names", ()):
        if function.startswith("_"):
            continue
        signature = new_api.callable(f"{module}.{function}")
        takes = (
            [
                p.name
                for p in signature.params
                if len(p.name) >= _SHORTEST_WAY and words.endswith(p.name)
            ]
            if signature is not None
            else []
        )
        if takes:
            # (the function the file names first)
            found.append(
                (
                    (function not in text, function),
                    _public_path(new_api, module, function),
                    takes[0],
                )
            )
    if not found:
        return Said("", "")
    _, path, parameter = min(found)
    more = (
        say(" (and {n} more of its functions)", "（以及它的另外 {n} 个函数）", n=len(found) - 1)
        if len(found) > 1
        else Said("", "")
    )
    return say(
        "; {path}(){more} takes {parameter}= from the caller: a value of the project's own may"
        " replace what this private name gives",
        "；{path}(){more} 接受调用方传入的 {parameter}=：项目自己的值可以代替这个私有名称提供的东西",
        path=path,
        more=more,
        parameter=parameter,
    )


def _elsewhere(new_api: Api, module: str, name: str, new_v: str) -> Said:
    """Where the target release still binds a name of that spelling (up to three modules)."""
    # (each module's entry read once, its names not kept: made into sets for every module, as
    # `Api.names` keeps them, they held 15 MB more in the worker that asked)
    holders = sorted(
        m for m, entry in new_api.modules.items() if m != module and name in entry.get("names", ())
    )
    if not holders:
        return say(
            "; no module of FlashInfer {new_v} binds a name {name}",
            "；FlashInfer {new_v} 中没有任何模块绑定名称 `{name}`",
            new_v=new_v,
            name=name,
        )
    if len(holders) <= 3:
        return say(
            "; FlashInfer {new_v} binds a name {name} in {modules}: check whether it is the same",
            "；FlashInfer {new_v} 在 {modules} 中绑定了名称 `{name}`：请确认是否相同",
            new_v=new_v,
            name=name,
            modules=", ".join(holders),
        )
    return say(
        "; {count} modules of FlashInfer {new_v} bind a name {name}: check whether it moved to"
        " one of them",
        "；FlashInfer {new_v} 中有 {count} 个模块绑定了名称 `{name}`：请确认它是否移到了其中之一",
        count=len(holders),
        new_v=new_v,
        name=name,
    )


def _wider_name(new_api: Api, module: str, name: str) -> Said:
    """A private name the same module binds in the target whose words hold all of this one's,
    in order (`gemm_base._get_cache_buf` -> `_get_stream_cache_buf`: 0.7.4 gave the same
    workspace buffer a per-stream cache): a likely successor, said as one to compare. Up to
    two; none where the module is gone."""
    words = [w for w in name.split("_") if w]
    if not words:
        return Said("", "")
    entry = new_api.modules.get(module)
    found = []
    for other in sorted(entry.get("names", ()) if entry else ()):
        if other == name or not other.startswith("_"):
            continue
        rest = iter(w for w in other.split("_") if w)
        if len(other) > len(name) and all(w in rest for w in words):
            found.append(other)
    if not found or len(found) > 2:
        return Said("", "")
    return say(
        "; {module} now binds {names}, a name that holds all the words of this one: compare"
        " before switching",
        "；{module} 现在绑定了 {names}，其名称包含这个名称的全部词：切换前请比较两者",
        module=module,
        names=Said(" and ".join(found), "、".join(f"`{n}`" for n in found)),
    )


def _public_path(new_api: Api, module: str, function: str) -> str:
    """The function as a project imports it: from the nearest package above a private module
    that exports the same definition (`flashinfer.mla` for `flashinfer.mla._core`)."""
    own = f"{module}.{function}"
    key = new_api.key(own)
    parts = module.split(".")
    for end in range(len(parts) - 1, 0, -1):
        package = parts[: end + 1]
        if any(p.startswith("_") for p in package):
            continue
        path = ".".join([*package, function])
        if new_api.key(path) == key:
            return path
    return own


def _tested(node: ast.AST, name: str, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` runs only where the name is there or never runs: in the branch of an
    ``if`` (or a conditional expression) whose test asks `hasattr(..., "name")`, or under
    ``if TYPE_CHECKING:``."""
    child, parent = node, parents.get(id(node))
    while parent is not None:
        if (
            isinstance(parent, ast.If | ast.IfExp)
            and _in_branch(child, parent)
            and (_type_checking(parent.test) or _asks_hasattr(parent.test, name))
        ):
            return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return False
        child, parent = parent, parents.get(id(parent))
    return False


def _asks_hasattr(test: ast.expr, name: str) -> bool:
    return any(
        isinstance(call.func, ast.Name)
        and call.func.id == "hasattr"
        and len(call.args) == 2
        and isinstance(call.args[1], ast.Constant)
        and call.args[1].value == name
        for call in nodes.of_type(test, ast.Call)
    )


def _in_branch(child: ast.AST, test: ast.If | ast.IfExp) -> bool:
    """Whether ``child`` is (in) the branch that runs when the test is true."""
    if isinstance(test, ast.IfExp):
        return child is test.body
    return any(child is s for s in test.body)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
