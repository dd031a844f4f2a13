"""The edit helpers (`migrate_fi.editing.edits`) and how `migrate_fi.editing.cstedit` applies them."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from migrate_fi.editing.cstedit import add_imports, apply_edits, apply_edits_in_regions, parse_exact
from migrate_fi.editing.edits import (
    AddImport,
    EditError,
    InsertStatements,
    Replace,
    ReplaceStatements,
    add_dict_entry,
    add_keyword,
    check_overlaps,
    keywordize,
    merge_same_node,
    remove_arguments,
    remove_imported_names,
    remove_keyword,
    replace_with,
)


def span(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]


def first(source: str, kind: type) -> ast.AST:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, kind))


def statements(source: str) -> list[ast.stmt]:
    """Every statement, in source order."""
    found = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.stmt)]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def edit(source: str, *edits, imports=()) -> str:
    """The edits applied to the whole module, and (what the engine does) to the regions they
    touch: both must give the same text, or fail alike."""
    labeled = [(f"edit {i}", e) for i, e in enumerate(edits)]
    try:
        whole = apply_edits(parse_exact(source), labeled, imports).code
    except EditError:
        with pytest.raises(EditError):
            apply_edits_in_regions(source, ast.parse(source), labeled, imports)
        raise
    assert apply_edits_in_regions(source, ast.parse(source), labeled, imports) == whole
    return whole


def on_call(source: str, transform) -> str:
    return edit(source, Replace(span(first(source, ast.Call)), "Call", transform))


# ----------------------------------------------------------------- call arguments


def test_keywordize_keeps_values_and_comments() -> None:
    src = "f(a,  # first\n  b, c)\n"
    assert on_call(src, keywordize({1: "y", 2: "z"})) == "f(a,  # first\n  y=b, z=c)\n"


def test_keywordize_refuses_a_keyword_argument() -> None:
    with pytest.raises(EditError):
        on_call("f(a, k=1)\n", keywordize({1: "k"}))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("f()\n", "f(group=g)\n"),
        ("f(a)\n", "f(a, group=g)\n"),
        ("f(a, b=1)\n", "f(a, b=1, group=g)\n"),
        ("f(**kw)\n", "f(**kw, group=g)\n"),
        # one per line, trailing comma: stays so
        ("f(\n    a,\n    b,\n)\n", "f(\n    a,\n    b,\n    group=g,\n)\n"),
        ("f(\n    a,\n)\n", "f(\n    a,\n    group=g,\n)\n"),
        # one per line, no trailing comma
        ("f(a,\n  b)\n", "f(a,\n  b,\n  group=g)\n"),
        # on their own line, the closing parenthesis on the next
        ("f(\n    a, b=1\n)\n", "f(\n    a, b=1, group=g\n)\n"),
        ("f(\n    a\n)\n", "f(\n    a,\n    group=g\n)\n"),
        # comment lines before the last argument stay its own, never copied to the new one
        (
            "f(\n    a=1,\n    # why b\n    # is off\n    b=False,\n)\n",
            "f(\n    a=1,\n    # why b\n    # is off\n    b=False,\n    group=g,\n)\n",
        ),
        ("f(a,\n  # c\n  b)\n", "f(a,\n  # c\n  b,\n  group=g)\n"),
    ],
)
def test_add_keyword_follows_the_layout(source: str, expected: str) -> None:
    assert on_call(source, add_keyword("group", "g")) == expected


def test_add_keyword_never_twice() -> None:
    with pytest.raises(EditError):
        on_call("f(group=x)\n", add_keyword("group", "g"))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("f(a, b=1, c=2)\n", "f(a, c=2)\n"),
        ("f(a, c=2, b=1)\n", "f(a, c=2)\n"),
        ("f(\n    a,\n    b=1,\n)\n", "f(\n    a,\n)\n"),
        ("f(\n    a, b=1\n)\n", "f(\n    a\n)\n"),
        # the comments of the others stay; the dropped one's goes with it
        ("f(\n    a,  # keep\n    b=1,  # drop\n)\n", "f(\n    a,  # keep\n)\n"),
        ("f(\n    a,  # keep\n    b=1  # drop\n)\n", "f(\n    a  # keep\n)\n"),
        ("f(\n    a,\n    b=1\n    )\n", "f(\n    a\n    )\n"),
        ("f(a, b=1,)\n", "f(a,)\n"),
        ("f(b=1)\n", "f()\n"),
        # the comment lines after the dropped one speak of the next: they stay above it
        (
            "f(\n    a=1,\n    # of b\n    b=None,  # b\n    # of c,\n    # two lines\n"
            "    c=2,\n)\n",
            "f(\n    a=1,\n    # of c,\n    # two lines\n    c=2,\n)\n",
        ),
    ],
)
def test_remove_keyword(source: str, expected: str) -> None:
    assert on_call(source, remove_keyword("b")) == expected


@pytest.mark.parametrize(
    ("source", "drop", "expected"),
    [
        ("f(a, None, None)\n", {1, 2}, "f(a)\n"),
        ("f(a, None, c)\n", {1}, "f(a, c)\n"),
        ("f(\n    a,\n    None,  # x\n    None,\n)\n", {1, 2}, "f(\n    a,\n)\n"),
        ("f(a, None, k=1)\n", {1}, "f(a, k=1)\n"),
        (
            "f(\n    a,\n    None,\n    # of k\n    None,\n    # of k too\n    k=1,\n)\n",
            {1, 2},
            "f(\n    a,\n    # of k too\n    k=1,\n)\n",
        ),
    ],
)
def test_remove_arguments(source: str, drop: set[int], expected: str) -> None:
    assert on_call(source, remove_arguments(drop)) == expected


def test_remove_arguments_never_a_starred_one() -> None:
    with pytest.raises(EditError):
        on_call("f(a, *b)\n", remove_arguments({1}))


def on_import(source: str, transform) -> str:
    return edit(source, Replace(span(first(source, ast.ImportFrom)), "ImportFrom", transform))


@pytest.mark.parametrize(
    ("source", "drop", "expected"),
    [
        ("from m import a, b, c\n", {"b"}, "from m import a, c\n"),
        ("from m import a, b, c\n", {"a"}, "from m import b, c\n"),
        ("from m import a, b, c\n", {"c"}, "from m import a, b\n"),
        ("from m import a as x, b as y\n", {"a"}, "from m import b as y\n"),
        ("from m import (a, b)\n", {"b"}, "from m import (a)\n"),
        # (a comment on a dropped name's line goes with it; the others' stay)
        (
            "from m import (\n    a,  # ca\n    b,  # cb\n    c,\n)\n",
            {"b"},
            "from m import (\n    a,  # ca\n    c,\n)\n",
        ),
        (
            "from m import (\n    a,  # ca\n    b,  # cb\n)\n",
            {"b"},
            "from m import (\n    a,  # ca\n)\n",
        ),
        (
            "from m import (\n    a,  # ca\n    b  # cb\n)\n",
            {"b"},
            "from m import (\n    a  # ca\n)\n",
        ),
        ("from m import (a,\n               b)\n", {"b"}, "from m import (a)\n"),
    ],
)
def test_remove_imported_names(source: str, drop: set[str], expected: str) -> None:
    assert on_import(source, remove_imported_names(drop)) == expected


@pytest.mark.parametrize("drop", [{"a", "b"}, {"z"}])
def test_remove_imported_names_keeps_one_and_drops_one_at_least(drop: set[str]) -> None:
    with pytest.raises(EditError):
        on_import("from m import a, b\n", remove_imported_names(drop))


def test_replace_with_keeps_parentheses() -> None:
    src = "x = (a + b)\n"
    # neither ast's nor LibCST's span of a parenthesized expression includes the parentheses
    node = first(src, ast.BinOp)
    out = edit(src, Replace(span(node), "BinaryOperation", replace_with("c * d")))
    assert out == "x = (c * d)\n"


# ----------------------------------------------------------------------- dicts


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("d = {}\n", 'd = {"group": g}\n'),
        ("d = {'a': 1}\n", "d = {'a': 1, 'group': g}\n"),
        ('d = {\n    "a": 1,\n}\n', 'd = {\n    "a": 1,\n    "group": g,\n}\n'),
        ("d = dict(a=1)\n", "d = dict(a=1, group=g)\n"),
        (
            "d = dict(\n    a=1,\n    b=2,\n)\n",
            "d = dict(\n    a=1,\n    b=2,\n    group=g,\n)\n",
        ),
    ],
)
def test_add_dict_entry(source: str, expected: str) -> None:
    value = ast.parse(source).body[0].value  # type: ignore[attr-defined]
    kind = "Dict" if isinstance(value, ast.Dict) else "Call"
    assert edit(source, Replace(span(value), kind, add_dict_entry("group", "g"))) == expected


def test_add_dict_entry_never_twice() -> None:
    source = 'd = {"group": x}\n'
    value = ast.parse(source).body[0].value  # type: ignore[attr-defined]
    with pytest.raises(EditError):
        edit(source, Replace(span(value), "Dict", add_dict_entry("group", "g")))


# ------------------------------------------------------------------- statements


SOURCE = """\
def test():
    # prepare
    x = 1
    with ctx():
        y = run(x)
    check(y)
"""


def test_insert_before_and_after_statements_take_the_block_indentation() -> None:
    body = statements(SOURCE)
    assign, with_ = body[1], body[2]
    out = edit(
        SOURCE,
        InsertStatements(span(assign), "setup()\nwith a:\n    b()\n"),
        InsertStatements(span(with_), "done()\n", after=True),
    )
    assert out == (
        "def test():\n"
        "    setup()\n"
        "    with a:\n"
        "        b()\n"
        "    # prepare\n"
        "    x = 1\n"
        "    with ctx():\n"
        "        y = run(x)\n"
        "    done()\n"
        "    check(y)\n"
    )


def test_replace_statements_keeps_the_comment_above() -> None:
    body = statements(SOURCE)
    assign, with_ = body[1], body[2]
    out = edit(SOURCE, ReplaceStatements(span(assign), span(with_), "y = run(1)\n"))
    assert out == "def test():\n    # prepare\n    y = run(1)\n    check(y)\n"


def test_replace_statements_with_nothing_removes_them() -> None:
    body = statements(SOURCE)
    out = edit(SOURCE, ReplaceStatements(span(body[4]), span(body[4]), ""))
    assert out == SOURCE.replace("    check(y)\n", "")


def test_crlf_and_two_space_indentation_are_kept() -> None:
    src = "if a:\r\n  x = 1\r\n"
    assign = statements(src)[1]
    out = edit(src, InsertStatements(span(assign), "with b:\n    c()\n"))
    assert out == "if a:\r\n  with b:\r\n    c()\r\n  x = 1\r\n"


def test_an_anchor_that_is_not_a_statement_start_fails() -> None:
    with pytest.raises(EditError, match="could not locate"):
        edit(SOURCE, InsertStatements((3, 8, 3, 9), "z()\n"))


def test_statements_that_do_not_parse_fail() -> None:
    with pytest.raises(EditError, match="do not parse"):
        edit(SOURCE, InsertStatements(span(statements(SOURCE)[1]), "def (\n"))


# --------------------------------------------------------------------- overlaps


def test_overlapping_edits_are_a_bug_of_the_rule() -> None:
    src = "f(g(x))\n"
    outer, inner = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)]
    with pytest.raises(EditError, match="overlap"):  # the outer edit would drop the inner one
        edit(
            src,
            Replace(span(outer), "Call", replace_with("h()")),
            Replace(span(inner), "Call", add_keyword("b", "2")),
        )
    with pytest.raises(EditError, match="overlap"):  # the inner one replaces the outer's node
        edit(
            src,
            Replace(span(inner), "Call", replace_with("h()")),
            Replace(span(inner), "Call", add_keyword("b", "2")),
        )


def test_a_call_inside_an_argument_of_a_call_whose_arguments_get_named() -> None:
    # fp4_quantize(fp4_quantize(...7 args), ...7 args): both are fixed, the inner one first
    src = "f(g(x, 1), 2)\n"
    outer, inner = [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)]
    out = edit(
        src,
        Replace(span(outer), "Call", keywordize({1: "b"})),
        Replace(span(inner), "Call", keywordize({1: "k"})),
    )
    assert out == "f(g(x, k=1), b=2)\n"
    out = edit(
        src,
        Replace(span(outer), "Call", add_keyword("c", "3")),
        Replace(span(inner), "Call", replace_with("h()")),
    )
    assert out == "f(h(), 2, c=3)\n"


def test_same_node_twice_overlaps() -> None:
    call = span(first("f(x)\n", ast.Call))
    with pytest.raises(EditError, match="overlap"):
        check_overlaps([("a", Replace(call, "Call", str)), ("b", Replace(call, "Call", str))])


def test_insertions_at_a_range_edge_do_not_overlap() -> None:
    body = statements(SOURCE)
    assign, with_ = body[1], body[2]
    check_overlaps(
        [
            ("a", ReplaceStatements(span(assign), span(with_), "")),
            ("b", InsertStatements(span(assign), "z()\n")),
            ("c", InsertStatements(span(assign), "w()\n")),
            ("d", InsertStatements(span(with_), "v()\n", after=True)),
        ]
    )
    inner = span(statements(SOURCE)[3])  # `y = run(x)`, inside the replaced range
    assert inner[0] == 5
    with pytest.raises(EditError):
        check_overlaps(
            [
                ("a", ReplaceStatements(span(assign), span(with_), "")),
                ("b", InsertStatements(inner, "z()\n")),
            ]
        )


# ---------------------------------------------------------------------- imports


def imports(source: str, *needs: AddImport) -> str:
    whole = add_imports(cst.parse_module(source), needs).code
    # the engine parses only the import header for them: the same text
    assert apply_edits_in_regions(source, ast.parse(source), [], needs) == whole
    return whole


def test_import_already_there_is_not_added() -> None:
    src = "import torch\n\nx = torch.ones(1)\n"
    assert imports(src, AddImport("torch")) == src
    assert imports("import torch.cuda\n", AddImport("torch")) == "import torch.cuda\n"


def test_import_goes_after_the_import_block() -> None:
    src = '"""Doc."""\n\nfrom __future__ import annotations\n\nimport os\n\nX = 1\n'
    assert imports(src, AddImport("torch")) == (
        '"""Doc."""\n\nfrom __future__ import annotations\n\nimport os\nimport torch\n\nX = 1\n'
    )


def test_import_after_docstring_when_there_is_none() -> None:
    assert imports('"""Doc."""\nX = 1\n', AddImport("torch")) == (
        '"""Doc."""\n\nimport torch\nX = 1\n'
    )
    assert imports("X = 1\n", AddImport("torch")) == "import torch\nX = 1\n"


def test_from_import_is_merged() -> None:
    """Where isort and Ruff would sort the name (constants, classes, the rest), when the names
    are sorted; last when they are not; in the list's own layout."""
    assert imports("from torch import nn\n", AddImport("torch", "cuda")) == (
        "from torch import cuda, nn\n"
    )
    src = "from torch import (\n    nn,\n    optim,\n)\n"
    assert imports(src, AddImport("torch", "cuda")) == (
        "from torch import (\n    cuda,\n    nn,\n    optim,\n)\n"
    )
    assert imports(src, AddImport("torch", "xpu")) == (
        "from torch import (\n    nn,\n    optim,\n    xpu,\n)\n"
    )
    assert (
        imports(
            "from flashinfer import GatedActType, fp4_quantize\n",
            AddImport("flashinfer", "ActivationType"),
        )
        == "from flashinfer import ActivationType, GatedActType, fp4_quantize\n"
    )
    # not sorted: appended
    assert imports("from torch import optim, nn\n", AddImport("torch", "cuda")) == (
        "from torch import optim, nn, cuda\n"
    )


def test_imports_are_never_duplicated() -> None:
    out = imports("import os\n", AddImport("torch"), AddImport("torch"), AddImport("os"))
    assert out == "import os\nimport torch\n"


def test_guarded_imports_belong_to_the_block() -> None:
    src = "import os\ntry:\n    import x\nexcept ImportError:\n    x = None\n\nY = 1\n"
    assert imports(src, AddImport("torch")) == (
        "import os\ntry:\n    import x\nexcept ImportError:\n    x = None\nimport torch\n\nY = 1\n"
    )
    src = "import os\nif TYPE_CHECKING:\n    import x\nY = 1\n"
    assert imports(src, AddImport("torch")) == (
        "import os\nif TYPE_CHECKING:\n    import x\nimport torch\nY = 1\n"
    )


# ---------------------------------------------------------------------- regions


def test_regions_keep_every_byte_outside_the_statements_they_edit() -> None:
    # LibCST would be given only the call's statement: the rest of the file need not even be
    # something it can print back (a form feed, odd layout), and is kept byte for byte
    source = (
        "import flashinfer\n"
        "\x0c\n"
        "def a():  # a comment\n"
        "\treturn 1\n"
        "\n\n"
        "@decorator(\n    1,\n)\n"
        "def b(x):\n"
        "    return flashinfer.f(x, 2)\n"
        "\n\n"
        "x = 1; y = flashinfer.f(3, 4)\n"
        "z = [\n    1,\n]\n"
    )
    tree = ast.parse(source)
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "flashinfer.f"
    ]
    labeled = [
        (f"e{i}", Replace(span(c), "Call", keywordize({1: "b"}))) for i, c in enumerate(calls)
    ]
    out = apply_edits_in_regions(source, tree, labeled, [AddImport("torch")])
    assert out == (
        source.replace("(x, 2)", "(x, b=2)")
        .replace("(3, 4)", "(3, b=4)")
        .replace("import flashinfer\n", "import flashinfer\nimport torch\n")
    )


def test_regions_far_apart_are_edited_apart() -> None:
    filler = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(2000))
    source = "g(1, 2)\n" + filler + "g(3, 4)\n"
    tree = ast.parse(source)
    calls = [n for n in tree.body if isinstance(n, ast.Expr)]
    labeled = [
        (str(i), Replace(span(c.value), "Call", keywordize({1: "y"}))) for i, c in enumerate(calls)
    ]
    out = apply_edits_in_regions(source, tree, labeled)
    assert out == "g(1, y=2)\n" + filler + "g(3, y=4)\n"


def test_an_edit_outside_every_statement_fails() -> None:
    source = "x = 1\n# a comment\n"
    with pytest.raises(EditError, match="could not locate"):
        apply_edits_in_regions(
            source, ast.parse(source), [("e", Replace((2, 0, 2, 11), "Call", keywordize({})))]
        )


def test_named_arguments_are_spliced_as_text_without_libcst() -> None:
    """FI001/FI002 say their edits as text too: a file whose fixes all can be spliced is
    rewritten without loading LibCST (a file with thousands of sites takes milliseconds), to
    the bytes the LibCST transforms give (tests/test_fixtures.py compares the two on every
    case)."""
    import subprocess
    import sys
    from pathlib import Path

    case = Path(__file__).parent / "fixtures" / "fp4_quantize_keywords" / "argument_layouts"
    program = (
        "import sys\n"
        "from migrate_fi.framework.rule import RunOptions\n"
        "from migrate_fi.run.pipeline import Mode, process_source\n"
        "from migrate_fi.run.registry import select\n"
        "from migrate_fi.base.versions import parse_version\n"
        "old, new = parse_version('0.6.10'), parse_version('0.6.11')\n"
        "selection = select(old, new, ['FI001'])\n"
        "options = RunOptions(old, new, rules=selection.settings())\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "r = process_source(data, 'm.py', selection.rules, options, Mode.APPLY)\n"
        "assert 'libcst' not in sys.modules, 'LibCST was loaded'\n"
        "sys.stdout.buffer.write(r.new_bytes)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, f"{case}.before.py"], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == Path(f"{case}.after.py").read_bytes()


def test_the_shared_walk_is_ast_walk() -> None:
    """`nodes.walk` gives `ast.walk`'s nodes in `ast.walk`'s order (rules rely on it)."""
    from pathlib import Path

    from migrate_fi.analysis import nodes

    root = Path(__file__).resolve().parent.parent
    for path in sorted(
        [*root.joinpath("migrate_fi").rglob("*.py"), *root.joinpath("codemods").glob("*.py")]
    ):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert [id(n) for n in nodes.walk(tree)] == [id(n) for n in ast.walk(tree)], path
        nodes.release()


def test_the_pruned_walks_find_what_a_whole_walk_finds() -> None:
    """`nodes.on_lines` gives the nodes that span one of the lines (under parents that do; a
    decorated def or class from its first decorator; inside an f-string, every node),
    `nodes.blocks` those that hold statements: what filtering a whole walk would give."""
    from pathlib import Path

    from migrate_fi.analysis import nodes

    def spanning(node: ast.AST, lines: set[int]) -> list[ast.AST]:
        first = getattr(node, "lineno", None)
        if first is not None:
            first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            last = getattr(node, "end_lineno", None) or first
            if not any(first <= x <= last for x in lines):
                return []
        if isinstance(node, ast.JoinedStr):
            return list(ast.walk(node))
        return [node, *(m for c in ast.iter_child_nodes(node) for m in spanning(c, lines))]

    root = Path(__file__).resolve().parent.parent
    for path in sorted(
        [*root.joinpath("migrate_fi").rglob("*.py"), *root.joinpath("codemods").glob("*.py")]
    ):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        last = len(path.read_text(encoding="utf-8").splitlines())
        for lines in ({1}, {last}, set(range(3, last, 17)), {last + 5}):
            expected = {id(n) for n in spanning(tree, lines)}
            assert {id(n) for n in nodes.on_lines(tree, lines)} == expected, (path, lines)
        holding = [
            n for n in ast.walk(tree)
            if any(isinstance(getattr(n, f, None), list) for f in nodes._BLOCKS)
        ]  # fmt: skip
        assert {id(n) for n in nodes.blocks(tree)} == {id(n) for n in holding}, path


# ----------------------------------------------------------- several fixes of one node


def test_edits_of_one_call_are_merged_into_one_rewrite() -> None:
    source = "f(x, 1, 2)\n"
    call = span(first(source, ast.Call))
    two = [
        ("a", Replace(call, "Call", keywordize({1: "one", 2: "two"}))),
        ("b", Replace(call, "Call", add_keyword("extra", "3"))),
    ]
    with pytest.raises(EditError):
        check_overlaps(two)
    merged = merge_same_node(two)
    assert [label for label, _ in merged] == ["a and b"]
    assert edit(source, *(e for _, e in merged)) == "f(x, one=1, two=2, extra=3)\n"


def test_merging_leaves_other_edits_and_their_order_alone() -> None:
    source = "f(g(1), 2)\n"
    outer = span(first(source, ast.Call))
    inner = span([n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)][1])
    edits = [
        ("outer", Replace(outer, "Call", add_keyword("k", "1"))),
        ("inner", Replace(inner, "Call", add_keyword("j", "2"))),
    ]
    assert merge_same_node(edits) == edits
