"""FI013: replacements of a FlashInfer module's names (patches) whose meaning a release changes."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.api.paths import is_flashinfer
from migrate_fi.base import depends, patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import in_flashinfer, module_identity
from migrate_fi.base.results import FixAvailability
from migrate_fi.framework.rule import FileContext, Rule, RunOptions

from . import _callers
from ._api import last_names, paths_words

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api, CallSignature

__all__ = ["PatchedNames", "file_digest"]

# `x.name = ...`: an attribute assigned (the names a file assigns, read from its text first; the
# statement and its object are checked where the name is one of the range's)
_ASSIGNED_AT = r"\.[ \t]*(\w+)[ \t]*=(?!=)"
_ASSIGNED = patterns.compile(_ASSIGNED_AT)
_ASSIGNED_BYTES = patterns.compile(_ASSIGNED_AT.encode())  # (the same, in a file's bytes)
# what stands before it on its line: a dotted name that starts the statement
_OBJECT = patterns.compile(rb"[ \t]*\w+(?:\.\w+)*")
# calls that replace an attribute: ``setattr(obj, "name", new)``, pytest's
# ``monkeypatch.setattr(obj, "name", new)`` or ``monkeypatch.setattr("pkg.mod.name", new)``,
# ``mock.patch.object(obj, "name", new)``, ``mock.patch("pkg.mod.name", new)``
_SETTERS = frozenset({"setattr", "object", "patch"})
_OWN = frozenset({b"self", b"cls"})  # (the project's own objects)
# the last part of the first string a setter call is given (`setattr(m, "name", ...)`,
# `mock.patch("pkg.mod.name")`): the name it replaces
_SETTER_NAMES = patterns.compile(
    rb"""\b(?:setattr|patch|object)[ \t]*\([^()]*?["'](?:[\w.]*\.)?(\w+)["']"""
)

Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class _Patch(NamedTuple):
    node: ast.AST  # the statement or call, reported
    module: str  # the FlashInfer module whose name is replaced
    name: str
    value: ast.expr | None  # the replacement (None: a mock the patch makes)
    scope: Scope
    # pytest's `monkeypatch.setattr` and `mock.patch` raise AttributeError for a name the
    # object does not have (unless `raising=False`, `create=True`); an assignment never does
    checked: bool = False


class PatchedNames(Rule):
    """Replacements of a FlashInfer module's names (patches) that a release of the range makes
    mean something else (review only).

    Projects patch FlashInfer where it offers no hook: `fi_core.gen_module = ours` (SGLang's
    LoRA MoE path builds its own kernel module so), `mnnvl.is_mnnvl_fabric_supported =
    always_false` (a workaround that forces one transport), `monkeypatch.setattr(module,
    "name", fake)` or `mock.patch("flashinfer.module.name", ...)` in tests. An assignment never
    fails, so a release that changes what it reaches changes the program silently, or later,
    inside FlashInfer:

    - the module's functions no longer read the name (it is gone, or they call something
      else): the replacement changes nothing there. FlashInfer 0.7.4 chooses the MNNVL handle
      type without `is_mnnvl_fabric_supported`, so SGLang 0.5.11's workaround that forced POSIX
      file descriptors on GB systems does nothing on it. Where the name is gone, pytest's
      `monkeypatch.setattr` and `mock.patch` raise AttributeError instead (unless
      `raising=False` or `create=True`), and the finding says so. Said once per name and file.
    - the module still reads it, but the callable gained parameters: the module may pass them,
      and a replacement that does not take them by name (nor `**kwargs`) raises TypeError
      there. FlashInfer 0.6.16 builds its fused-MoE module with
      `gen_trtllm_gen_fused_moe_sm100_module(enable_rubin=...)`; SGLang's replacement takes no
      parameter. The replacement is read where it is defined: a lambda, a def of the file, or a
      function of another module of the project (whose bytes the result depends on).

    What each module's functions read is in the release data, and the pairs of releases where a
    replacement changes meaning are in the prefilter index: a file is parsed for this rule only
    where it imports FlashInfer, names such a path, and assigns an attribute of that name at a
    statement's start or names it in the string of a `setattr` or `patch` call. Left alone:
    putting the original back (a value that is FlashInfer's own, or what
    `getattr(module, "name")` kept), a replacement whose definition cannot be read (a mock
    takes anything), attributes of the project's own objects of the same name.
    """

    code = "FI013"
    summary = "Replacements of FlashInfer names (patches) that a release makes do nothing or fail (review)"
    summary_zh = "替换 FlashInfer 名称（打补丁）：某个版本使其不再生效或会失败（需审阅）"
    introduced_in = "*"
    data_driven: ClassVar[bool] = True
    fix_availability = FixAvailability.NONE  # (what the replacement should become is a person's)
    triggers = ("flashinfer",)
    triggers_contain = "flashinfer"  # (every trigger is a FlashInfer path)
    needs_api_data = True
    # (a patch by a path's string, `mock.patch("flashinfer.comm.mnnvl.name")`, is looked for
    # where the file imports FlashInfer too: a test imports what it tests, and the text of the
    # files that only name FlashInfer costs every run)
    reaches_by_import = True
    # (the project's module that re-exports a FlashInfer name is not the module patched)
    via_reexports = False

    @classmethod
    def triggers_for(cls, options: RunOptions) -> tuple[str | tuple[str, ...], ...]:
        from migrate_fi.api.index import patched_in_range

        return paths_words(
            sorted(patched_in_range(str(options.from_version), str(options.to_version)))
        )

    @classmethod
    def wants(cls, data: bytes, path: str, options: RunOptions) -> bool:
        # (a name of the range assigned as an attribute of something not `self` or `cls`, at a
        # statement's start, or named by a setter's string)
        from migrate_fi.api.index import patched_in_range

        _, names = last_names(patched_in_range(str(options.from_version), str(options.to_version)))
        for m in _ASSIGNED_BYTES.finditer(data):
            if m.group(1) in names:
                line = data.rfind(b"\n", 0, m.start()) + 1
                head = _OBJECT.fullmatch(data, line, m.start())
                if head is not None and head.group().split(b".")[0].strip() not in _OWN:
                    return True
        if b"setattr" not in data and b"patch" not in data:
            return False
        return any(m.group(1) in names for m in _SETTER_NAMES.finditer(data))

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        old_v, new_v = str(ctx.options.from_version), str(ctx.options.to_version)
        _check(ctx, api_for(old_v), api_for(new_v), old_v, new_v)


def _check(ctx: FileContext, old_api: Api, new_api: Api, old_v: str, new_v: str) -> None:
    """Report each replacement that means something else on the target release."""
    from migrate_fi.api.index import patched_in_range

    if in_flashinfer(ctx.module_name):
        return  # (FlashInfer's own modules: what they assign is the release itself)
    patched = patched_in_range(old_v, new_v)
    text = ctx.text
    assigned = {m.group(1) for m in _ASSIGNED.finditer(text)} & last_names(patched)[0]
    if not assigned and "setattr" not in text and "patch" not in text:
        return  # (nothing that may replace a name of the range: no resolver built for it)
    resolver = ctx.resolver
    said: set[tuple[str, str]] = set()
    for patch in _patches(resolver, assigned):
        path = f"{patch.module}.{patch.name}"
        if path not in patched or _restores(resolver, patch):
            continue
        before = old_api.reads(patch.module)
        after = new_api.reads(patch.module)
        if before is None or after is None or patch.name not in before:
            continue  # (the patch reached nothing before either; a module gone: its import)
        if patch.name not in after:
            if (patch.module, patch.name) not in said:
                said.add((patch.module, patch.name))
                ctx.report(patch.node, _no_effect(patch, old_api, new_api, old_v, new_v))
            continue
        message = _refused(ctx, patch, old_api, new_api, old_v, new_v)
        if message is not None:
            ctx.report(patch.node, message)


def _patches(resolver: NameResolver, assigned: set[str]) -> Iterator[_Patch]:
    """Every assignment to a FlashInfer module's attribute named in ``assigned``, and every
    setter call that replaces one, in source order."""
    found: list[_Patch] = []
    if assigned:
        for node in ast.walk(resolver.tree):
            if not isinstance(node, ast.Assign):
                continue
            targets = [
                t for t in node.targets if isinstance(t, ast.Attribute) and t.attr in assigned
            ]
            if not targets:
                continue
            scope = resolver.scope_at(node)
            seen: set[tuple[str, str]] = set()  # (`m.f = m.f = g`: one replacement)
            for target in targets:
                module = _module_of(resolver, target.value, scope)
                if module is not None and (module, target.attr) not in seen:
                    seen.add((module, target.attr))
                    found.append(_Patch(node, module, target.attr, node.value, scope))
    for call, scope in resolver.iter_calls():
        patch = _setter(resolver, call, scope)
        if patch is not None:
            found.append(patch)
    found.sort(key=lambda p: (p.node.lineno, p.node.col_offset))  # type: ignore[attr-defined]
    return iter(found)


def _setter(resolver: NameResolver, call: ast.Call, scope: Scope) -> _Patch | None:
    func = call.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else None
    )
    if name not in _SETTERS or not call.args:
        return None
    new = next((k.value for k in call.keywords if k.arg in ("new", "value")), None)
    checked = isinstance(func, ast.Attribute) and not any(
        (k.arg == "raising" and _constant(k.value) is False)
        or (k.arg == "create" and _constant(k.value) is True)
        for k in call.keywords
    )
    first = call.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):  # "pkg.mod.name"
        if name == "object":
            return None
        module, _, attribute = first.value.rpartition(".")
        if not is_flashinfer(module) or not attribute:
            return None
        value = call.args[1] if len(call.args) > 1 else new
        return _Patch(call, module, attribute, value, scope, checked)
    if name == "patch" or len(call.args) < 2:
        return None
    attribute_node = call.args[1]
    if not (isinstance(attribute_node, ast.Constant) and isinstance(attribute_node.value, str)):
        return None
    module_found = _module_of(resolver, first, scope)
    if module_found is None:
        return None
    value = call.args[2] if len(call.args) > 2 else new
    if value is None and name == "setattr":
        return None
    return _Patch(call, module_found, attribute_node.value, value, scope, checked)


def _constant(node: ast.expr) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _module_of(resolver: NameResolver, expr: ast.expr, scope: Scope) -> str | None:
    """The FlashInfer module ``expr`` certainly is (an import of it, `importlib`'s too)."""
    found = resolver.resolve(expr, scope)
    names = found.qualnames
    if len(names) != 1 or len(found.candidates) != 1:
        return None
    (module,) = names
    return module if is_flashinfer(module) else None


def _restores(resolver: NameResolver, patch: _Patch) -> bool:
    """Whether the value put in is FlashInfer's own (the original, kept before the patch)."""
    if patch.value is None:
        return False
    if isinstance(patch.value, ast.Constant) and patch.value.value is None:
        return True
    names = resolver.resolve(patch.value, patch.scope).qualnames
    if any(is_flashinfer(n) for n in names):
        return True
    # ``original = getattr(module, "name", None)``, put back later
    value = patch.value
    if isinstance(value, ast.Name):
        found = resolver.lookup(value.id, patch.scope)
        if found is not None:
            for binding in found[1]:
                v = binding.value
                if (
                    isinstance(v, ast.Call)
                    and isinstance(v.func, ast.Name)
                    and v.func.id == "getattr"
                    and len(v.args) >= 2
                    and isinstance(v.args[1], ast.Constant)
                    and v.args[1].value == patch.name
                ):
                    return True
    return False


def _no_effect(patch: _Patch, old_api: Api, new_api: Api, old_v: str, new_v: str) -> Said:
    path = f"{patch.module}.{patch.name}"
    since = _first(
        path, old_v, new_v, lambda api: patch.name not in (api.reads(patch.module) or ())
    )
    if patch.checked and patch.name not in new_api.names(patch.module):
        return say(
            "{module}.{name} is replaced here, but FlashInfer {new_v}'s {module} no longer has"
            " {name} (since {since}): the patch raises AttributeError for a name the module does"
            " not have; patch what {module} uses instead on {new_v}",
            "这里替换了 `{module}.{name}`，但 FlashInfer {new_v} 的 `{module}` 已不再有 `{name}`"
            "（自 {since} 起）：对模块没有的名称打补丁会抛出 `AttributeError`；请改为替换 {new_v}"
            " 中 `{module}` 实际使用的名称",
            module=patch.module,
            name=patch.name,
            new_v=new_v,
            since=since,
        )
    what = (
        say("no longer has {name}", "已不再有 `{name}`", name=patch.name)
        if patch.name not in new_api.names(patch.module)
        else say("no longer calls or reads {name}", "已不再调用或读取 `{name}`", name=patch.name)
    )
    return say(
        "{module}.{name} is replaced here, but FlashInfer {new_v}'s {module} {what} (since"
        " {since}): the replacement changes nothing there; read what {module} does instead on"
        " {new_v} before relying on it",
        "这里替换了 `{module}.{name}`，但 FlashInfer {new_v} 的 `{module}`{what}（自 {since}"
        " 起）：这个替换在那里不起任何作用；依赖它之前，请阅读 {new_v} 中 `{module}` 改为如何实现",
        module=patch.module,
        name=patch.name,
        new_v=new_v,
        since=since,
        what=what,
    )


def _refused(
    ctx: FileContext, patch: _Patch, old_api: Api, new_api: Api, old_v: str, new_v: str
) -> Said | None:
    """What FlashInfer now passes the replacement that it does not take (None: it takes it
    all, or what it takes cannot be read)."""
    from migrate_fi.api.differ import parameters_changed

    path = f"{patch.module}.{patch.name}"
    if patch.value is None or not parameters_changed(old_api, new_api, path):
        return None
    before, after = old_api.callable(path), new_api.callable(path)
    assert before is not None and after is not None  # (parameters_changed says both are)
    found = _replacement(ctx, patch)
    if found is None:
        return None
    shown, definition = found
    refused = _not_taken(definition, before, after)
    if not refused:
        return None
    since = _first(
        path,
        old_v,
        new_v,
        lambda api: (c := api.callable(path)) is not None and refused[0] in _names(c),
    )
    facts: dict[str, object] = {
        "module": patch.module,
        "name": patch.name,
        "shown": shown,
        "new_v": new_v,
        "listed": ", ".join(refused),
        "since": since,
        "s": Said("s" if len(refused) > 1 else "", ""),
    }
    positional = {p.name for p in after.params if p.kind == "A"}
    if definition.args.vararg is not None and set(refused) <= positional:
        # (`lambda *args: ()`: what FlashInfer passes by position reaches it; by name, not)
        return say(
            "{module}.{name} is replaced here by {shown}; {module} of FlashInfer {new_v} may pass"
            " it {listed} (a parameter since {since}), which {shown} takes only by position"
            " (*args): a TypeError where FlashInfer passes it by name; check how {new_v} calls"
            " it, or give {shown} **kwargs",
            "这里用 `{shown}` 替换了 `{module}.{name}`；FlashInfer {new_v} 的 `{module}` 可能传入"
            " {listed}（自 {since} 起的参数），而 `{shown}` 只能按位置接收（`*args`）：若"
            " FlashInfer 按名称传入会抛出 `TypeError`；请核对 {new_v} 如何调用它，或给 `{shown}`"
            " 加上 `**kwargs`",
            **facts,
        )
    return say(
        "{module}.{name} is replaced here by {shown}; {module} of FlashInfer {new_v} may pass"
        " it {listed} (a parameter since {since}), which {shown} does not take: a TypeError"
        " where it does; give {shown} the parameter{s} (or **kwargs)",
        "这里用 `{shown}` 替换了 `{module}.{name}`；FlashInfer {new_v} 的 `{module}` 可能传入"
        " {listed}（自 {since} 起的参数{s}），而 `{shown}` 不接受：传入时会抛出 `TypeError`；请给"
        " `{shown}` 加上这些参数（或 `**kwargs`）",
        **facts,
    )


def _names(signature: CallSignature) -> set[str]:
    return {p.name for p in signature.params}


def _not_taken(definition: Def, before: CallSignature, after: CallSignature) -> list[str]:
    """The parameters the new release has and the old did not, which ``definition`` cannot
    take by name (FlashInfer's own calls may pass them so)."""
    args = definition.args
    named = {a.arg for a in (*args.args, *args.kwonlyargs)}
    old = _names(before)
    return [
        p.name
        for p in after.params
        if p.kind in ("A", "K") and p.name not in old and p.name not in named and args.kwarg is None
    ]


def _first(path: str, old_v: str, new_v: str, holds: Callable[[Api], bool]) -> str:
    """The first release of the range whose API ``holds`` says yes of, among those where the
    prefilter index says a patch of ``path`` changes meaning (only those are loaded: a run
    need not read every release in between); ``new_v`` when none does."""
    from migrate_fi.api.differ import api_for
    from migrate_fi.api.index import listed_in

    for version in listed_in("patches", path, old_v, new_v):
        if holds(api_for(version)):
            return version
    return new_v


def _replacement(ctx: FileContext, patch: _Patch) -> tuple[str, Def] | None:
    """The replacement's name as written and its definition: a lambda, a def of this file,
    or a function of another module of the project."""
    value = patch.value
    if isinstance(value, ast.Lambda):
        return "the lambda", value
    if not isinstance(value, (ast.Name, ast.Attribute)):
        return None
    shown = ast.unparse(value)
    resolver = ctx.resolver
    candidates = resolver.resolve(value, patch.scope).candidates
    if len(candidates) != 1:
        return None
    (candidate,) = candidates
    if candidate.what == "def":
        name = shown.rpartition(".")[2]
        for node in ast.walk(resolver.tree):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == name
                and node.lineno == candidate.line
            ):
                return shown, node
        return None
    if candidate.qualname is None or is_flashinfer(candidate.qualname):
        return None
    found = _project_function(ctx.path, candidate.qualname)
    return (shown, found) if found is not None else None


def _project_function(path: str, qualname: str) -> Def | None:
    """The top-level def ``qualname`` names in another module of the project whose file lies
    where the module of ``path`` says the project's modules lie (its bytes noted)."""
    module, is_package = module_identity(path)
    if module is None:
        return None
    base = os.path.dirname(os.path.abspath(path))
    for _ in range(module.count(".") + (1 if is_package else 0)):
        base = os.path.dirname(base)
    target_module, _, name = qualname.rpartition(".")
    if not target_module:
        return None
    folder = os.path.join(base, *target_module.split("."))
    # (a package of the name wins over a module file, as Python's import finds them)
    for candidate in (os.path.join(folder, "__init__.py"), folder + ".py"):
        depends.note("file-digest", candidate, file_digest(candidate))
        if not os.path.isfile(candidate):
            continue
        parsed = _callers.resolver_for(candidate)
        if parsed is None:
            return None
        for stmt in parsed[0].tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                return stmt
        return None
    return None


def file_digest(path: str) -> str:
    """A digest of a file's bytes ("absent" when it cannot be read): what a result that read
    the file depends on."""
    try:
        data = depends.read_bytes(path)
    except OSError:
        return "absent"
    return depends.blake2b(data, digest_size=16).hexdigest()
