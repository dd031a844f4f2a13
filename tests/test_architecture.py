"""The shape of the package, checked: the layers of `docs/architecture.md`, imports that only
point down, no import cycle, and a layout section that matches the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "migrate_fi"
CODEMODS = ROOT / "codemods"  # installed as `migrate_fi.codemods`

# Each part of the package and its layer: a module may import from a lower layer and from its
# own part, never from a higher layer or from another part of its own layer. The package's
# `__init__` (the version) is below everything.
LAYERS = {
    "migrate_fi": -1,
    "migrate_fi.base": 0,
    "migrate_fi.analysis": 1,
    "migrate_fi.editing": 1,
    "migrate_fi.api": 2,
    "migrate_fi.project": 3,
    "migrate_fi.framework": 3,
    "migrate_fi.codemods": 4,
    "migrate_fi.verify": 4,
    "migrate_fi.run": 5,
    "migrate_fi.outputs": 6,
    "migrate_fi.cli": 7,
    "migrate_fi.__main__": 8,
}


def _modules() -> dict[str, Path]:
    out = {}
    for root, prefix in ((PACKAGE, ("migrate_fi",)), (CODEMODS, ("migrate_fi", "codemods"))):
        for path in root.rglob("*.py"):
            if root == PACKAGE and CODEMODS in path.parents:
                continue
            parts = (*prefix, *path.relative_to(root).with_suffix("").parts)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every module of the package that ``name`` imports, at any depth of its code (an import
    inside a function or under TYPE_CHECKING is an edge all the same, and so is a module named
    to `importlib.import_module`)."""
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
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            named = [node.args[0].value]
        else:
            continue
        out.update(m for m in named if m in known and m != name)
    return out


def _part(module: str) -> str:
    parts = module.split(".")
    for size in (2, 1):
        if ".".join(parts[:size]) in LAYERS:
            return ".".join(parts[:size])
    raise AssertionError(f"{module} is in no layer of LAYERS")


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def test_every_module_has_a_layer() -> None:
    graph = _graph()
    assert "migrate_fi.codemods.positional_binding" in graph  # (the walk found the rules)
    assert "migrate_fi.run.engine" in graph
    for name in graph:
        _part(name)


def test_imports_only_point_down() -> None:
    wrong = []
    for name, imported in sorted(_graph().items()):
        here = _part(name)
        for other in sorted(imported):
            there = _part(other)
            if there != here and LAYERS[there] >= LAYERS[here]:
                wrong.append(f"{name} imports {other}")
    assert not wrong, wrong


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check is not blind: an import of the engine from a rule, inside a function, is an
    edge it reports."""
    rule = tmp_path / "rule.py"
    rule.write_text("def f():\n    from migrate_fi.run import engine\n")
    known = {"migrate_fi.run.engine": PACKAGE / "run" / "engine.py", "migrate_fi.codemods.x": rule}
    assert _imports("migrate_fi.codemods.x", rule, known) == {"migrate_fi.run.engine"}
    assert LAYERS[_part("migrate_fi.run.engine")] > LAYERS[_part("migrate_fi.codemods.x")]


def test_no_import_cycles() -> None:
    graph = _graph()
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


def test_each_part_says_what_it_owns_and_may_import() -> None:
    for part, layer in LAYERS.items():
        if layer < 0 or part in ("migrate_fi.cli", "migrate_fi.__main__"):
            continue
        init = CODEMODS if part == "migrate_fi.codemods" else PACKAGE / part.split(".")[1]
        doc = ast.get_docstring(ast.parse((init / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "May import:" in doc, part


def test_the_architecture_layout_matches_the_tree() -> None:
    """The layout section of docs/architecture.md names every module of the tree, and nothing
    that is not there."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```\n(.*?)```", section, re.S)
    assert block is not None
    named = set()
    folders: list[str] = []  # the folder at each depth of indentation (two spaces a depth)
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip())) // 2
        entry = line.split()[0]
        del folders[depth:]
        if entry.endswith("/"):
            folders.append(entry)
        elif entry.endswith(".py"):
            named.add("".join(folders) + entry)
    present = {
        str(p.relative_to(ROOT))
        for p in [*PACKAGE.rglob("*.py"), *CODEMODS.rglob("*.py")]
        if p.name != "__init__.py" or p.parent == PACKAGE
    }
    assert named == present, (sorted(present - named), sorted(named - present))


def test_the_contributing_example_is_a_working_rule() -> None:
    """The worked example of CONTRIBUTING.md, run as it is written: it finds the call it is
    about, through an alias, and leaves a look-alike of another library alone."""
    import re

    from migrate_fi.base.versions import parse_version
    from migrate_fi.framework.rule import RunOptions
    from migrate_fi.run.pipeline import Mode, process_source

    text = (PACKAGE.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?class TopKRenormBound.*?)```", text, re.S)
    assert block is not None
    namespace: dict[str, object] = {}
    code = textwrap_dedent(block.group(1)).replace("from ._", "from migrate_fi.codemods._")
    exec(compile(code, "CONTRIBUTING.md", "exec"), namespace)
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
    assert [(d.line, d.code) for d in result.diagnostics] == [(5, "FI014")]


def textwrap_dedent(code: str) -> str:
    import textwrap

    return textwrap.dedent(code)
