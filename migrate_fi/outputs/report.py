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
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from migrate_fi.api.notes import Behaviour, Deprecated
from migrate_fi.base.messages import Said
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
        "how": "Every site, rule by rule",
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
        "note_deprecated": "deprecated",
        "note_deprecated_omitted": "deprecated to leave out",
        "note_deprecated_positional": "deprecated to pass by position",
        "note_source": "source: ",
        "release_notes": "{n} release note",
        "release_notes_plural": "{n} release notes",
        "notes_of_apis": "What the release notes of the range say of these APIs ({n})",
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
        "oneline": "In one sentence",
        "oneline_text": "upgrade FlashInfer {origin} -> {target}: {parts}.",
        "part_pins": "{n} pin or version check moved",
        "part_pins_plural": "{n} pins and version checks moved",
        "part_api": "{n} FlashInfer call migrated",
        "part_api_plural": "{n} FlashInfer calls migrated",
        "part_tests": "{n} test converted",
        "part_tests_plural": "{n} tests converted",
        "part_manual": "{n} site left for a person",
        "part_manual_plural": "{n} sites left for a person",
        "part_nothing": "nothing to change",
        "breakdown": "Implementation, by area",
        "area_item": "**{title}**: {done} in {files}{symbols}; {what}",
        "area_left": ", {n} left for a person",
        "area_symbols": " ({names})",
        "area_deps": "Dependencies",
        "area_checks": "Version checks",
        "area_api": "API calls",
        "area_allreduce": "All-reduce",
        "area_fp4": "FP4 quantization",
        "area_behaviour": "Behaviour changes",
        "area_tests": "Tests",
        "area_docker_ci": "Docker and CI",
        "why_file": "Why",
        "reason_deps": "dependency pins moved to {target}",
        "reason_checks": "the version it checks or cites moved to {target}",
        "reason_api": "FlashInfer calls that bind differently or changed, migrated",
        "reason_allreduce": "the all-reduce workspace gets its process group",
        "reason_fp4": "fp4_quantize calls named or their global scales checked",
        "reason_behaviour": "calls whose behaviour a release changed, to check",
        "reason_tests": "tests adapted to the new FlashInfer",
        "reason_docker_ci": "install steps and image versions moved to {target}",
        "excerpt_note": "{what}",
        "checklist": "Reviewer checklist",
        "check_site": "[ ] `{where}` {code}: {what}",
        "check_verify": "[ ] The tests pass on a GPU with FlashInfer {target} installed: `{verify}`",
        "check_install": "[ ] CI and the images install FlashInfer {target} ({files}); where the cubin comes from FlashInfer's wheel index, that index is reachable from them",
        "check_untested": "[ ] The runtime paths that call {apis} run with FlashInfer {target} (no test of the project calls {them})",
        "check_behaviour": "[ ] The behaviour changes listed ({codes}) hold for this project's GPUs and inputs",
        "check_group": "[ ] Every all-reduce workspace gets the process group of the ranks that share it",
        "impact": "Impact",
        "impact_users": "**Users**: {what}",
        "impact_systems": "**Systems**: {what}",
        "impact_team": "**Team**: {what}",
        "users_pins": "an install needs FlashInfer {target}",
        "users_check": "; the version check in {files} stops an older install at start-up",
        "users_cubin": "; a source install gets flashinfer-cubin from FlashInfer's wheel index",
        "users_none": "no change to what users install",
        "systems_infra": "CI and images install FlashInfer {target} ({files})",
        "systems_behaviour": "calls whose behaviour changed run on the GPUs the project serves ({codes})",
        "systems_none": "no change to CI or images",
        "team_text": "{manual} to resolve; the GPU tests of the changed APIs to run with FlashInfer {target}",
        "tags": "Risk tags",
        "tag_upgrade": "dependency upgrade",
        "tag_binding": "API binding",
        "tag_install": "install flow",
        "tag_behaviour": "behaviour change",
        "tag_coverage": "test coverage",
        "tag_multi_gpu": "multi-GPU",
        "tag_tests": "test adaptation",
        "related": "Related changes",
        "related_none": "None cited by the rules of this range.",
        "beh_FI003": "global scales",
        "beh_FI004": "`group=`",
        "beh_FI008": "defaults passed explicitly",
        "colon": ": ",
        "notes_english": "",
        "verify_noted": "",
        "code_in": "",
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
        "how": "逐条位置（按规则）",
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
        "note_deprecated": "已弃用",
        "note_deprecated_omitted": "已弃用省略",
        "note_deprecated_positional": "已弃用按位置传参",
        "note_source": "来源：",
        "release_notes": "{n} 条发布说明",
        "release_notes_plural": "{n} 条发布说明",
        "notes_of_apis": "本范围的发布说明对这些 API 的说明（{n} 条）",
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
        "oneline": "一句话",
        "oneline_text": "FlashInfer {origin} 升级至 {target}：{parts}。",
        "part_pins": "更新 {n} 处版本声明或版本检查",
        "part_pins_plural": "更新 {n} 处版本声明或版本检查",
        "part_api": "迁移 {n} 处 FlashInfer 调用",
        "part_api_plural": "迁移 {n} 处 FlashInfer 调用",
        "part_tests": "改造 {n} 处测试",
        "part_tests_plural": "改造 {n} 处测试",
        "part_manual": "{n} 处需人工处理",
        "part_manual_plural": "{n} 处需人工处理",
        "part_nothing": "无需修改",
        "breakdown": "实现拆解",
        "area_item": "**{title}**：在 {files}{symbols} 中做了 {done}；{what}",
        "area_left": "，另有 {n} 处需人工处理",
        "area_symbols": "（{names}）",
        "area_deps": "依赖声明",
        "area_checks": "版本检查",
        "area_api": "API 调用",
        "area_allreduce": "allreduce",
        "area_fp4": "FP4 量化",
        "area_behaviour": "行为变化",
        "area_tests": "测试",
        "area_docker_ci": "Docker 与 CI",
        "why_file": "原因",
        "reason_deps": "依赖版本更新至 {target}",
        "reason_checks": "检查或引用的版本更新至 {target}",
        "reason_api": "绑定方式改变或有变更的 FlashInfer 调用已迁移",
        "reason_allreduce": "allreduce workspace 传入其进程组",
        "reason_fp4": "fp4_quantize 调用改为关键字参数，或需核对其 global scale",
        "reason_behaviour": "某版本改变了行为的调用，需核对",
        "reason_tests": "测试适配新版 FlashInfer",
        "reason_docker_ci": "安装步骤与镜像版本更新至 {target}",
        "excerpt_note": "{what}",
        "checklist": "评审清单",
        "check_site": "[ ] `{where}` {code}：{what}",
        "check_verify": "[ ] 在装有 FlashInfer {target} 的 GPU 机器上测试通过：`{verify}`",
        "check_install": "[ ] CI 与镜像安装 FlashInfer {target}（{files}）；若 cubin 来自 FlashInfer 的 wheel 索引，确认该索引可访问",
        "check_untested": "[ ] 调用 {apis} 的运行时路径在 FlashInfer {target} 下运行正常（项目中没有测试直接调用{them}）",
        "check_behaviour": "[ ] 所列行为变化（{codes}）在本项目的 GPU 与输入上成立",
        "check_group": "[ ] 每个 allreduce workspace 都传入共享它的各 rank 的进程组",
        "impact": "影响",
        "impact_users": "**用户影响**：{what}",
        "impact_systems": "**系统影响**：{what}",
        "impact_team": "**团队影响**：{what}",
        "users_pins": "安装时需要 FlashInfer {target}",
        "users_check": "；{files} 中的版本检查会在启动时拦截旧版本",
        "users_cubin": "；从源码安装时需从 FlashInfer 的 wheel 索引安装 flashinfer-cubin",
        "users_none": "用户安装的内容不变",
        "systems_infra": "CI 与镜像安装 FlashInfer {target}（{files}）",
        "systems_behaviour": "行为有变化的调用会在项目所用的 GPU 上运行（{codes}）",
        "systems_none": "CI 与镜像不变",
        "team_text": "需处理 {manual}；需在 FlashInfer {target} 下运行涉及变更 API 的 GPU 测试",
        "tags": "风险标记",
        "tag_upgrade": "依赖升级",
        "tag_binding": "API 参数绑定",
        "tag_install": "安装流程变更",
        "tag_behaviour": "行为变化",
        "tag_coverage": "测试覆盖不足",
        "tag_multi_gpu": "多 GPU",
        "tag_tests": "测试适配",
        "related": "关联脉络",
        "related_none": "本范围的规则未引用相关变更。",
        "beh_FI003": "global scale 的元素个数",
        "beh_FI004": "`group=`",
        "beh_FI008": "显式传入的默认值",
        "colon": "：",
        "notes_english": "工具另有 {n} 条提示（仅英文），见 `migrate-fi check` 的输出。",
        "verify_noted": "发布说明记载了该 API 的变化",
        "code_in": "；涉及 {code}",
    },
}
_LISTED = 20  # sites listed per section before "... and N more"
_BEHAVIOUR = ("FI003", "FI004", "FI008")  # rules whose sites may change results (`beh_<code>`)
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
    if name.startswith("Dockerfile") or name.endswith((".sh", ".hcl")) or parts & {"ci", "docker"}:
        return "role_infra"
    return "role_config" if name.endswith(_CONFIG) or "requirements" in name else "role_infra"


class _Writer:
    def __init__(self, lang: str) -> None:
        self.lang = lang
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


def _note(note: Behaviour | Deprecated, w: _Writer) -> str:
    """A release note of an API the project uses, as the report lists it: its release, what
    changed (a kind of behaviour, or a deprecated argument), what it says (in the report's
    language) and its source."""
    from migrate_fi.api.notes import kind_said

    if isinstance(note, Behaviour):
        label, text = kind_said(note.kind).text(w.lang), Said(note.what, note.what_zh)
    else:
        key = (
            "note_deprecated_omitted"
            if note.omitted
            else "note_deprecated_positional"
            if note.positional
            else "note_deprecated"
        )
        label = w.say(key) + ("" if note.parameter is None else f" `{note.parameter}=`")
        text = Said(note.why, note.why_zh)
    source = f"{w.say('note_source')}`{note.source}`"
    return f"{note.release}, {label}{w.say('colon')}{text.text(w.lang)} ({source})"


def _site(d: Diagnostic, w: _Writer, rule: type[Rule] | None) -> str:
    return f"- `{d.path}:{d.line}` {d.code}: {_what(d, w, rule)}"


_LEADING_API = re.compile(r"^(?:this )?`?([A-Za-z_][\w.]*(?:\(\))?)`?:")


def _what(d: Diagnostic, w: _Writer, rule: type[Rule] | None) -> str:
    """What a site says: its message in the report's language; a message said in English only
    (a record written by an older migrate-fi) gives, in Chinese, the rule's line after the API
    the message names, with the code it names."""
    if w.lang == "zh" and d.message_zh:
        return d.message_zh.replace("|", "\\|")
    if w.lang == "en" or rule is None:
        return d.message.replace("|", "\\|")
    found = _LEADING_API.match(d.message)
    summary = _summary(rule, w)
    api = f"`{found.group(1)}`：" if found and not summary.startswith(found.group(1)) else ""
    kind = w.say("fixed") if d.applies else w.say("for_person")
    code = _code_in(d.message, found.group(1) if found else "")
    shown = w.say("code_in", code="、".join(f"`{c}`" for c in code)) if code else ""
    return f"{api}{summary}（{kind}{shown}）"


_CODE_SPAN = re.compile(r"`([^`]+)`|\b([A-Za-z_]\w*=[^\s,;:()`]*)")


def _code_in(message: str, api: str, most: int = 4) -> list[str]:
    """The code a message names (its backquoted spans, its ``name=value`` arguments), in order
    and once each, but the API it starts with: what a site's line in another language keeps of
    the message's specifics."""
    out: list[str] = []
    for m in _CODE_SPAN.finditer(message):
        code = (m.group(1) or m.group(2)).replace("`", "'")
        if code and code != api and code not in out:
            out.append(code)
    return out[:most]


def _brief(d: Diagnostic, w: _Writer, by_code: dict[str, type[Rule]]) -> str:
    """A site in a line: the API its message names and its rule's line (the message itself is
    under "Left for a person")."""
    rule = by_code.get(d.code)
    found = _LEADING_API.match(d.message)
    what = _summary(rule, w) if rule is not None else d.code
    if found is None or what.startswith(found.group(1)):
        return what
    return f"`{found.group(1)}`" + ("：" if w.lang == "zh" else ": ") + what


def _quoted(text: str, w: _Writer) -> str:
    """A test's own words: as they are in English, as code in another language."""
    return text if w.lang == "en" else f"`{text.replace('`', chr(39))}`"


def _summary(rule: type[Rule], w: _Writer) -> str:
    return (rule.summary_zh or rule.summary) if w.lang == "zh" else rule.summary


def _urls(text: str) -> list[str]:
    return re.findall(r"https?://\S+[^\s).,;]", text)


# the areas of the implementation breakdown, in the order of the reference write-ups
_AREAS = (
    "area_deps",
    "area_checks",
    "area_api",
    "area_allreduce",
    "area_fp4",
    "area_behaviour",
    "area_tests",
    "area_docker_ci",
)
# how much a reviewer needs to see a file's change first (`_excerpts`): test conversions and
# API rewrites before checks and pins
_IMPORTANCE = {"FI005": 0, "FI006": 3, "FI007": 3, "FI008": 2, "FI009": 2, "FI012": 2}


def _area(d: Diagnostic) -> str:
    """The part of the upgrade a site belongs to, as the reference write-ups break it down."""
    role = _role(d.path)
    if role == "role_test" or d.code == "FI005":
        return "area_tests"
    if d.code in ("FI006", "FI007", "FI009"):
        if role == "role_source" and not _installs(d):
            return "area_checks"
        return "area_docker_ci" if role == "role_infra" else "area_deps"
    return {"FI004": "area_allreduce", "FI001": "area_fp4", "FI003": "area_fp4"}.get(
        d.code, "area_behaviour" if d.code == "FI012" else "area_api"
    )


def _installs(d: Diagnostic) -> bool:
    """A pin FI006 or FI007 found in the project's code that is a requirement to install (a
    list of packages a module installs), not a version it checks or cites: FI006 calls each
    place by its kind, "pin" for a requirement ("this install" where it cannot move one)."""
    return d.code == "FI007" or (
        d.code == "FI006"
        and (" pin" in d.message or "this install" in d.message)
        and "version check" not in d.message
    )


def _checks_at_start(d: Diagnostic) -> bool:
    """A version check the code runs (FI009's comparisons, FI006's checks such as
    `assert_pkg_version`), not a version a docstring cites or a list installs."""
    return d.code == "FI009" or (d.code == "FI006" and "version check" in d.message)


def _listed(w: _Writer, items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" {w.say('more', n=len(items) - limit)}" if len(items) > limit else "")


def _one_sentence(w: _Writer, result: RunResult) -> str:
    fixed = result.fixable
    areas = Counter(_area(d) for d in fixed)
    pins = areas["area_deps"] + areas["area_checks"] + areas["area_docker_ci"]
    tests = areas["area_tests"]
    api = len(fixed) - pins - tests
    parts = [
        w.count(key, n)
        for key, n in (
            ("part_pins", pins),
            ("part_api", api),
            ("part_tests", tests),
            ("part_manual", len(result.manual)),
        )
        if n
    ]
    joined = ("，" if w.lang == "zh" else ", ").join(parts) or w.say("part_nothing")
    return w.say("oneline_text", origin=result.from_version, target=result.to_version, parts=joined)


def render_markdown(report: Report, lang: str = "en") -> str:
    result, w = report.result, _Writer(lang)
    fixed, manual = result.fixable, result.manual
    files = sorted({d.path for d in fixed})
    by_code = {c.code: c for c in report.rules}
    target = result.to_version
    w.add(f"# {w.say('title', origin=result.from_version, target=target)}")
    w.heading("summary")
    key = "action_manual" if manual else "action_clean"
    w.add(
        f"- **{w.say('oneline')}**{w.say('colon')}{_one_sentence(w, result)}",
        f"- **{w.say('action')}**{w.say('colon')}"
        + w.say(key, manual=w.count("sites", len(manual)), verify=report.verify),
        "",
        w.say(
            "summary_line",
            fixes=w.count("fixes", len(fixed)),
            files=w.count("in_files", len(files)),
            manual=w.count("sites", len(manual)),
        ),
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

    codes = Counter(d.code for d in result.diagnostics)
    ordered = sorted(codes, key=lambda c: list(by_code).index(c) if c in by_code else 99)
    lo, hi = parse_version(result.from_version), parse_version(result.to_version)
    w.heading("why")
    for code in ordered:
        rule = by_code.get(code)
        if rule is None:
            continue
        when = w.say("every") if rule.data_driven else w.say("since", release=rule.introduced_in)
        w.add(f"- **{code}** ({rule.id}, {when}): {_summary(rule, w)}")
        for ref in rule.references(lo, hi):
            shown = ref if lang == "en" else " ".join(_urls(ref))
            if shown:
                w.add(f"  - {shown}")
    released = [a for a in report.inventory.changed if a.releases]
    if released:
        w.add("", w.say("why_apis"), "")
        for a in released[:_LISTED]:
            kinds = ", ".join(f"`{k}`" for k in dict.fromkeys(k for k, _ in a.changes))
            w.add(f"- `{a.api}`: {w.say('changed_in', releases=', '.join(a.releases))} ({kinds})")
        if len(released) > _LISTED:
            w.add(f"- {w.say('more', n=len(released) - _LISTED)}")

    symbols = _key_symbols(result)
    names_in = {path: [n for n, _ in where] for path, where in symbols}
    _breakdown(w, result, by_code, names_in)

    w.heading("files")
    w.add(
        w.say("file_head") + f" {w.say('why_file')} |",
        "| --- | --- | --- | --- | --- | ---: | --- |",
    )
    for path in sorted({d.path for d in result.diagnostics}):
        here = [d for d in result.diagnostics if d.path == path]
        rules = ", ".join(sorted({d.code for d in here}))
        role = _role(path)
        module = _module_of(path) or "-"
        areas = sorted({_area(d) for d in here}, key=_AREAS.index)
        why = "; ".join(w.say(a.replace("area_", "reason_"), target=target) for a in areas)
        w.add(
            f"| `{path}` | {module} | {w.say(role)} | {w.say(_type(role, here))} | {rules} |"
            f" {len(here)} | {why} |"
        )

    if symbols:
        w.heading("symbols")
        for path, where in symbols[:_LISTED]:
            w.add(f"- `{path}`: " + ", ".join(f"`{n}` ({codes_})" for n, codes_ in where))
        if len(symbols) > _LISTED:
            w.add(f"- {w.say('more', n=len(symbols) - _LISTED)}")

    excerpts = _excerpts(result)
    if excerpts:
        w.heading("hunks")
        for path, d, hunk in excerpts:
            note = w.say("excerpt_note", what=_what(d, w, by_code.get(d.code)))
            w.add(f"`{path}`", "", note, "", "```diff", *hunk, "```", "")
        w.lines.pop()

    inv = report.inventory
    untested = [a.api for a in inv.changed if a.sites and a.tests == 0]
    install = sorted({d.path for d in result.diagnostics if d.code in ("FI006", "FI007")})
    infra = [p for p in install if _role(p) == "role_infra"]
    w.heading("checklist")
    checks = [
        w.say(
            "check_site",
            where=f"{d.path}:{d.line}",
            code=d.code,
            what=_brief(d, w, by_code),
        )
        for d in manual[:_LISTED]
    ]
    if len(manual) > _LISTED:
        checks.append(f"[ ] {w.say('more', n=len(manual) - _LISTED)}")
    if codes.get("FI004"):
        checks.append(w.say("check_group"))
    behaviour = [c for c in ("FI003", "FI008", "FI012") if c in codes]
    if behaviour:
        checks.append(w.say("check_behaviour", codes=", ".join(behaviour)))
    if infra:
        checks.append(
            w.say("check_install", target=target, files=_listed(w, [f"`{p}`" for p in infra]))
        )
    if untested:
        checks.append(
            w.say(
                "check_untested",
                apis=_listed(w, [f"`{a}`" for a in untested]),
                target=target,
                them=w.say("it" if len(untested) == 1 else "them"),
            )
        )
    checks.append(w.say("check_verify", target=target, verify=report.verify))
    w.add(*(f"- {c}" for c in checks))

    w.heading("person")
    if manual:
        w.add(*(_site(d, w, by_code.get(d.code)) for d in manual))
    else:
        w.add(w.say("person_none"))

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
        noted: list[tuple[str, list[Behaviour | Deprecated]]] = []
        for a in inv.changed:
            # (a default that keeps what the call does is `usage`'s, not a reviewer's)
            notes = [n for n in a.notes if isinstance(n, (Behaviour, Deprecated))]
            said = [f"`{k}`" for k in dict.fromkeys(k for k, _ in a.changes)]
            if notes:
                said.append(w.count("release_notes", len(notes)))
                noted.append((a.api, notes))
            listed = f": {', '.join(said)}" if said else ""
            w.add(f"- `{a.api}` ({w.count('sites', len(a.sites))}){listed}")
        if noted:
            n = sum(len(notes) for _, notes in noted)
            w.add("", f"<details><summary>{w.say('notes_of_apis', n=n)}</summary>", "")
            for api, notes in noted:
                w.add(f"- `{api}`", *(f"  - {_note(note, w)}" for note in notes))
            w.add("", "</details>")
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
    behaviour_risks = [f"{c} ({w.say('beh_' + c)})" for c in sorted(codes) if c in _BEHAVIOUR]
    if behaviour_risks:
        risks.append(w.say("risk_behaviour", what=", ".join(behaviour_risks)))
    if install:
        risks.append(w.say("risk_install", files=", ".join(f"`{p}`" for p in install)))
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
    _impact(w, result, report, install, behaviour)
    tags = _tags(result, codes, install, untested)
    w.add("", f"**{w.say('tags')}**{w.say('colon')}" + ", ".join(w.say(t) for t in tags))

    w.heading("verify")
    _verify_section(w, report, result.to_version)

    w.heading("pins")
    w.add(*(f"- `{p}`" for p in report.pins) if report.pins else (w.say("pins_none"),))

    w.heading("how")
    for code in ordered:
        sites = [d for d in result.diagnostics if d.code == code]
        done = sum(1 for d in sites if d.applies)
        w.add(
            f"### {code}: {done} {w.say('fixed')}, {len(sites) - done} {w.say('for_person')}",
            "",
        )
        w.add(*(_site(d, w, by_code.get(code)) for d in sites[:_LISTED]))
        if len(sites) > _LISTED:
            w.add(f"- {w.say('more', n=len(sites) - _LISTED)}")
        w.add("")
    if w.lines[-1] == "":
        w.lines.pop()

    w.heading("related")
    related = list(
        dict.fromkeys(
            u
            for c in ordered
            if c in by_code
            for r in by_code[c].references(lo, hi)
            for u in _urls(r)
        )
    )
    w.add(*(f"- {u}" for u in related) if related else (w.say("related_none"),))
    if result.notices:
        w.heading("notes")
        if lang == "en":
            w.add(*(f"- {n}" for n in result.notices))
        else:  # (the tool's notices are in English only)
            w.add(w.say("notes_english", n=len(result.notices)))
    return "\n".join(w.lines) + "\n"


def _breakdown(
    w: _Writer,
    result: RunResult,
    by_code: dict[str, type[Rule]],
    names_in: dict[str, list[str]],
) -> None:
    """The implementation breakdown: one numbered item per area the sites fall in, naming its
    files and symbols, what was done and what is left, and what the rules do there."""
    w.heading("breakdown")
    by_area: dict[str, list[Diagnostic]] = {}
    for d in result.diagnostics:
        by_area.setdefault(_area(d), []).append(d)
    number = 0
    for area in _AREAS:
        sites = by_area.get(area)
        if not sites:
            continue
        number += 1
        paths = list(dict.fromkeys(d.path for d in sites))
        names = list(
            dict.fromkeys(n for p in paths for n in names_in.get(p, []) if n != "(module)")
        )
        done = sum(1 for d in sites if d.applies)
        left = len(sites) - done
        rules = [by_code[c] for c in dict.fromkeys(d.code for d in sites) if c in by_code]
        what = "; ".join(_summary(r, w) for r in rules)
        item = w.say(
            "area_item",
            title=w.say(area),
            done=w.count("fixes", done) + (w.say("area_left", n=left) if left else ""),
            files=_listed(w, [f"`{p}`" for p in paths]),
            symbols=w.say("area_symbols", names=_listed(w, [f"`{n}`" for n in names]))
            if names
            else "",
            what=what,
        )
        w.add(f"{number}. {item}")


def _impact(
    w: _Writer, result: RunResult, report: Report, install: list[str], behaviour: list[str]
) -> None:
    target = result.to_version
    checks = sorted({d.path for d in result.diagnostics if _checks_at_start(d)})
    infra = [p for p in install if _role(p) == "role_infra"]
    cubin = any(
        "flashinfer-cubin" in d.message and "index" in d.message for d in result.diagnostics
    )
    if install or checks:
        users = w.say("users_pins", target=target)
        if checks:
            users += w.say("users_check", files=_listed(w, [f"`{p}`" for p in checks]))
        if cubin:
            users += w.say("users_cubin")
    else:
        users = w.say("users_none")
    systems = []
    if infra:
        systems.append(
            w.say("systems_infra", target=target, files=_listed(w, [f"`{p}`" for p in infra]))
        )
    if behaviour:
        systems.append(w.say("systems_behaviour", codes=", ".join(behaviour)))
    team = w.say("team_text", manual=w.count("sites", len(result.manual)), target=target)
    sep = "；" if w.lang == "zh" else "; "
    w.add(
        "",
        f"**{w.say('impact')}**{w.say('colon').rstrip()}",
        "",
        f"- {w.say('impact_users', what=users)}",
        f"- {w.say('impact_systems', what=sep.join(systems) or w.say('systems_none'))}",
        f"- {w.say('impact_team', what=team)}",
    )


def _tags(
    result: RunResult, codes: Counter[str], install: list[str], untested: list[str]
) -> list[str]:
    tags = ["tag_upgrade"]
    if any(c in codes for c in ("FI001", "FI002", "FI010", "FI011")):
        tags.append("tag_binding")
    if install:
        tags.append("tag_install")
    if any(c in codes for c in ("FI003", "FI008", "FI012")):
        tags.append("tag_behaviour")
    if "FI004" in codes:
        tags.append("tag_multi_gpu")
    if any(_area(d) == "area_tests" for d in result.diagnostics):
        tags.append("tag_tests")
    if untested:
        tags.append("tag_coverage")
    return tags


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
_HUNK_LINES = 14  # lines of each file's hunk


def _excerpts(result: RunResult) -> list[tuple[str, Diagnostic, list[str]]]:
    """The changes a reviewer reads first, by importance (test conversions and API rewrites
    before version checks and pins; then the files with most fixes): of each file, the hunk of
    its most important fix, bounded, with that fix. (Only when the run computed the new text:
    `diff`, `apply`, `upgrade`.)"""
    import difflib

    def importance(d: Diagnostic) -> int:
        return 0 if _area(d) == "area_tests" else _IMPORTANCE.get(d.code, 1)

    changed = [f for f in result.changed if f.old_text is not None and f.new_text is not None]
    firsts = {
        f.path: min((d for d in f.diagnostics if d.applies), key=lambda d: (importance(d), d.line))
        for f in changed
        if any(d.applies for d in f.diagnostics)
    }
    ranked = sorted(
        (f for f in changed if f.path in firsts),
        key=lambda f: (importance(firsts[f.path]), -sum(d.applies for d in f.diagnostics), f.path),
    )
    out = []
    for f in ranked[:_EXCERPTS]:
        assert f.old_text is not None and f.new_text is not None
        first = firsts[f.path]
        lines = list(
            difflib.unified_diff(f.old_text.splitlines(), f.new_text.splitlines(), n=1, lineterm="")
        )[2:]
        hunks: list[list[str]] = []
        for line in lines:
            if line.startswith("@@"):
                hunks.append([])
            if hunks:
                hunks[-1].append(line)
        hunk = next((h for h in hunks if _covers(h[0], first.line)), hunks[0] if hunks else [])
        if len(hunk) > _HUNK_LINES:
            hunk = [*hunk[:_HUNK_LINES], "..."]
        out.append((f.path, first, hunk))
    return out


def _covers(header: str, line: int) -> bool:
    """Whether the hunk of ``header`` (``@@ -a,b +c,d @@``) holds the old text's ``line``."""
    found = re.match(r"@@ -(\d+)(?:,(\d+))?", header)
    if found is None:
        return False
    start, length = int(found.group(1)), int(found.group(2) or 1)
    return start <= line < start + max(length, 1)


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
        # (the reason is the test's prose: as code in another language than English)
        f"`{r['test']}` ({_quoted(r.get('detail') or '?', w)})"
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
        if w.lang != "en":  # (the test's words as code; the notes as they say it in Chinese)
            said = _quoted(said, w) if said else ""
            zh = "；".join(r.get("why_zh") or [])
            why = (w.say("verify_why", why=zh) if zh else w.say("verify_noted")) if why else ""
            reason = "；".join(p for p in (said, why) if p)
        else:
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
