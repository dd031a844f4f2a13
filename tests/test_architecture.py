"""The shape of the package, checked: no import cycles, and rules that never reach into the
engine (they see files through `migrate_fi.rule` and the rule-facing modules only)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "migrate_fi"

# The engine side: what runs the rules, settles and applies their fixes, writes, reports. A rule
# that imported one of these would depend on how it is run.
ENGINE_SIDE = {
    "migrate_fi.cache",
    "migrate_fi.cli",
    "migrate_fi.cstedit",
    "migrate_fi.docs",
    "migrate_fi.engine",
    "migrate_fi.fixes",
    "migrate_fi.importwords",
    "migrate_fi.junit",
    "migrate_fi.migration",
    "migrate_fi.patching",
    "migrate_fi.pipeline",
    "migrate_fi.reading",
    "migrate_fi.record",
    "migrate_fi.reexports",
    "migrate_fi.registry",
    "migrate_fi.report",
    "migrate_fi.reporting",
    "migrate_fi.sarif",
    "migrate_fi.sources",
    "migrate_fi.suppression",
    "migrate_fi.textedit",
    "migrate_fi.usage",
    "migrate_fi.verify",
    "migrate_fi.workers",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module of the package that ``name`` imports, at any depth of its code (an import
    inside a function or under TYPE_CHECKING is an edge all the same)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            named = [target, *(f"{target}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            named = [a.name for a in node.names]
        else:
            continue
        out.update(m for m in named if m in known and m != name)
    return out


def test_no_import_cycles() -> None:
    known = _modules()
    graph = {name: _imports(name, path, known) for name, path in known.items()}
    cycles = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            cycles.append(" -> ".join([*trail[trail.index(name) :], name]))
            return
        if name in done:
            return
        for other in sorted(graph[name]):
            visit(other, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert not cycles, cycles


def test_rules_never_import_the_engine() -> None:
    known = _modules()
    reached = {
        name: sorted(_imports(name, path, known) & ENGINE_SIDE)
        for name, path in known.items()
        if name.startswith("migrate_fi.rules")
    }
    assert not {k: v for k, v in reached.items() if v}
    assert "migrate_fi.rules.positional_binding" in reached  # (the walk found the rules)


def test_the_contributing_example_is_a_working_rule() -> None:
    """The worked example of CONTRIBUTING.md, run as it is written: it finds the call it is
    about, through an alias, and leaves a look-alike of another library alone."""
    import re

    from migrate_fi.pipeline import Mode, process_source
    from migrate_fi.rule import RunOptions
    from migrate_fi.versions import parse_version

    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?class TopKRenormBound.*?)```", text, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    exec(compile(textwrap_dedent(block.group(1)), "CONTRIBUTING.md", "exec"), namespace)
    rule = namespace["TopKRenormBound"]
    rule.id = "top_k_renorm_bound"  # type: ignore[attr-defined]
    source = (
        "import flashinfer.sampling as s\n"
        "from mylib import top_k_renorm_probs\n"
        "s.top_k_renorm_probs(p, 1 << 30)\n"
        "top_k_renorm_probs(p, 1 << 30)\n"
        "s.top_k_renorm_probs(p, top_k=4000000000)\n"
    )
    options = RunOptions(parse_version("0.7.2.post1"), parse_version("0.7.4"))
    result = process_source(source.encode(), "m.py", [rule], options, Mode.CHECK)  # type: ignore[list-item]
    assert result.error is None, result.error
    assert [(d.line, d.code) for d in result.diagnostics] == [(5, "FI012")]


def textwrap_dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code)
