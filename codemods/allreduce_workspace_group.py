"""FI004: pass the process group to all-reduce workspace creation (FlashInfer 0.6.10.post1)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, NamedTuple

from migrate_fi.analysis import nodes
from migrate_fi.analysis.calls import CallArgs, CalleeCall, Via, callee_calls
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Binding, Scope
from migrate_fi.analysis.values import read_dict
from migrate_fi.base import patterns
from migrate_fi.base.messages import Said, say
from migrate_fi.base.modules import display_path
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import add_dict_entry, add_keyword
from migrate_fi.framework.rule import FileContext, Rule, RuleOption

from . import _callers
from ._api import api_calls
from ._layout import overflows
from ._values import (
    is_none,
    is_world_group,
    literal_string,
    narrowed_not_none,
    parameter_default,
)

if TYPE_CHECKING:
    from migrate_fi.api.differ import CallSignature
    from migrate_fi.editing.edits import Edit

# The public paths of the functions that create an all-reduce fusion workspace.
TARGETS = (
    "flashinfer.comm.create_allreduce_fusion_workspace",
    "flashinfer.comm.trtllm_create_ipc_workspace_for_all_reduce_fusion",
)
DEFAULT_GROUP_NAMES = (
    "device_group",
    "group",
    "process_group",
    "pg",
    "tp_group",
    "ep_group",
    "cp_group",
    "dp_group",
)
# keywords through which a communicator object is given its group
_COMMUNICATOR_KEYWORDS = ("group", "device_group", "process_group", "pg")
_CPU_HINTS = ("cpu", "gloo")
# SGLang's and vLLM's `get_tp_group()` and friends return a GroupCoordinator, whose process
# group for CUDA tensors is its `.device_group`
_COORDINATOR_GETTER = patterns.compile(r"^(sglang|vllm)\..*\.get_\w*group$")


def _is_cpu(text: str) -> bool:
    lowered = text.lower()
    return any(hint in lowered for hint in _CPU_HINTS)


class _Candidate(NamedTuple):
    expr: str  # what to pass: `device_group`, `self.tp_group`
    why: Said  # where it comes from, for the message
    world: bool = False  # it is torch.distributed.group.WORLD: passing it changes nothing


class AllreduceWorkspaceGroup(Rule):
    """All-reduce fusion workspaces must be given the process group of the ranks that share them.

    Since FlashInfer 0.6.10.post1, `flashinfer.comm.create_allreduce_fusion_workspace(...,
    group=None)` rendezvouses (torch.distributed symmetric memory) on `group`, and on WORLD when
    it is not given; `comm_backend` no longer picks the group. A server whose tensor-, expert- or
    context-parallel ranks form a sub-group then hangs in CUDA-graph warm-up or addresses the
    wrong peers. Small tests on one group of all ranks pass, so nothing fails until production.
    The older `trtllm_create_ipc_workspace_for_all_reduce_fusion(..., group=None)` has the same
    trap.

    The fix passes the group the surrounding code already has, chosen in this order:
    1. the group the call already gives its communicator (`comm_backend=TorchDistBackend(
       group=X)`, `device_group=X`, directly or through a local set to such a call);
    2. a parameter or local of the enclosing function named in the option `group-names`
       (by default `device_group`, `group`, `process_group`, `pg`, `tp_group`, `ep_group`,
       `cp_group`, `dp_group`), in that order;
    3. an attribute of `self` with such a name, assigned in the class.
    A name that holds a group coordinator (SGLang's and vLLM's `GroupCoordinator`: the code reads
    its `.device_group`, annotates it as a coordinator, or assigns it what their
    `get_*_group()` returns) gives its `.device_group` (`group=tp_group.device_group`), the
    process group for CUDA tensors; a name nothing says more about is passed as it is.
    A CPU group (`cpu_group`, a name or value mentioning `cpu` or `gloo`) is never chosen for a
    CUDA workspace. One candidate at the first step that has any: a safe fix. Several: a review
    fix that takes the first and names the others. None: no fix (a made-up name would be a
    NameError); the call is reported with what to pass.

    Where the call's keywords come from a dict built in the same function (`kw = dict(...)`,
    `kw = {...}`, then `create(**kw)`), `group=` goes into that dict, next to the other arguments.
    A call that already passes the group (by keyword, positionally, or in the dict, even
    conditionally after a signature check) is left alone, except when the group is `None`:
    `group=None`, or a variable set to `None` on some path (`device_group = None` when the
    sub-group is the whole TP group), re-creates the WORLD fallback, and each such line is
    reported. Keywords the new release no longer takes are FI002's to report.

    A call whose `world_size=` and `rank=` are WORLD's (`torch.distributed.get_world_size()` and
    `get_rank()` with no group, as a benchmark over every rank has them) means WORLD: nothing is
    said when no group is in scope.

    A `functools.partial` of the factory is where it is named, so `group=` goes into the
    partial (its keywords reach every call of it), unless every call of the partial in sight
    passes the group already.
    """

    code = "FI004"
    summary = "create_allreduce_fusion_workspace: pass group= (the WORLD fallback hangs sub-groups since 0.6.10.post1)"
    summary_zh = "create_allreduce_fusion_workspace：传入 group=（自 0.6.10.post1 起缺省回退到 WORLD，会使子组挂起）"
    introduced_in = "0.6.10.post1"
    fix_safety = FixSafety.SAFE
    triggers = tuple(("flashinfer", path.rsplit(".", 1)[-1]) for path in TARGETS)
    concerns = frozenset(TARGETS)
    links = (
        "FlashInfer's fix of the SGLang hang, which added `group=` (the rendezvous otherwise"
        " waits on every rank of WORLD): https://github.com/flashinfer-ai/flashinfer/pull/3247",
        "vLLM's fix, passing its TP group (TP>1 with DP>1 hung at start-up):"
        " https://github.com/vllm-project/vllm/pull/45917",
    )
    options = (
        RuleOption(
            "group-names",
            DEFAULT_GROUP_NAMES,
            "Names of parameters, locals and `self` attributes that hold a device process group,"
            " in order of preference.",
        ),
    )

    needs_api_data = True
    reaches_by_import = True
    searches_project = True  # (what callers pass: `_callers.arguments`)

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        old_api, new_api = (
            api_for(str(ctx.options.from_version)),
            api_for(str(ctx.options.to_version)),
        )
        keys = {k for p in TARGETS for k in (old_api.key(p), new_api.key(p)) if k is not None}
        resolver = ctx.resolver
        names = [n for n in ctx.option("group-names") if not _is_cpu(n)]
        # A `functools.partial` of it is where it is named, and where group= goes, unless every
        # call of the partial in sight passes it.
        views = list(callee_calls(resolver))
        calls_of: dict[int, list[CalleeCall]] = {}
        for view in views:
            if view.via is Via.PARTIAL_CALL:
                calls_of.setdefault(id(view.partial), []).append(view)
        seen: set[int] = set()
        for found in api_calls(ctx, (old_api, new_api), keys):
            view = found.view
            if view.via is Via.PARTIAL_CALL or id(view) in seen:
                continue  # (a call that may be either target is judged once)
            seen.add(id(view))
            call, path, others = view.node, found.path, found.others
            name = path.rsplit(".", 1)[-1]
            if others:
                ctx.report(
                    call,
                    say(
                        "this {name} may also be {others}; if it is FlashInfer's, pass group= (the"
                        " WORLD fallback since {since}): left unchanged",
                        "这个 `{name}` 也可能是 {others}；如果它是 FlashInfer 的，请传入 `group=`"
                        "（自 {since} 起缺省时回退到 WORLD）：未修改",
                        name=name,
                        others=", ".join(c.describe() for c in others),
                        since=self.introduced_in,
                    ),
                )
                continue
            signature = new_api.callable(path)
            signatures = [sig for sig in (old_api.callable(path), signature) if sig is not None]
            group_index = (
                next((i for i, p in enumerate(signature.positional) if p.name == "group"), None)
                if signature
                else None
            )
            later = calls_of.get(id(call), [])
            if later and all(_group_passed(v.args, group_index) is not None for v in later):
                continue
            _Site(ctx, resolver, view, name, group_index, names, signatures).check()


def _group_passed(args: CallArgs, index: int | None) -> ast.expr | None:
    """The group a call passes, by keyword or at ``index``."""
    passed = args.passed("group")
    if passed is None and index is not None and len(args.positional) > index:
        passed = args.positional[index]
    return passed


class _Site:
    def __init__(
        self,
        ctx: FileContext,
        resolver: NameResolver,
        view: CalleeCall,
        name: str,
        group_index: int | None,
        names: list[str],
        signatures: list[CallSignature],
    ) -> None:
        self.ctx, self.resolver, self.call, self.scope = ctx, resolver, view.node, view.scope
        self.name, self.group_index, self.names = name, group_index, names
        self.signatures = signatures
        self.args = view.args
        self.since = AllreduceWorkspaceGroup.introduced_in

    def check(self) -> None:
        invalid = self._invalid_keywords()
        if invalid:
            self.ctx.report(
                self.call,
                say(
                    "{name} is passed {words}, which it takes in neither FlashInfer {old_v} nor"
                    " {new_v}: this call raises TypeError already; fix its keywords (the process"
                    " group goes in group=)",
                    "`{name}` 收到了 {words}，而 FlashInfer {old_v} 和 {new_v} 都不接受它：这个"
                    "调用本来就会抛出 `TypeError`；请修正它的关键字参数（进程组应传给 `group=`）",
                    name=self.name,
                    words=", ".join(f"`{k}=`" for k in invalid),
                    old_v=self.ctx.options.from_version,
                    new_v=self.ctx.options.to_version,
                ),
            )
            return
        backend = self._keyword("backend")
        if backend is not None and literal_string(self.resolver, backend, self.scope) == "mnnvl":
            return  # the MNNVL workspace never reads group=
        passed = _group_passed(self.args, self.group_index)
        if passed is not None:
            self._none_paths(passed, passed)
            return
        if self.args.opaque_kwargs or self.args.starred:
            self.ctx.report(
                self.call,
                say(
                    "{name}: whether the arguments unpacked here include group= cannot be known;"
                    " since {since} a workspace without it rendezvouses on WORLD: check that it"
                    " is passed",
                    "`{name}`：无法知道这里解包的参数是否包含 `group=`；自 {since} 起没有它的"
                    " workspace 会在 WORLD 上会合：请确认传入了它",
                    name=self.name,
                    since=self.since,
                ),
            )
            return
        chosen, safety, note = self._choose()
        if chosen is not None and chosen.world:
            return  # the group in sight is WORLD: group= would change nothing
        if chosen is None and self._world_sized():
            return  # its ranks are WORLD's (a benchmark over all ranks): WORLD is meant
        problem = say(
            "{name} without group=: since {since} its workspace rendezvouses on WORLD, so a"
            " TP/EP/CP sub-group hangs in CUDA-graph warm-up or addresses the wrong peers",
            "`{name}` 没有传 `group=`：自 {since} 起它的 workspace 在 WORLD 上会合，所以"
            " TP/EP/CP 子组会在 CUDA 图预热时挂起，或与错误的对端通信",
            name=self.name,
            since=self.since,
        )
        if chosen is None:
            self.ctx.report(
                self.call,
                say(
                    "{problem}; no process group is in scope here (looked for the communicator's"
                    " group, and parameters, locals and self attributes named {looked}): pass"
                    " group=<the device process group of the ranks that share this workspace>",
                    "{problem}；这里的作用域中没有进程组（查找了通信器的组，以及名为 `{looked}`"
                    " 的参数、局部变量和 `self` 属性）：请传入 `group=<共享此 workspace 的各 rank"
                    " 的设备进程组>`",
                    problem=problem,
                    looked=", ".join(self.names),
                ),
            )
            return
        self.ctx.fix(
            self.call,
            say(
                "{problem}: pass group={expr} ({why}{note})",
                "{problem}：传入 `group={expr}`（{why}{note}）",
                problem=problem,
                expr=chosen.expr,
                why=chosen.why,
                note=note,
            ),
            self._edit(chosen.expr),
            safety=safety,
        )
        value = ast.parse(chosen.expr, mode="eval").body
        self._none_paths(value, self.call)

    # ----------------------------------------------------------- choosing

    def _choose(self) -> tuple[_Candidate | None, FixSafety, Said]:
        for level in (self._from_communicator(), self._from_function(), self._from_self()):
            if not level:
                continue
            first, rest = level[0], level[1:]
            if not rest:
                return first, FixSafety.SAFE, say("", "")
            return (
                first,
                FixSafety.REVIEW,
                say(
                    "; also in scope: {others}: check which is the device group of the ranks that"
                    " share this workspace",
                    "；作用域中还有：{others}：请确认哪个是共享此 workspace 的各 rank 的设备组",
                    others=", ".join(c.expr for c in rest),
                ),
            )
        return None, FixSafety.SAFE, say("", "")

    def _from_communicator(self) -> list[_Candidate]:
        """The group the call already gives its communicator (`comm_backend=...`)."""
        values = [v for k, v in [*self._keyword_values()] if k in ("comm_backend", "communicator")]
        found: dict[str, _Candidate] = {}
        for value in values:
            for expr in self._constructions(value):
                for kw in expr.keywords:
                    if kw.arg in _COMMUNICATOR_KEYWORDS:
                        text = ast.unparse(kw.value)
                        if not _is_cpu(text) and not is_none(kw.value):
                            world = is_world_group(self.resolver, kw.value, self.scope)
                            found.setdefault(
                                text,
                                _Candidate(
                                    text,
                                    say(
                                        "the group its comm_backend is built with",
                                        "构建它的 `comm_backend` 所用的组",
                                    ),
                                    world,
                                ),
                            )
        return list(found.values())

    def _world_sized(self) -> bool:
        """Whether the call's ``world_size=`` (and ``rank=``, where passed) are WORLD's:
        ``torch.distributed.get_world_size()`` / ``get_rank()`` with no group, in the call or
        in a local bound once to it. Then the ranks that share the workspace are WORLD's, and
        the WORLD fallback is what the call means."""
        size, rank = self._keyword("world_size"), self._keyword("rank")
        return (
            size is not None
            and self._world_query(size, "get_world_size")
            and (rank is None or self._world_query(rank, "get_rank"))
        )

    def _world_query(self, value: ast.expr, function: str, depth: int = 0) -> bool:
        if isinstance(value, ast.Name) and depth < 3:
            found = self.resolver.lookup(value.id, self.scope)
            if found is None or len(found[1]) != 1 or found[1][0].value is None:
                return False
            binding = found[1][0]
            scope = binding.scope or self.scope
            assert binding.value is not None
            return _world_call(self.resolver, binding.value, scope, function)
        return _world_call(self.resolver, value, self.scope, function)

    def _keyword(self, name: str) -> ast.expr | None:
        return next((v for k, v in self._keyword_values() if k == name), None)

    def _invalid_keywords(self) -> list[str]:
        """Keywords the call passes that neither release's signature takes."""
        if not self.signatures:
            return []
        return [
            k
            for k, _ in self._keyword_values()
            if not any(sig.may_accept_keyword(k) for sig in self.signatures)
        ]

    def _keyword_values(self) -> list[tuple[str, ast.expr]]:
        return [(k, kw.value) for k, kw in self.args.keywords.items()] + list(
            self.args.unpacked.items()
        )

    def _constructions(self, value: ast.expr, depth: int = 0) -> list[ast.Call]:
        """The calls that may have built ``value`` (through locals assigned such calls)."""
        if isinstance(value, ast.Call):
            return [value]
        if isinstance(value, ast.Name) and depth < 3:
            found = self.resolver.lookup(value.id, self.scope)
            if found is None:
                return []
            out: list[ast.Call] = []
            for b in found[1]:
                if b.value is not None:
                    out += self._constructions(b.value, depth + 1)
            return out
        return []

    def _from_function(self) -> list[_Candidate]:
        """Parameters and locals of the enclosing function(s) with a group's name."""
        out = []
        for name in self.names:
            found = self.resolver.lookup(name, self.scope)
            if found is None or found[0].kind not in ("function",):
                continue
            owner, bindings = found
            function = getattr(owner.node, "name", "the function")
            if any(b.what == "parameter" for b in bindings):
                where = say("a parameter of `{f}`", "`{f}` 的参数", f=function)
            elif bindings and all(
                b.line < self.call.lineno
                and b.value is not None
                and not (_is_cpu(ast.unparse(b.value)) and not is_none(b.value))
                for b in bindings
                if b.what != "None"
            ):
                where = say("a local of `{f}`", "`{f}` 的局部变量", f=function)
            else:
                continue
            if self._is_coordinator(name, bindings, owner.node):
                out.append(
                    _Candidate(
                        f"{name}.device_group",
                        say("{where}, a group coordinator", "{where}，一个组协调器", where=where),
                    )
                )
                continue
            world = is_world_group(self.resolver, ast.Name(id=name, ctx=ast.Load()), self.scope)
            out.append(_Candidate(name, where, world))
        return out

    def _is_coordinator(self, expr: str, bindings: list[Binding], where: ast.AST) -> bool:
        """``expr`` holds a group coordinator (SGLang's and vLLM's GroupCoordinator), not a
        process group: the code reads its `.device_group`, it is annotated as one, or it is
        assigned what their `get_*_group()` returns."""
        for node in ast.walk(where):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "device_group"
                and ast.unparse(node.value) == expr
            ):
                return True
            if (
                isinstance(node, ast.arg)
                and node.arg == expr
                and node.annotation is not None
                and "Coordinator" in ast.unparse(node.annotation)
            ):
                return True
        for b in bindings:
            if isinstance(b.value, ast.Call) and b.scope is not None:
                quals = self.resolver.resolve(b.value.func, b.scope).qualnames
                if any(_COORDINATOR_GETTER.match(q) for q in quals):
                    return True
        return False

    def _from_self(self) -> list[_Candidate]:
        """`self.<name>` assigned in the class of the enclosing method."""
        s: Scope | None = self.scope
        while s is not None and s.owner_class is None:
            s = s.parent if s.kind != "class" else None
        if s is None or s.owner_class is None or s.self_name is None:
            return []
        out = []
        for name in self.names:
            bindings = s.owner_class.attributes.get(name)
            if not bindings:
                continue
            values = [
                ast.unparse(b.value) for b in bindings if b.value is not None and b.what != "None"
            ]
            if values and all(_is_cpu(v) for v in values):
                continue
            expr = f"{s.self_name}.{name}"
            if self._is_coordinator(expr, bindings, s.owner_class.node):
                out.append(
                    _Candidate(
                        f"{expr}.device_group",
                        say(
                            "an attribute set in the class, a coordinator",
                            "在类中设置的属性，一个协调器",
                        ),
                    )
                )
                continue
            out.append(_Candidate(expr, say("an attribute set in the class", "在类中设置的属性")))
        return out

    # -------------------------------------------------------------- editing

    def _edit(self, expr: str) -> Edit:
        """Into the dict the call unpacks when it is built in the same function; else the call."""
        for unpacked in (kw.value for kw in self.call.keywords if kw.arg is None):
            if not isinstance(unpacked, ast.Name):
                continue
            found = self.resolver.lookup(unpacked.id, self.scope)
            source = read_dict(self.resolver, unpacked, self.scope)
            if found is None or source is None or source.built is None:
                continue
            if found[0] is _function_scope(self.scope):
                kind = "Dict" if isinstance(source.built, ast.Dict) else "Call"
                return self.ctx.replace(source.built, kind, add_dict_entry("group", expr))
        wrap = overflows(self.ctx.lines, self.call, f", group={expr}", self.ctx.path)
        return self.ctx.replace(self.call, "Call", add_keyword("group", expr, one_per_line=wrap))

    # ---------------------------------------------------------------- None

    def _none_paths(self, value: ast.expr, at: ast.AST) -> None:
        """`group=None`, or a group variable that is None on some path: the WORLD fallback."""
        if is_none(value):
            self.ctx.report(
                value,
                say(
                    "{name} gets group=None: {tail}",
                    "`{name}` 收到 `group=None`：{tail}",
                    name=self.name,
                    tail=self._tail(),
                ),
            )
            return
        for binding, described in self._none_bindings(value):
            if binding.what == "parameter":
                self._default_none(described, at)
            else:
                self.ctx.report(
                    at,
                    say(
                        "{name}: `{described}` is set to None at line {line}; {tail}",
                        "`{name}`：`{described}` 在第 {line} 行被设为 `None`；{tail}",
                        name=self.name,
                        described=described,
                        line=binding.line,
                        tail=self._tail(),
                    ),
                )

    def _tail(self) -> Said:
        return say(
            "since {since} a workspace given group=None rendezvouses on WORLD, so a TP/EP/CP"
            " sub-group hangs or addresses the wrong peers: pass the sub-group's device group on"
            " every path",
            "自 {since} 起收到 `group=None` 的 workspace 在 WORLD 上会合，所以 TP/EP/CP 子组"
            "会挂起或与错误的对端通信：请在每条路径上都传入子组的设备组",
            since=self.since,
        )

    def _default_none(self, param: str, at: ast.AST) -> None:
        """A parameter that defaults to None: what its callers in sight pass decides. Each one
        that passes None (or a variable set to None before the call) is reported where the None
        comes from; when every caller passes a group, nothing is."""
        function = _callers.function_of_parameter(self.resolver, self.ctx.path, param, self.scope)
        passes = None if function is None else _callers.arguments(function, param, methods=True)
        if not passes:
            self.ctx.report(
                at,
                say(
                    "{name}: the parameter `{param}` defaults to None, so a caller that omits it"
                    " gets the fallback (make it required, or check that every caller passes it);"
                    " {tail}",
                    "`{name}`：参数 `{param}` 默认为 `None`，省略它的调用者会得到回退行为（把它"
                    "改为必填，或确认每个调用者都传入了它）；{tail}",
                    name=self.name,
                    param=param,
                    tail=self._tail(),
                ),
            )
            return
        assert function is not None
        of = f"`{getattr(function.node, 'name', param)}`"
        for passed in passes:
            where = passed.where(self.ctx.path)
            facts = {"name": self.name, "of": of, "where": where, "param": param}
            if passed.value is None:
                self.ctx.report(
                    at,
                    say(
                        "{name}: the call of {of} at {where} leaves `{param}` at its default None;"
                        " {tail}",
                        "`{name}`：{where} 处对 {of} 的调用让 `{param}` 取默认值 `None`；{tail}",
                        tail=self._tail(),
                        **facts,
                    ),
                )
            elif is_none(passed.value):
                self.ctx.report(
                    at,
                    say(
                        "{name}: the call of {of} at {where} passes {param}=None; {tail}",
                        "`{name}`：{where} 处对 {of} 的调用传入 `{param}=None`；{tail}",
                        tail=self._tail(),
                        **facts,
                    ),
                )
            elif isinstance(passed.value, ast.Name):
                self._caller_none(passed, passed.value.id, of, where, at)

    def _caller_none(
        self, passed: _callers.Passed, name: str, of: str, where: Said, at: ast.AST
    ) -> None:
        """A caller passes a variable: each None it may be set to before the call is reported at
        its own line when it is in this file, else here, naming it."""
        found = passed.resolver.lookup(name, passed.scope)
        if found is None:
            return
        owner, bindings = found
        for b in bindings:
            if b.what != "None" or b.line > passed.line:
                continue
            call = _call_at(passed.resolver.tree, passed.line)
            if call is not None and narrowed_not_none(owner.node, name, call):
                continue
            text = say(
                "{name}: `{var}` is set to None here and passed to {of} at {where}; {tail}",
                "`{name}`：`{var}` 在这里被设为 `None`，并在 {where} 处传给 {of}；{tail}",
                name=self.name,
                var=name,
                of=of,
                where=where,
                tail=self._tail(),
            )
            statement = _assignment_at(passed.resolver.tree, b.line, name)
            if passed.resolver is self.resolver and statement is not None:
                self.ctx.report(statement, text)
            else:
                shown = display_path(passed.path)
                self.ctx.report(
                    at,
                    say(
                        "{name}: `{var}` is set to None at {shown}:{line} and passed to {of} at"
                        " {where}; {tail}",
                        "`{name}`：`{var}` 在 `{shown}:{line}` 被设为 `None`，并在 {where} 处传给"
                        " {of}；{tail}",
                        name=self.name,
                        var=name,
                        shown=shown,
                        line=b.line,
                        of=of,
                        where=where,
                        tail=self._tail(),
                    ),
                )

    def _none_bindings(self, value: ast.expr) -> list[tuple[Binding, str]]:
        if isinstance(value, ast.Name):
            found = self.resolver.lookup(value.id, self.scope)
            if found is None:
                return []
            owner, bindings = found
            if narrowed_not_none(_function_scope(self.scope).node, value.id, self.call):
                return []
            out = [(b, value.id) for b in bindings if b.what == "None"]
            node = owner.node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _defaults_to_none(
                node, value.id
            ):
                param = next(b for b in bindings if b.what == "parameter")
                out.append((param, value.id))
            return out
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name):
            s: Scope | None = self.scope
            while s is not None and s.owner_class is None:
                s = s.parent if s.kind != "class" else None
            if s is None or s.owner_class is None or value.value.id != s.self_name:
                return []
            return [
                (b, f"{value.value.id}.{value.attr}")
                for b in s.owner_class.attributes.get(value.attr, ())
                if b.what == "None"
            ]
        return []


def _call_at(tree: ast.AST, line: int) -> ast.Call | None:
    return next((n for n in nodes.of_type(tree, ast.Call) if n.lineno == line), None)


def _assignment_at(tree: ast.AST, line: int, name: str) -> ast.stmt | None:
    """The statement at ``line`` that assigns ``name``."""
    for node in nodes.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno == line:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
    return None


def _defaults_to_none(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    default = parameter_default(fn, name)
    return default is not None and is_none(default)


def _function_scope(scope: Scope) -> Scope:
    s = scope
    while s.kind == "comprehension" and s.parent is not None:
        s = s.parent
    return s


def _world_call(resolver: NameResolver, value: ast.expr, scope: Scope, function: str) -> bool:
    """``torch.distributed.<function>()`` with no group: WORLD's rank or size."""
    if not isinstance(value, ast.Call) or value.args or value.keywords:
        return False
    names = resolver.resolve(value.func, scope).qualnames
    return bool(names) and names <= {
        f"torch.distributed.{function}",
        f"torch.distributed.distributed_c10d.{function}",
    }
