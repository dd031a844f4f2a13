"""Messages are said in English and Chinese in one place (`migrate_fi.base.messages.say`): the
two templates of every `say` name the same fields, the Chinese one is Chinese (code in
backquotes), and the release notes and value maps say their text in Chinese too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from migrate_fi.base.messages import Said, fields_of, join, say

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(ROOT / "migrate_fi").rglob("*.py"), *(ROOT / "codemods").glob("*.py")])
# a run of three English words (what a Chinese sentence must not hold outside code)
ENGLISH = re.compile(r"[A-Za-z][A-Za-z'-]*(?:[ ,]+[A-Za-z][A-Za-z'-]*){2,}")
CJK = re.compile(r"[\u4e00-\u9fff]")


def _prose(text: str) -> str:
    """``text`` without its code spans, fields, links and file references."""
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\{[^{}]*\}", "", text)
    return re.sub(r"https?://\S+", "", text)


def _says() -> list[tuple[str, int, str, str]]:
    """Every ``say(en, zh, ...)`` of the package and the rules: (file, line, en, zh)."""
    out = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "say"
                and len(node.args) >= 2
            ):
                en, zh = node.args[:2]
                assert isinstance(en, ast.Constant) and isinstance(zh, ast.Constant), (
                    f"{path}:{node.lineno}: say() takes its two templates as literals"
                )
                out.append((str(path.relative_to(ROOT)), node.lineno, en.value, zh.value))
    return out


SAYS = _says()


def test_the_rules_say_their_messages_in_both_languages() -> None:
    files = {path for path, *_ in SAYS}
    # (every rule that reports says its messages with `say`: a plain string does not type-check)
    assert len(SAYS) > 150 and len(files) >= 15


@pytest.mark.parametrize(("path", "line", "en", "zh"), SAYS, ids=[f"{p}:{n}" for p, n, *_ in SAYS])
def test_both_templates_name_the_same_fields_and_the_chinese_one_is_chinese(
    path: str, line: int, en: str, zh: str
) -> None:
    assert fields_of(en) == fields_of(zh)
    if not en:
        assert not zh  # (nothing to say in either)
        return
    prose = _prose(zh)
    assert ENGLISH.findall(prose) == []
    if re.search(r"[A-Za-z]{2}", _prose(en)):  # (a message with words, not only code)
        assert CJK.search(zh), zh


def test_fields_are_filled_in_each_language() -> None:
    inner = say("gone", "已删除")
    told = say("{api}: {what} at line {n}", "{api}：第 {n} 行{what}", api="f", what=inner, n=3)
    assert told == Said("f: gone at line 3", "f：第 3 行已删除")
    assert told + say("; more", "；更多") == Said(
        "f: gone at line 3; more", "f：第 3 行已删除；更多"
    )
    assert join([say("a", "甲"), say("b", "乙")]) == Said("a; b", "甲；乙")
    assert told.text("zh") == "f：第 3 行已删除" and told.text("en") == "f: gone at line 3"
    # a field said in English only (a plural) is nothing in Chinese
    lines = say("at line{s} 3, 4", "第 3, 4 行{s}", s=Said("s", ""))
    assert lines == Said("at lines 3, 4", "第 3, 4 行")
    assert fields_of("{a!r} {b:>3} {c.d} {{literal}}") == {"a", "b", "c"}


def test_every_bundled_note_and_value_map_says_its_text_in_chinese() -> None:
    from migrate_fi.api.notes import Behaviour, Deprecated, Same, load_notes
    from migrate_fi.api.value_changes import load_value_changes

    notes = load_notes()
    assert len(notes) > 200
    for note in notes:
        if isinstance(note, Behaviour):
            en, zh = note.what, note.what_zh
        else:
            assert isinstance(note, (Same, Deprecated))
            en, zh = note.why, note.why_zh
        assert zh and CJK.search(zh), (note.release, note.api, en)
        assert ENGLISH.findall(_prose(zh)) == [], (note.release, note.api, zh)
    for change in load_value_changes():
        assert change.reason_zh and ENGLISH.findall(_prose(change.reason_zh)) == []


def test_every_site_of_the_demo_has_its_chinese_message() -> None:
    from click.testing import CliRunner

    from migrate_fi.cli import cli

    projects = ROOT / "tests" / "fixtures" / "projects"
    r = CliRunner().invoke(
        cli,
        ["check", "--no-cache", "--output-format", "json", str(projects / "demo")],
        catch_exceptions=False,
    )
    import json

    sites = json.loads(r.stdout)["diagnostics"]
    assert len(sites) >= 10
    for site in sites:
        assert CJK.search(site["message_zh"]), site
        assert ENGLISH.findall(_prose(site["message_zh"])) == [], site["message_zh"]
