"""FI005: turn CUDA-graph tests that relied on the wrapper's own buffers into capture/replay."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from migrate_fi.analysis import nodes
from migrate_fi.analysis.calls import CallArgs, Via
from migrate_fi.analysis.resolver import NameResolver
from migrate_fi.analysis.scopes import Scope
from migrate_fi.api.paths import is_flashinfer
from migrate_fi.base.messages import say
from migrate_fi.base.modules import is_test_file
from migrate_fi.base.results import FixSafety
from migrate_fi.editing.edits import AddImport, Edit, remove_keyword, replace_with
from migrate_fi.framework.rule import FileContext, Rule, RuleOption

from ._api import api_calls
from ._callers import parents_of as _parents
from ._layout import line_length

if TYPE_CHECKING:
    from migrate_fi.api.differ import Api

WRAPPER = "flashinfer.CuteDslMoEWrapper"
_SINCE = "0.6.14"  # the release that stopped preallocating (the rule's introduced_in)
_COMPARE = frozenset(
    {"torch.testing.assert_close", "torch.testing.assert_allclose", "torch.allclose", "torch.equal"}
)


@dataclass
class _Run:
    statement: ast.Assign  # `out = run(...)`
    call: ast.Call
    target: str


@dataclass
class _Test:
    """One test function and what it does with graph-mode wrappers."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    scope: Scope
    is_method: bool
    graph_wrappers: dict[str, ast.Call] = field(default_factory=dict)  # name -> construction
    runs: list[_Run] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class GraphCaptureTests(Rule):
    """Tests of `CuteDslMoEWrapper(use_cuda_graph=True)` that no longer exercise a CUDA graph.

    Up to FlashInfer 0.6.13, `CuteDslMoEWrapper(use_cuda_graph=True, max_num_tokens=N)`
    preallocated its buffers and `run()` returned a slice of one persistent output buffer
    (`_moe_output`). In 0.6.14 that is gone: `max_num_tokens` is accepted but ignored, `run()`
    allocates a fresh output on every call, graph mode only keeps an auxiliary stream. A test that
    compared a "graph" wrapper with a plain one by calling both eagerly still passes, but no CUDA
    graph is ever captured; a test that read the wrapper's buffers fails.

    In test code (files `test_*.py` / `*_test.py`, functions `test*`, methods `test*` of test
    classes), each graph-mode wrapper's eager runs (`out = wrapper.run(...)`, or through a helper
    of the module that calls `.run` on it) become the explicit pattern, keeping the test's names
    and inputs: warm-up runs (option `warmup-runs`, 3), `torch.cuda.synchronize()`, a
    `torch.cuda.CUDAGraph()` capturing one run inside `with torch.cuda.graph(g):`, then a
    `g.replay()` and a `.clone()` of the captured output for each run the test made. The first
    output's later uses (the comparison with the non-graph wrapper, the reference check) read the
    first replay (`out_graph` becomes `out_graph1`). A comparison of two graph runs becomes a
    bound on their largest absolute difference (option `replay-tolerance`, 0.5, as the SGLang
    upgrade did), since two replays need not be bit-identical. `max_num_tokens=` is dropped from
    the graph wrapper where the target release ignores it. `import torch` is added if missing.

    Left alone: runtime code (a serving layer that captures its own graphs), tests that
    already capture explicitly, and tests that check no output's values, only its identity or
    layout (a wrapper's lifetime, two wrappers' buffers that must not alias: `.data_ptr()`,
    `is`, `.shape`). Reported: reads of the wrapper's removed buffers (`_moe_output`,
    `_moe_sort_buffers`, `_gemm1_output`, `_gemm1_output_scale`; taken from the API data), and
    test shapes too unusual to rewrite (runs in different blocks, outputs assigned twice, runs
    that are not plain assignments), each by test name with what to change. A rewrite that had to
    guess (more than two graph runs, comments inside a run call) is a review fix.

    No other FlashInfer wrapper made this change in 0.5.0..0.7.4: of the classes whose
    constructor takes `use_cuda_graph`, only this one stopped holding its outputs between two
    releases (0.6.0 dropped `BatchPrefillWithPagedKVCacheWrapper`'s FA3 scratch index buffers,
    which no graph test reads; a test searches the release data for more).
    """

    code = "FI005"
    summary = "CuteDslMoEWrapper graph tests: capture and replay a CUDA graph explicitly (0.6.14 stopped preallocating)"
    summary_zh = (
        "CuteDslMoEWrapper 的 CUDA graph 测试：显式 capture 并 replay（0.6.14 起不再预分配缓冲区）"
    )
    introduced_in = _SINCE
    fix_safety = FixSafety.SAFE
    triggers = (("flashinfer", "CuteDslMoEWrapper"),)
    owns_parameters = frozenset({(WRAPPER, "max_num_tokens")})
    concerns = frozenset({WRAPPER})  # its default changed, ignored
    links = (
        "FlashInfer's change that stopped preallocating the wrapper's buffers (max_num_tokens"
        " deprecated): https://github.com/flashinfer-ai/flashinfer/pull/3404",
        "the issue it resolved, 475 MiB of buffers per MoE layer:"
        " https://github.com/flashinfer-ai/flashinfer/issues/3308",
    )
    options = (
        RuleOption("warmup-runs", 3, "Eager runs before the capture.", minimum=0),
        RuleOption(
            "replay-tolerance",
            0.5,
            "Largest absolute difference allowed between two replays of the captured graph.",
            minimum=0,
        ),
    )

    needs_api_data = True
    reaches_by_import = True

    def find(self, ctx: FileContext) -> None:
        from migrate_fi.api.differ import api_for

        old_api = api_for(str(ctx.options.from_version))
        new_api = api_for(str(ctx.options.to_version))
        key, signature = old_api.key(WRAPPER), old_api.callable(WRAPPER)
        if key is None:
            return
        removed = _removed_attributes(old_api, new_api, key)
        ignored = _ignores_max_num_tokens(new_api)
        resolver = ctx.resolver
        tree = resolver.tree
        wrappers = self._wrapper_names(ctx, old_api, key)
        self._report_internals(ctx, resolver, wrappers, removed)
        if not is_test_file(ctx.path):
            return
        helpers = _run_helpers(tree)
        # where the constructor takes use_cuda_graph positionally, on --from
        names = [p.name for p in signature.positional] if signature is not None else []
        flag_at = names.index("use_cuda_graph") if "use_cuda_graph" in names else None
        for test in _tests(tree, resolver):
            _Rewrite(ctx, resolver, test, wrappers, helpers, ignored, removed, flag_at).apply()

    def _wrapper_names(
        self, ctx: FileContext, old_api: Api, key: str
    ) -> dict[int, tuple[ast.Call, Scope]]:
        """Constructions of the wrapper: id(call) -> (call, scope)."""
        out = {}
        for found in api_calls(ctx, old_api, {key}):
            view = found.view
            if found.certain and view.via is Via.DIRECT:
                out[id(view.node)] = (view.node, view.scope)
        return out

    def _report_internals(
        self,
        ctx: FileContext,
        resolver: NameResolver,
        wrappers: dict[int, tuple[ast.Call, Scope]],
        removed: list[str],
    ) -> None:
        """Reads of buffers the wrapper no longer has, anywhere (tests and runtime code)."""
        if not any(name in ctx.text for name in removed):
            return  # (an attribute is spelled out where it is read)
        built = {id(call) for call, _ in wrappers.values()}
        for node in nodes.of_type(resolver.tree, ast.Attribute):
            if node.attr not in removed:
                continue
            owner = node.value
            scope = resolver.scope_at(node)
            quals = resolver.resolve(owner, scope).qualnames
            if (isinstance(owner, ast.Call) and id(owner) in built) or any(
                q.endswith("CuteDslMoEWrapper()") and is_flashinfer(q) for q in quals
            ):
                ctx.report(
                    node,
                    say(
                        "CuteDslMoEWrapper.{attr} no longer exists in FlashInfer {new_v}: since"
                        " {since} the wrapper preallocates nothing and run() returns a fresh"
                        " tensor; use run()'s return value (in a CUDA graph: capture run() and"
                        " read the captured output after replay)",
                        "`CuteDslMoEWrapper.{attr}` 在 FlashInfer {new_v} 中已不存在：自 {since}"
                        " 起该 wrapper 不再预分配任何缓冲区，`run()` 返回新的张量；请使用 `run()`"
                        " 的返回值（在 CUDA 图中：捕获 `run()`，重放后读取捕获的输出）",
                        attr=node.attr,
                        new_v=ctx.options.to_version,
                        since=_SINCE,
                    ),
                )


def _removed_attributes(old_api: Api, new_api: Api, key: str) -> list[str]:
    """Instance attributes of the wrapper on --from that --to no longer sets."""
    old = old_api.instance_attributes(key)
    new_key = new_api.key(WRAPPER)
    new = new_api.instance_attributes(new_key) if new_key is not None else None
    if old is None or new is None:
        return []  # (the class is not in one of the releases: FI002 reports what is gone)
    return sorted(old - new)


def _ignores_max_num_tokens(new_api: Api) -> bool:
    """0.6.14 and later take `max_num_tokens` but ignore it (its default is None)."""
    c = new_api.callable(WRAPPER)
    if c is None:
        return False
    param = next((p for p in c.params if p.name == "max_num_tokens"), None)
    return param is None or param.default == "None"


def _run_helpers(tree: ast.Module) -> dict[str, int]:
    """Module-level functions that call `.run(...)` on one of their parameters: name -> index."""
    out: dict[str, int] = {}
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in [*stmt.args.posonlyargs, *stmt.args.args]]
        for node in ast.walk(stmt):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "run"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in params
            ):
                out[stmt.name] = params.index(node.func.value.id)
                break
    return out


def _tests(tree: ast.Module, resolver: NameResolver) -> list[_Test]:
    """The test functions pytest or unittest would collect, with their scopes."""
    out = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith(
            "test"
        ):
            scope = resolver.scope_of(stmt)
            if scope is not None:
                out.append(_Test(stmt, scope, False))
        elif isinstance(stmt, ast.ClassDef) and (stmt.name.startswith("Test") or stmt.bases):
            for item in stmt.body:
                if isinstance(
                    item, (ast.FunctionDef, ast.AsyncFunctionDef)
                ) and item.name.startswith("test"):
                    scope = resolver.scope_of(item)
                    if scope is not None:
                        out.append(_Test(item, scope, True))
    return out


class _Rewrite:
    def __init__(
        self,
        ctx: FileContext,
        resolver: NameResolver,
        test: _Test,
        wrappers: dict[int, tuple[ast.Call, Scope]],
        helpers: dict[str, int],
        ignored: bool,
        removed: list[str],
        flag_at: int | None,
    ) -> None:
        self.ctx, self.resolver, self.test = ctx, resolver, test
        self.wrappers, self.helpers, self.ignored = wrappers, helpers, ignored
        self.removed = frozenset(removed)
        self.fn = test.node
        self.flag_at = flag_at  # use_cuda_graph's position in the constructor, on --from

    # ------------------------------------------------------------------ find

    def _graph_wrappers(self) -> dict[str, ast.Call]:
        out = {}
        for node in ast.walk(self.fn):
            if not (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and id(node.value) in self.wrappers
            ):
                continue
            call, scope = self.wrappers[id(node.value)]
            args = CallArgs.of(call, self.resolver, scope)
            flag = args.passed("use_cuda_graph")
            at = self.flag_at
            if flag is None and at is not None and len(args.positional) > at:
                flag = args.positional[at]
            if isinstance(flag, ast.Constant) and flag.value is True:
                out[node.targets[0].id] = call
        return out

    def _runs(self, graph: dict[str, ast.Call]) -> list[_Run]:
        out = []
        for node in ast.walk(self.fn):
            if not isinstance(node, ast.Call):
                continue
            target = self._run_target(node)
            if target is None or target not in graph:
                continue
            out.append(_Run(None, node, target))  # type: ignore[arg-type]
        return out

    def _run_target(self, call: ast.Call) -> str | None:
        """The wrapper name a call runs: `w.run(...)` or `helper(w, ...)`."""
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "run"
            and isinstance(func.value, ast.Name)
        ):
            return func.value.id
        if isinstance(func, ast.Name) and func.id in self.helpers:
            index = self.helpers[func.id]
            argument = call.args[index] if len(call.args) > index else None
            if isinstance(argument, ast.Name):
                return argument.id
        return None

    def _explicit_capture(self) -> bool:
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Call):
                quals = self.resolver.resolve(node.func, self.test.scope).qualnames
                if quals & {
                    "torch.cuda.graph",
                    "torch.cuda.CUDAGraph",
                    "torch.cuda.make_graphed_callables",
                }:
                    return True
        return False

    def _reads_removed(self, graph: dict[str, ast.Call]) -> bool:
        """The test reads state the release removed from a wrapper it builds (its buffers,
        `max_num_tokens`): on the target it fails at that read, whatever capture it does."""
        return any(
            isinstance(node, ast.Attribute)
            and node.attr in self.removed
            and isinstance(node.value, ast.Name)
            and node.value.id in graph
            for node in ast.walk(self.fn)
        )

    def _compares_outputs(self, runs: list[_Run]) -> bool:
        """Some comparison (`assert_close`, `allclose`, `equal`, an `assert`, a unittest
        `assert*`) reads what a graph-mode run returned: a parity test."""
        parents = _parents(self.fn)
        outputs = set()
        for r in runs:
            stmt = parents.get(id(r.call))
            if isinstance(stmt, ast.Assign):
                outputs |= {
                    n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)
                }
        if not outputs:
            return True  # unusual shapes: the rewrite reports them
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Assert):
                checked: ast.AST = node.test
            elif isinstance(node, ast.Call) and (
                self.resolver.resolve(node.func, self.test.scope).qualnames & _COMPARE
                or (isinstance(node.func, ast.Attribute) and node.func.attr.startswith("assert"))
            ):
                checked = node
            else:
                continue
            if _reads_values(checked, outputs):
                return True
        return False

    # ----------------------------------------------------------------- apply

    def apply(self) -> None:
        graph = self._graph_wrappers()
        if not graph:
            return
        calls = self._runs(graph)
        if not calls or self._explicit_capture():
            return
        if self._reads_removed(graph):
            return  # it depends on what the release removed: reported there, left alone
        if not self._compares_outputs(calls):
            return  # not a parity test (a wrapper's lifetime, a smoke run): it still works
        name = self.fn.name
        parents = _parents(self.fn)
        runs: list[_Run] = []
        for r in calls:
            stmt = parents.get(id(r.call))
            if not (
                isinstance(stmt, ast.Assign)
                and stmt.value is r.call
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                self.ctx.report(
                    r.call,
                    say(
                        "{name}: this run of the graph-mode wrapper is not a plain `out ="
                        " run(...)`, so the test cannot be turned into a capture/replay"
                        " automatically; since {since} the wrapper preallocates nothing and run()"
                        " returns a fresh tensor: capture run() in a torch.cuda.CUDAGraph and"
                        " compare replayed outputs",
                        "{name}：图模式 wrapper 的这次运行不是简单的 `out = run(...)`，无法自动"
                        "改写成捕获/重放；自 {since} 起该 wrapper 不再预分配任何缓冲区，`run()` 返回新的张量：请在"
                        " `torch.cuda.CUDAGraph` 中捕获 `run()` 并比较重放的输出",
                        name=name,
                        since=_SINCE,
                    ),
                )
                return
            runs.append(_Run(stmt, r.call, stmt.targets[0].id))
        runs.sort(key=lambda r: (r.statement.lineno, r.statement.col_offset))
        block = _block_of(self.fn, runs[0].statement)
        if block is None or any(r.statement not in block for r in runs):
            self.ctx.report(
                runs[0].call,
                say(
                    "{name}: the graph-mode wrapper runs in more than one block, so the test"
                    " cannot be turned into a capture/replay automatically; since {since} the"
                    " wrapper preallocates nothing and run() returns a fresh tensor: capture one"
                    " run() in a torch.cuda.CUDAGraph, replay it, and compare replayed outputs",
                    "{name}：图模式 wrapper 在不止一个代码块中运行，无法自动改写成捕获/重放；"
                    "自 {since} 起该 wrapper 不再预分配任何缓冲区，`run()` 返回新的张量：请在 `torch.cuda.CUDAGraph`"
                    " 中捕获一次 `run()`，重放它，再比较重放的输出",
                    name=name,
                    since=_SINCE,
                ),
            )
            return
        targets = [r.target for r in runs]
        assigned = _assignments(self.fn)
        if len(set(targets)) != len(targets) or any(assigned.get(t, 0) != 1 for t in targets):
            self.ctx.report(
                runs[0].call,
                say(
                    "{name}: an output of the graph-mode wrapper is assigned more than once, so"
                    " the test cannot be rewritten safely; since {since} capture one run() in a"
                    " torch.cuda.CUDAGraph, replay it, and compare replayed outputs",
                    "{name}：图模式 wrapper 的某个输出被赋值了不止一次，无法安全改写测试；自"
                    " {since} 起请在 `torch.cuda.CUDAGraph` 中捕获一次 `run()`，重放它，再比较"
                    "重放的输出",
                    name=name,
                    since=_SINCE,
                ),
            )
            return
        self._rewrite(runs, graph)

    def _rewrite(self, runs: list[_Run], graph: dict[str, ast.Call]) -> None:
        ctx = self.ctx
        used = _names_in(self.fn)
        g = _fresh("graph", used)
        captured = _fresh("graph_output", used | {g})
        first = runs[0].target
        first_new = first + "1" if first + "1" not in used else _fresh(f"{first}_replay1", used)
        warmups = int(ctx.option("warmup-runs"))
        tolerance = ctx.option("replay-tolerance")
        run_text, guessed = self._call_text(runs[0].call, runs[0].statement)
        width = line_length(ctx.path)
        safety = FixSafety.REVIEW if guessed or len(runs) > 2 else FixSafety.SAFE
        edits: list[Edit] = []
        # three phases, a blank line apart: warm up, capture, replay
        head = [
            f"for _ in range({warmups}):",
            _indented(run_text),
            "torch.cuda.synchronize()",
            "",
            f"{g} = torch.cuda.CUDAGraph()",
            f"with torch.cuda.graph({g}):",
            _indented(f"{captured} = {run_text}"),
            "torch.cuda.synchronize()",
            "",
            f"{g}.replay()",
            "torch.cuda.synchronize()",
            f"{first_new} = {captured}.clone()",
        ]
        edits.append(ctx.replace_statements(runs[0].statement, runs[0].statement, _lines(head)))
        outputs = {first: first_new}
        for r in runs[1:]:
            lines = [
                f"{g}.replay()",
                "torch.cuda.synchronize()",
                f"{r.target} = {captured}.clone()",
            ]
            edits.append(ctx.replace_statements(r.statement, r.statement, _lines(lines)))
            outputs[r.target] = r.target
        replaced: list[ast.stmt] = [r.statement for r in runs]
        # comparisons of two graph outputs: a bound on the difference of two replays
        for stmt, pair in self._graph_comparisons(set(outputs), runs[0].statement):
            a, b = (outputs[p] for p in pair)
            message = 'f"cuda_graph replay diverged too much: max_diff={max_diff}"'
            check = _fitted(self.test.is_method, str(tolerance), message, width - stmt.col_offset)
            code = _lines([f"max_diff = ({a} - {b}).abs().max().item()", check])
            edits.append(ctx.replace_statements(stmt, stmt, code))
            replaced.append(stmt)
        # later uses of the first output read the first replay
        for node in ast.walk(self.fn):
            if (
                isinstance(node, ast.Name)
                and node.id == first
                and isinstance(node.ctx, ast.Load)
                and node.lineno > (runs[0].statement.end_lineno or runs[0].statement.lineno)
                and not any(_inside(node, s) for s in replaced)
            ):
                edits.append(ctx.replace(node, "Name", replace_with(first_new)))
        dropped = say("", "")
        if self.ignored:
            for name in {self._run_target(r.call) for r in runs}:
                construction = graph.get(name or "")
                if construction is not None and any(
                    k.arg == "max_num_tokens" for k in construction.keywords
                ):
                    edits.append(
                        ctx.replace(construction, "Call", remove_keyword("max_num_tokens"))
                    )
                    dropped = say(
                        "; dropped max_num_tokens= (ignored since {since})",
                        "；去掉了 `max_num_tokens=`（自 {since} 起被忽略）",
                        since=_SINCE,
                    )
        imports = []
        torch_bound = self.resolver.resolve(ast.Name(id="torch", ctx=ast.Load()), self.test.scope)
        if "torch" not in torch_bound.qualnames:
            if torch_bound.candidates:
                ctx.report(
                    runs[0].call,
                    say(
                        "{name}: `torch` is bound to something else here, so the capture/replay"
                        " cannot be written: rewrite the test by hand",
                        "{name}：`torch` 在这里绑定的是别的东西，无法写出捕获/重放：请手动改写测试",
                        name=self.fn.name,
                    ),
                )
                return
            imports.append(AddImport("torch"))
        ctx.fix(
            runs[0].call,
            say(
                "{name}: since {since} a graph-mode CuteDslMoEWrapper preallocates nothing and run()"
                " returns fresh tensors, so these eager runs test no CUDA graph: capture one run"
                " in `{g}` after {warmups} warm-up runs and compare replayed outputs ({first}"
                " becomes {first_new}){dropped}",
                "{name}：自 {since} 起图模式的 `CuteDslMoEWrapper` 不再预分配任何缓冲区，`run()`"
                " 返回新的张量，所以这些 eager 运行测不到任何 CUDA 图：先预热 {warmups} 次，再在"
                " `{g}` 中捕获一次运行并比较重放的输出（`{first}` 改为 `{first_new}`）{dropped}",
                name=self.fn.name,
                since=_SINCE,
                g=g,
                warmups=warmups,
                first=first,
                first_new=first_new,
                dropped=dropped,
            ),
            *edits,
            imports=imports,
            safety=safety,
        )

    def _call_text(self, call: ast.Call, statement: ast.stmt) -> tuple[str, bool]:
        """The run call as written, its own line breaks, quotes and comments kept; lines after
        the first are made relative to the statement's indentation (the edit re-indents them
        with the block they land in). A line less indented than the statement (a string
        continued at column 0) cannot be moved: the call is then joined into one line, and the
        fix asks for review."""
        segment = ast.get_source_segment(self.ctx.text, call) or ast.unparse(call)
        if "\n" not in segment:
            return segment, False
        base = self.ctx.text.splitlines()[statement.lineno - 1][: statement.col_offset]
        first, *rest = segment.splitlines()
        if any(line.strip() and not line.startswith(base) for line in rest) or base.strip():
            return " ".join(line.strip() for line in segment.splitlines()), True
        return "\n".join([first, *(line[len(base) :] for line in rest)]), False

    def _graph_comparisons(
        self, outputs: set[str], after: ast.stmt
    ) -> list[tuple[ast.stmt, tuple[str, str]]]:
        """Statements that compare two graph outputs: `assert_close(a, b)`,
        `self.assertTrue(torch.allclose(a, b))`, `assert torch.equal(a, b)`."""
        found: list[tuple[ast.stmt, tuple[str, str]]] = []
        for stmt in ast.walk(self.fn):
            if not isinstance(stmt, (ast.Expr, ast.Assert)) or stmt.lineno <= after.lineno:
                continue
            for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
                quals = self.resolver.resolve(call.func, self.test.scope).qualnames
                if not quals & _COMPARE or len(call.args) < 2:
                    continue
                names = [a.id for a in call.args[:2] if isinstance(a, ast.Name)]
                if len(names) == 2 and set(names) <= outputs and names[0] != names[1]:
                    found.append((stmt, (names[0], names[1])))
                    break
        return found


def _indented(text: str) -> str:
    """``text`` one level into a block, every line of it (a call written over several lines)."""
    return "\n".join(("    " + line) if line.strip() else line for line in text.split("\n"))


def _fitted(method: bool, tolerance: str, message: str, width: int) -> str:
    """The bound on two replays' difference, wrapped as a formatter would to fit ``width``."""
    if method:
        one = f"self.assertLess(max_diff, {tolerance}, {message})"
        if len(one) <= width:
            return one
        inner = f"    max_diff, {tolerance}, {message}"
        if len(inner) <= width:
            return f"self.assertLess(\n{inner}\n)"
        return f"self.assertLess(\n    max_diff,\n    {tolerance},\n    {message},\n)"
    one = f"assert max_diff < {tolerance}, {message}"
    if len(one) <= width:
        return one
    return f"assert max_diff < {tolerance}, (\n    {message}\n)"


def _lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _fresh(base: str, used: set[str]) -> str:
    if base not in used:
        return base
    i = 2
    while f"{base}{i}" in used:
        i += 1
    return f"{base}{i}"


def _names_in(fn: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(fn) if isinstance(a, ast.arg)
    }


def _assignments(fn: ast.AST) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out[n.id] = out.get(n.id, 0) + 1
    return out


def _block_of(fn: ast.AST, statement: ast.stmt) -> list[ast.stmt] | None:
    for node in ast.walk(fn):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and statement in block:
                return block
    return None


def _inside(node: ast.expr, statement: ast.stmt) -> bool:
    return (statement.lineno, statement.col_offset) <= (node.lineno, node.col_offset) and (
        node.end_lineno or node.lineno,
        node.end_col_offset or node.col_offset,
    ) <= (statement.end_lineno or statement.lineno, statement.end_col_offset or 0)


# what a test reads of a tensor when it checks its identity or layout, not its values: a test
# of buffers or lifetime (`out_a.data_ptr() != out_b.data_ptr()`), no parity test
_NOT_VALUES = frozenset(
    {"data_ptr", "shape", "dtype", "device", "size", "stride", "storage", "untyped_storage",
     "is_contiguous", "numel", "dim", "ndim", "requires_grad", "is_cuda"}
)  # fmt: skip


def _reads_values(checked: ast.AST, outputs: set[str]) -> bool:
    """Whether a check reads the values of one of ``outputs``: not only their identity (``is``,
    ``id(...)``) or layout (``.data_ptr()``, ``.shape``...)."""
    parents = {id(c): p for p in ast.walk(checked) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(checked):
        if not (isinstance(node, ast.Name) and node.id in outputs):
            continue
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in _NOT_VALUES:
            continue
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id == "id"
        ):
            continue
        if isinstance(parent, ast.Compare) and all(
            isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops
        ):
            continue
        return True
    return False
