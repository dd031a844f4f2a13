"""The pull-request description of a FlashInfer upgrade, in Markdown, from what a run found.

Every statement is derived from facts the tool has: the range and the pins, what each rule
changed and why (its summary and the release it migrates), the files and their role, the sites
left for a person with their reason, the FlashInfer APIs the project uses (changed and not), and
what the migration did not cover (changed APIs used in runtime code that no test of the project
calls). Deterministic: the same tree and range give the same bytes. `--lang zh` renders the
same facts with Chinese headings and sentences (the rules' own messages stay as they are).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from migrate_fi.base.results import Diagnostic, RunResult
from migrate_fi.base.versions import parse_version
from migrate_fi.framework.rule import Rule
from migrate_fi.outputs.usage import Inventory, in_tests

__all__ = ["LANGUAGES", "Report", "render_markdown", "to_json"]

LANGUAGES = ("en", "zh")

# the tool's sentences, by language; {name} fields are filled with facts
_TEXT: dict[str, dict[str, str]] = {
    "en": {
        "title": "Upgrade FlashInfer {origin} -> {target}",
        "summary": "Summary",
        "summary_line": "{fixes} by migrate-fi in {files}; {manual} left for a person.",
        "applied_line": "Already applied by an earlier `apply` of this migration (its record):"
        " {files}.",
        "base_line": "Described against commit `{base}`, where the migration started: the"
        " changes below are what the migration found and made there.",
        "besides_line": "Changed since then besides the migration's fixes (pins moved, edits"
        " by hand): {files}:",
        "action": "Recommended action",
        "action_manual": "Review the {manual} below, resolve each, then run the tests on a GPU"
        " with the target FlashInfer installed: `{verify}`.",
        "action_clean": "Review the diff, then run the tests on a GPU with the target FlashInfer"
        " installed: `{verify}`.",
        "why": "Why: the FlashInfer changes this project meets",
        "how": "What changed, rule by rule",
        "fixed": "fixed",
        "for_person": "for a person",
        "files": "Key files",
        "file_head": "| File | Module | Category | Type | Rules | Sites |",
        "type_core": "core-logic",
        "type_test": "test-coverage",
        "type_config": "configuration",
        "type_infra": "infrastructure",
        "type_docs": "documentation",
        "symbols": "Key symbols",
        "why_apis": "FlashInfer APIs this project uses that changed in the range, and in which"
        " releases:",
        "changed_in": "changed in {releases}",
        "person": "Left for a person",
        "person_none": "Nothing: every site found was fixed.",
        "apis": "FlashInfer APIs used",
        "apis_line": "{used} used in {parsed} parsed files: {changed} changed, {unchanged}"
        " unchanged.",
        "changed": "Changed",
        "unchanged": "Unchanged",
        "risks": "Risks and impact",
        "risk_behaviour": "**behaviour**: {what}",
        "risk_install": "**install flow**: pins or install steps change in {files}",
        "risk_untested": "**test coverage**: {apis} changed and used in runtime code, but no test"
        " file of the project calls {them} directly: run the runtime paths that use {them}",
        "risk_not_run": "**rules not run**: {rules} apply to this range but were left out"
        " (--select, --ignore or the configuration): their sites are not in this report",
        "risk_none": "None found beyond the sites above.",
        "pins": "Pins",
        "pins_none": "No pin of flashinfer-python found.",
        "sites": "{n} site",
        "sites_plural": "{n} sites",
        "fixes": "{n} change",
        "fixes_plural": "{n} changes",
        "in_files": "{n} file",
        "in_files_plural": "{n} files",
        "more": "... and {n} more",
        "since": "since FlashInfer {release}",
        "every": "from the release data",
        "role_source": "source",
        "role_test": "test",
        "role_config": "config",
        "role_infra": "infra",
        "it": "it",
        "them": "them",
        "notes": "Notes",
        "verify": "Verify on a GPU",
        "hunks": "Key changes",
        "verify_not_run": "Not run here: run `{verify}` on a machine with a GPU and FlashInfer"
        " {target} installed.",
        "verify_line": "Verdict: **{verdict}** ({counts}), with FlashInfer {flashinfer} on {gpus}.",
        "verify_new": "New failures against the tree before the migration: {tests}",
        "verify_fixed": "Fixed by the migration: {tests}",
        "verify_skipped": "Skipped: {tests}",
        "verify_failed": "Failed: {tests}",
        "verify_why": "the release notes: {why}",
        "none": "none",
    },
    "zh": {
        "title": "升级 FlashInfer {origin} -> {target}",
        "summary": "执行摘要",
        "summary_line": "migrate-fi 在 {files}中做了 {fixes}；{manual}需要人工处理。",
        "applied_line": "本次迁移此前的 `apply` 已修改（见其记录）：{files}。",
        "base_line": "以迁移开始时的提交 `{base}` 为基准：下面的修改即本次迁移在该提交上发现并完成的修改。",
        "besides_line": "此外，自该提交以来还有 {files}被修改（如版本固定的更新、人工修改）：",
        "action": "推荐动作",
        "action_manual": "逐一处理下面的 {manual}，然后在装有目标版本 FlashInfer 的 GPU 机器上运行"
        "测试：`{verify}`。",
        "action_clean": "审阅 diff，然后在装有目标版本 FlashInfer 的 GPU 机器上运行测试：`{verify}`。",
        "why": "功能与动机：本项目遇到的 FlashInfer 变更",
        "how": "实现拆解（按规则）",
        "fixed": "已修改",
        "for_person": "需人工",
        "files": "关键文件",
        "file_head": "| 文件 | 模块 | 类别 | 类型 | 规则 | 位置数 |",
        "type_core": "core-logic",
        "type_test": "test-coverage",
        "type_config": "configuration",
        "type_infra": "infrastructure",
        "type_docs": "documentation",
        "symbols": "关键符号",
        "why_apis": "本项目使用的、在此范围内有变更的 FlashInfer API 及其变更版本：",
        "changed_in": "变更于 {releases}",
        "person": "需人工处理",
        "person_none": "无：发现的每一处都已修改。",
        "apis": "使用的 FlashInfer API",
        "apis_line": "在 {parsed} 个已解析文件中使用了 {used} 个：{changed} 个有变更，{unchanged}"
        " 个无变更。",
        "changed": "有变更",
        "unchanged": "无变更",
        "risks": "风险与影响",
        "risk_behaviour": "**行为变化**：{what}",
        "risk_install": "**安装流程**：{files} 中的版本或安装步骤有变",
        "risk_untested": "**测试覆盖**：{apis} 有变更且在运行时代码中使用，但项目中没有测试文件直接"
        "调用{them}：请运行用到{them}的运行时路径",
        "risk_not_run": "**未运行的规则**：{rules} 适用于此版本区间，但被排除（--select、--ignore"
        " 或配置）：它们的位置不在本报告中",
        "risk_none": "除上述位置外未发现其他风险。",
        "pins": "版本声明",
        "pins_none": "未找到 flashinfer-python 的版本声明。",
        "sites": "{n} 处",
        "sites_plural": "{n} 处",
        "fixes": "{n} 处修改",
        "fixes_plural": "{n} 处修改",
        "in_files": "{n} 个文件",
        "in_files_plural": "{n} 个文件",
        "more": "……另有 {n} 处",
        "since": "自 FlashInfer {release} 起",
        "every": "来自发布数据",
        "role_source": "source",
        "role_test": "test",
        "role_config": "config",
        "role_infra": "infra",
        "it": "它",
        "them": "它们",
        "notes": "说明",
        "verify": "GPU 验证",
        "hunks": "关键源码片段",
        "verify_not_run": "未在本机运行：请在装有 GPU 和 FlashInfer {target} 的机器上运行 `{verify}`。",
        "verify_line": "结论：**{verdict}**（{counts}），FlashInfer {flashinfer}，GPU：{gpus}。",
        "verify_new": "相对迁移前新增的失败：{tests}",
        "verify_fixed": "迁移修好的测试：{tests}",
        "verify_skipped": "跳过：{tests}",
        "verify_failed": "失败：{tests}",
        "verify_why": "发布说明：{why}",
        "none": "无",
    },
}
_LISTED = 20  # sites listed per section before "... and N more"
_BEHAVIOUR = {"FI004": "group=", "FI008": "defaults passed explicitly", "FI003": "global scales"}
_CONFIG = (".toml", ".cfg", ".txt", ".lock", ".json", ".yaml", ".yml", ".hcl")


@dataclass
class Report:
    """The facts a report is made of."""

    result: RunResult
    rules: list[type[Rule]]  # all of the range's (the run may have used fewer: result.rules)
    inventory: Inventory
    pins: list[str]  # `path:line package==version`
    verify: str  # the command that proves the migration on a GPU
    verified: dict[str, Any] | None = None  # `verify --output-format json`, when it ran
    # files an earlier apply of this migration rewrote (its record), when it is in progress
    applied: list[str] | None = None
    # the commit the migration is described against (`report --base`), and the files changed
    # since it besides the migration's fixes (by hand, or by pins moved)
    base: str | None = None
    changed_besides: list[str] = field(default_factory=list)


def _type(role: str, sites: list[Diagnostic]) -> str:
    """What a file's change is, as the reference write-ups classify it: a version example in
    a comment or docstring is documentation; otherwise by the file's role."""
    if role == "role_source" and all(
        "comment or docstring" in d.message or "in a comment" in d.message for d in sites
    ):
        return "type_docs"
    return {
        "role_source": "type_core",
        "role_test": "type_test",
        "role_config": "type_config",
    }.get(role, "type_infra")


def _module_of(path: str) -> str | None:
    """The dotted module a Python file is imported as (from its path, as shown)."""
    from migrate_fi.base.modules import module_identity

    if not path.endswith(".py"):
        return None
    try:
        name = module_identity(path)[0]
    except (OSError, ValueError):
        return None
    return f"`{name}`" if name else None


def _role(path: str) -> str:
    name = os.path.basename(path)
    parts = set(os.path.normpath(path).split(os.sep)[:-1])
    if in_tests(path):
        return "role_test"
    if name.endswith(".py"):
        return "role_source"
    if name.startswith("Dockerfile") or name.endswith((".sh", ".hcl")) or "ci" in parts:
        return "role_infra"
    return "role_config" if name.endswith(_CONFIG) or "requirements" in name else "role_infra"


class _Writer:
    def __init__(self, lang: str) -> None:
        self.t = _TEXT[lang]
        self.lines: list[str] = []

    def say(self, key: str, **facts: object) -> str:
        return self.t[key].format(**facts)

    def count(self, key: str, n: int) -> str:
        return self.say(key if n == 1 else f"{key}_plural", n=n)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def heading(self, key: str) -> None:
        self.add("", f"## {self.say(key)}", "")


def _site(d: Diagnostic) -> str:
    message = d.message.replace("|", "\\|")
    return f"- `{d.path}:{d.line}` {d.code}: {message}"


def render_markdown(report: Report, lang: str = "en") -> str:
    result, w = report.result, _Writer(lang)
    fixed, manual = result.fixable, result.manual
    files = sorted({d.path for d in fixed})
    by_code = {c.code: c for c in report.rules}
    w.add(f"# {w.say('title', origin=result.from_version, target=result.to_version)}")
    w.heading("summary")
    w.add(
        w.say(
            "summary_line",
            fixes=w.count("fixes", len(fixed)),
            files=w.count("in_files", len(files)),
            manual=w.count("sites", len(manual)),
        )
    )
    if report.base is not None:
        w.add("", w.say("base_line", base=report.base))
        if report.changed_besides:
            listed = ", ".join(f"`{p}`" for p in report.changed_besides[:_LISTED])
            beyond = len(report.changed_besides) - _LISTED
            w.add(
                "",
                w.say("besides_line", files=w.count("in_files", len(report.changed_besides)))
                + " "
                + listed
                + (f" {w.say('more', n=beyond)}" if beyond > 0 else ""),
            )
    if report.applied:
        shown = ", ".join(f"`{p}`" for p in report.applied[:_LISTED])
        more = (
            f" {w.say('more', n=len(report.applied) - _LISTED)}"
            if len(report.applied) > _LISTED
            else ""
        )
        w.add("", w.say("applied_line", files=w.count("in_files", len(report.applied))))
        w.add("", shown + more)
    w.heading("action")
    key = "action_manual" if manual else "action_clean"
    w.add(w.say(key, manual=w.count("sites", len(manual)), verify=report.verify))

    codes = Counter(d.code for d in result.diagnostics)
    w.heading("why")
    for code in sorted(codes, key=lambda c: list(by_code).index(c) if c in by_code else 99):
        rule = by_code.get(code)
        if rule is None:
            continue
        when = w.say("every") if rule.data_driven else w.say("since", release=rule.introduced_in)
        w.add(f"- **{code}** ({rule.id}, {when}): {rule.summary}")
        lo, hi = parse_version(result.from_version), parse_version(result.to_version)
        w.add(*(f"  - {ref}" for ref in rule.references(lo, hi)))
    released = [a for a in report.inventory.changed if a.releases]
    if released:
        w.add("", w.say("why_apis"), "")
        for a in released[:_LISTED]:
            kinds = ", ".join(dict.fromkeys(k for k, _ in a.changes))
            w.add(f"- `{a.api}`: {w.say('changed_in', releases=', '.join(a.releases))} ({kinds})")
        if len(released) > _LISTED:
            w.add(f"- {w.say('more', n=len(released) - _LISTED)}")

    w.heading("how")
    for code in sorted(codes, key=lambda c: list(by_code).index(c) if c in by_code else 99):
        sites = [d for d in result.diagnostics if d.code == code]
        done = sum(1 for d in sites if d.applies)
        w.add(
            f"### {code}: {done} {w.say('fixed')}, {len(sites) - done} {w.say('for_person')}",
            "",
        )
        w.add(*(_site(d) for d in sites[:_LISTED]))
        if len(sites) > _LISTED:
            w.add(f"- {w.say('more', n=len(sites) - _LISTED)}")
        w.add("")
    if w.lines[-1] == "":
        w.lines.pop()

    excerpts = _excerpts(result)
    if excerpts:
        w.heading("hunks")
        for path, hunk in excerpts:
            w.add(f"`{path}`", "", "```diff", *hunk, "```", "")
        w.lines.pop()

    symbols = _key_symbols(result)
    if symbols:
        w.heading("symbols")
        for path, where in symbols[:_LISTED]:
            w.add(f"- `{path}`: " + ", ".join(f"`{n}` ({codes})" for n, codes in where))
        if len(symbols) > _LISTED:
            w.add(f"- {w.say('more', n=len(symbols) - _LISTED)}")

    w.heading("files")
    w.add(w.say("file_head"), "| --- | --- | --- | --- | --- | ---: |")
    for path in sorted({d.path for d in result.diagnostics}):
        here = [d for d in result.diagnostics if d.path == path]
        rules = ", ".join(sorted({d.code for d in here}))
        role = _role(path)
        module = _module_of(path) or "-"
        w.add(
            f"| `{path}` | {module} | {w.say(role)} | {w.say(_type(role, here))} | {rules} |"
            f" {len(here)} |"
        )

    w.heading("person")
    if manual:
        w.add(*(_site(d) for d in manual))
    else:
        w.add(w.say("person_none"))

    inv = report.inventory
    w.heading("apis")
    w.add(
        w.say(
            "apis_line",
            used=len(inv.apis),
            parsed=inv.files_parsed,
            changed=len(inv.changed),
            unchanged=len(inv.unchanged),
        )
    )
    if inv.changed:
        w.add("", f"{w.say('changed')}:", "")
        for a in inv.changed:
            kinds = ", ".join(dict.fromkeys(k for k, _ in a.changes))
            w.add(f"- `{a.api}` ({w.count('sites', len(a.sites))}): {kinds}")
    if inv.unchanged:
        names = ", ".join(f"`{a.api}`" for a in inv.unchanged[:_LISTED])
        more = (
            f" {w.say('more', n=len(inv.unchanged) - _LISTED)}"
            if len(inv.unchanged) > _LISTED
            else ""
        )
        w.add("", f"{w.say('unchanged')}: {names}{more}")

    w.heading("risks")
    risks = []
    behaviour = [f"{c} ({_BEHAVIOUR[c]})" for c in sorted(codes) if c in _BEHAVIOUR]
    if behaviour:
        risks.append(w.say("risk_behaviour", what=", ".join(behaviour)))
    install = sorted({d.path for d in result.diagnostics if d.code in ("FI006", "FI007")})
    if install:
        risks.append(w.say("risk_install", files=", ".join(f"`{p}`" for p in install)))
    untested = [a.api for a in inv.changed if a.sites and a.tests == 0]
    if untested:
        risks.append(
            w.say(
                "risk_untested",
                apis=", ".join(f"`{a}`" for a in untested),
                them=w.say("it" if len(untested) == 1 else "them"),
            )
        )
    not_run = [f"{c.code} ({c.id})" for c in report.rules if c.code not in result.rules]
    if not_run and result.rules:
        risks.append(w.say("risk_not_run", rules=", ".join(not_run)))
    w.add(*(f"- {r}" for r in risks) if risks else (w.say("risk_none"),))

    w.heading("verify")
    _verify_section(w, report, result.to_version)

    w.heading("pins")
    w.add(*(f"- `{p}`" for p in report.pins) if report.pins else (w.say("pins_none"),))
    if result.notices:
        w.heading("notes")
        w.add(*(f"- {n}" for n in result.notices))
    return "\n".join(w.lines) + "\n"


def _key_symbols(result: RunResult) -> list[tuple[str, list[tuple[str, str]]]]:
    """Per Python file with sites, the functions and classes they are in (``Class.method``,
    or the module itself), with the rules' codes: the project's symbols a reviewer looks at."""
    import ast

    out = []
    for f in sorted(result.files, key=lambda f: f.path):
        if not f.diagnostics or not f.path.endswith(".py"):
            continue
        text = f.old_text
        if text is None:
            try:
                with open(f.path, encoding="utf-8") as fh:
                    text = fh.read()
            except (OSError, UnicodeDecodeError):
                continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        spans = _definitions(tree)
        found: dict[str, set[str]] = {}
        for d in f.diagnostics:
            inner = [s for s in spans if s[0] <= d.line <= s[1]]
            name = max(inner, key=lambda s: s[0])[2] if inner else "(module)"
            found.setdefault(name, set()).add(d.code)
        out.append((f.path, [(n, ", ".join(sorted(c))) for n, c in found.items()]))
    return out


def _definitions(tree: Any) -> list[tuple[int, int, str]]:
    """``(first line, last line, qualified name)`` of every function and class of a module."""
    import ast

    spans: list[tuple[int, int, str]] = []
    todo: list[tuple[ast.AST, str]] = [(tree, "")]
    while todo:
        node, prefix = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                spans.append((child.lineno, child.end_lineno or child.lineno, name))
                todo.append((child, f"{name}."))
            else:
                todo.append((child, prefix))
    return spans


_EXCERPTS = 3  # files shown
_HUNK_LINES = 14  # lines of each file's first hunk


def _excerpts(result: RunResult) -> list[tuple[str, list[str]]]:
    """The first hunk of the changed Python files with the most fixes, bounded: what a reviewer
    reads first. (Only when the run computed the new text: `diff`, `apply`, `upgrade`.)"""
    import difflib

    changed = [f for f in result.changed if f.old_text is not None and f.new_text is not None]
    changed = [f for f in changed if f.path.endswith(".py")]
    ranked = sorted(changed, key=lambda f: (-sum(d.applies for d in f.diagnostics), f.path))
    out = []
    for f in ranked[:_EXCERPTS]:
        assert f.old_text is not None and f.new_text is not None
        lines = list(
            difflib.unified_diff(f.old_text.splitlines(), f.new_text.splitlines(), n=1, lineterm="")
        )[2:]
        hunk: list[str] = []
        for line in lines:
            if line.startswith("@@") and hunk:
                break
            hunk.append(line)
        if len(hunk) > _HUNK_LINES:
            hunk = [*hunk[:_HUNK_LINES], "..."]
        out.append((f.path, hunk))
    return out


def _verify_section(w: _Writer, report: Report, target: str) -> None:
    doc = report.verified
    if doc is None:
        w.add(w.say("verify_not_run", verify=report.verify, target=target))
        return
    counts = doc.get("counts") or {}
    shown = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()) if n) or w.say("none")
    env = doc.get("environment") or {}
    gpus = ", ".join(str(g.get("name")) for g in env.get("gpus") or []) or w.say("none")
    w.add(
        w.say(
            "verify_line",
            verdict=doc.get("verdict"),
            counts=shown,
            flashinfer=env.get("flashinfer") or w.say("none"),
            gpus=gpus,
        )
    )
    baseline = doc.get("baseline") or {}

    def tests(names: list[str]) -> str:
        return ", ".join(f"`{n}`" for n in names) or w.say("none")

    if baseline:
        w.add("", f"- {w.say('verify_new', tests=tests(baseline.get('new') or []))}")
        w.add(f"- {w.say('verify_fixed', tests=tests(baseline.get('fixed') or []))}")
    skipped = [
        f"`{r['test']}` ({r.get('detail') or '?'})"  # (the reason is prose, not code)
        for r in doc.get("results") or []
        if r.get("outcome") == "skipped"
    ]
    if skipped:
        w.add(f"- {w.say('verify_skipped', tests=', '.join(skipped))}")
    failed = []
    for r in doc.get("results") or []:
        if r.get("outcome") not in ("failed", "error"):
            continue
        # (why it failed, as the test said it, and what the release notes say of the API)
        said = next(
            (line.strip() for line in str(r.get("detail") or "").splitlines() if line.strip()), ""
        )
        said = said if len(said) <= 160 else said[:157] + "..."
        why = "; ".join(r.get("why") or [])
        reason = "; ".join(p for p in (said, w.say("verify_why", why=why) if why else "") if p)
        failed.append(f"`{r['test']}`" + (f" ({reason})" if reason else ""))
    if failed:
        w.add(f"- {w.say('verify_failed', tests=', '.join(failed))}")


def to_json(report: Report) -> dict[str, object]:
    result = report.result
    return {
        "from": result.from_version,
        "to": result.to_version,
        "fixed": [d.to_json() for d in result.fixable],
        "for_a_person": [d.to_json() for d in result.manual],
        "files": sorted({d.path for d in result.diagnostics}),
        "apis": [a.to_json() for a in report.inventory.apis],
        "pins": report.pins,
        "verify": report.verify,
        "verified": report.verified,
        "applied": report.applied or [],
        "base": report.base,
        "changed_besides": report.changed_besides,
        "notices": result.notices,
    }
