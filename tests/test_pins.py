"""Where projects write FlashInfer's version (`migrate_fi.project.pins`), and which version a project is on
(`migrate_fi.project.current`): every format, and the look-alikes that must be left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from migrate_fi.project.current import ProjectVersionError, detect_current_version, find_pins
from migrate_fi.project.pins import (
    CUBIN,
    JIT_CACHE,
    MAIN,
    Kind,
    _family_names,
    _gate,
    _python_may_hold,
    may_hold_versions,
    scan,
)


def found(path: str, text: str, old: str | None = None, companions=()):
    return [
        (
            r.kind.value,
            r.package,
            r.operator,
            r.version,
            text.splitlines()[r.line - 1][r.col : r.end_col],
        )
        for r in scan(path, text, old, companions)
    ]


def test_requirements_in_pyproject_with_extras_ranges_and_markers() -> None:
    text = (
        "dependencies = [\n"
        '    "flashinfer_python[cu13]==0.6.12",\n'
        '    "flashinfer-cubin==0.6.12",\n'
        "    \"flashinfer-jit-cache>=0.6.8,<0.7; platform_machine == 'x86_64'\",\n"
        '    "sglang-kernel==0.6.12",\n'
        '    "not-flashinfer-python==1.0",\n'
        "]\n"
    )
    assert found("pyproject.toml", text) == [
        ("requirement", MAIN, "==", "0.6.12", "0.6.12"),
        ("requirement", CUBIN, "==", "0.6.12", "0.6.12"),
        ("requirement", JIT_CACHE, ">=", "0.6.8", "0.6.8"),
        ("requirement", JIT_CACHE, "<", "0.7", "0.7"),
    ]


def test_old_name_local_tags_and_wildcards() -> None:
    text = "flashinfer==0.6.8\nflashinfer-python==0.6.10+cu128\nflashinfer-python==0.6.*\n"
    assert [v[3] for v in found("requirements.txt", text)] == ["0.6.8", "0.6.10+cu128", "0.6.*"]


def test_dockerfiles_and_shell_scripts() -> None:
    text = (
        "ARG FLASHINFER_VERSION=0.6.12\n"
        "ENV FLASHINFER_JIT_CACHE_VERSION 0.6.12\n"
        "ARG SGL_KERNEL_VERSION=0.6.12\n"
        "RUN pip install flashinfer-python==${FLASHINFER_VERSION} flashinfer-cubin==0.6.12\n"
    )
    assert found("Dockerfile", text) == [
        ("variable", MAIN, "", "0.6.12", "0.6.12"),
        ("variable", JIT_CACHE, "", "0.6.12", "0.6.12"),
        ("requirement", CUBIN, "==", "0.6.12", "0.6.12"),
    ]
    assert found("ci.sh", "FLASHINFER_PYTHON_REQUIRED=0.6.12\nKERNEL=0.6.12\n") == [
        ("variable", MAIN, "", "0.6.12", "0.6.12")
    ]


def test_json_yaml_and_poetry() -> None:
    assert found("versions.json", '{"flashinfer": "0.6.12", "torch": "2.9"}\n') == [
        ("variable", MAIN, "", "0.6.12", "0.6.12")
    ]
    assert found("ci.yml", "env:\n  FLASHINFER_VERSION: 0.6.12\n") == [
        ("variable", MAIN, "", "0.6.12", "0.6.12")
    ]
    poetry = '[tool.poetry.dependencies]\nflashinfer-python = { version = "^0.6.12", extras = ["cu13"] }\n'
    assert found("pyproject.toml", poetry) == [("requirement", MAIN, "^", "0.6.12", "0.6.12")]


def test_python_checks_requirements_and_examples() -> None:
    text = (
        '"""Checks.\n\n'
        'Example: FlashInfer\'s minimum (e.g. "0.6.12").\n'
        '"""\n'
        'assert_pkg_version("flashinfer_python", "0.6.12", "reinstall")\n'
        'assert_pkg_version("sglang-kernel", "0.6.12", "reinstall")\n'
        'install_requires = ["flashinfer-python==0.6.12"]\n'
        "# FlashInfer 0.6.12 exposes checkpoints on the backend (a fact: stays)\n"
        'MSG = "needs FlashInfer >= 0.6.12 (ckv_scale_arr)"  # a feature minimum: stays\n'
        'HINT = "pip install flashinfer-python==0.6.12"  # the old pin in a message: moves\n'
    )
    assert found("engine.py", text, old="0.6.12") == [
        ("check", MAIN, "", "0.6.12", "0.6.12"),
        ("example", MAIN, "", "0.6.12", "0.6.12"),
        ("requirement", MAIN, "==", "0.6.12", "0.6.12"),
        ("example", MAIN, "==", "0.6.12", "0.6.12"),
    ]


def test_companions_only_when_asked() -> None:
    text = 'deps = ["nvidia-cutlass-dsl[cu13]==4.4.2"]\n'
    assert found("pyproject.toml", text) == []
    assert found("pyproject.toml", text, companions=["nvidia-cutlass-dsl"])[0][3] == "4.4.2"


def test_commented_pins_are_only_examples() -> None:
    text = "# flashinfer-python==0.6.10 was too old\nflashinfer-python==0.6.12\n"
    refs = scan("requirements.txt", text)
    assert [(r.version, r.in_comment) for r in refs] == [("0.6.10", True), ("0.6.12", False)]


# ------------------------------------------------------------------------ detection


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_detection_reads_every_pin_file(tmp_path: Path) -> None:
    write(tmp_path, "python/pyproject.toml", 'dependencies = ["flashinfer_python[cu13]==0.6.12"]\n')
    write(tmp_path, "docker/Dockerfile", "ARG FLASHINFER_VERSION=0.6.12\n")
    write(tmp_path, "requirements/cuda.txt", "flashinfer-python==0.6.12+cu128\n")
    version, pins, problems = detect_current_version([str(tmp_path)])
    assert version == "0.6.12" and problems == []
    assert {Path(p.path).name for p in pins} == {"pyproject.toml", "Dockerfile", "cuda.txt"}


def test_markers_do_not_make_a_conflict(tmp_path: Path) -> None:
    write(
        tmp_path,
        "requirements.txt",
        "flashinfer-python==0.6.12\nflashinfer-python==0.6.8; sys_platform == 'darwin'\n",
    )
    assert detect_current_version([str(tmp_path)])[0] == "0.6.12"


def test_disagreeing_pins_and_wildcards(tmp_path: Path) -> None:
    write(tmp_path, "requirements.txt", "flashinfer-python==0.6.12\n")
    write(tmp_path, "Dockerfile", "ARG FLASHINFER_VERSION=0.6.11\n")
    with pytest.raises(ProjectVersionError, match="pins disagree"):
        detect_current_version([str(tmp_path)])
    (tmp_path / "Dockerfile").unlink()
    (tmp_path / "requirements.txt").write_text("flashinfer-python==0.6.*\n")
    assert find_pins([str(tmp_path)]) == []  # a wildcard names no single version
    with pytest.raises(ProjectVersionError, match=r"name no single release \(flashinfer-python"):
        detect_current_version([str(tmp_path)])


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("==0.6.12", "0.6.12"),
        (">=0.6.12,<0.7", "0.6.12"),
        ("~=0.6.12", "0.6.12"),
        ("==0.6.10+cu128", "0.6.10"),
        (">=0.6,<0.7", None),
        ("<0.7", None),
        ("==0.6.*", None),
        ("!=0.6.9", None),
    ],
)
def test_which_requirements_name_the_release(tmp_path: Path, spec: str, named: str | None) -> None:
    write(tmp_path, "requirements.txt", f"flashinfer-python{spec}\n")
    if named is None:
        with pytest.raises(ProjectVersionError, match="name no single release"):
            detect_current_version([str(tmp_path)])
    else:
        assert detect_current_version([str(tmp_path)])[0] == named


def test_an_invalid_pyproject_is_said_and_still_read(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project\ndependencies = ["flashinfer-python==0.6.12"]\n')
    version, _, problems = detect_current_version([str(tmp_path)])
    assert version == "0.6.12"
    (problem,) = problems
    assert problem.startswith(str(tmp_path / "pyproject.toml") + ": not valid TOML (")
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'x'\n# flashinfer\n")
    with pytest.raises(ProjectVersionError, match=r"pyproject\.toml: not valid TOML"):
        detect_current_version([str(tmp_path)])


def test_a_release_without_data_says_what_the_data_covers() -> None:
    from migrate_fi.api.store import available_releases, missing_data

    first, last = available_releases()[0], available_releases()[-1]
    assert f"releases before {first} are not covered" in missing_data("0.4.1")
    assert "run `migrate-fi signatures update`" in missing_data("9.0.0")
    assert "not a published release" in missing_data("0.6.10.post3")
    assert f"the data covers {first} to {last}" in missing_data("0.4.1")


def test_kinds_are_values() -> None:
    assert Kind("check") is Kind.CHECK


_PIECES = [
    "flashinfer",
    "FlashInfer",
    "FLASHINFER",
    "flashinfer-python",
    "flashinfer_python",
    "flashinfer.cubin",
    "Flashinfer-JIT-cache",
    "nvidia-cutlass-dsl",
    "torch",
    "[cu13]",
    "[",
    "]",
    "==",
    ">=",
    "<",
    "~=",
    "!=",
    " ",
    "\n",
    '"',
    "'",
    "0.6.12",
    ".",
    "-",
    "_",
    "x",
    "#",
    "import ",
    "(",
    ")",
    ",",
    "\t",
    "fla\u017fhinfer",  # (the long s, which IGNORECASE matches to "s")
    "\u0130",  # (its lower case is two letters)
]


@given(st.lists(st.sampled_from(_PIECES), max_size=14))
@settings(max_examples=1500, deadline=None)
def test_the_quick_python_gate_never_rejects_what_the_exact_one_accepts(pieces: list[str]) -> None:
    """`_python_may_hold` tries a rough, fast pattern before the exact one, and the exact one
    only where a name starts: it must decide exactly as the exact pattern alone."""
    from migrate_fi.project.pins import _FOLDED, _gate_finds

    text = "".join(pieces)
    for companions in ((), ("nvidia-cutlass-dsl", "torch")):
        names = frozenset(_family_names(companions))
        exact = _gate(names).search(text) is not None
        # (where IGNORECASE matches a non-ASCII letter to a name's, "fla\u017fhinfer", the
        # rough pattern, which lower-cases, says no: no pip name is spelled so)
        if not any(c in text for c in _FOLDED):
            assert _python_may_hold(text, None, names) == exact, text
        assert _gate_finds(names, text) == exact, text
        pins = _gate(names, True).search(text) is not None
        assert _gate_finds(names, text, None, True) == pins, text


def test_string_and_comment_tokens_are_tokenizes() -> None:
    """The pin scan's one-regex lexer gives the STRING and COMMENT tokens `tokenize` gives, on
    tricky samples and on every Python file of this repository."""
    import io
    import tokenize

    from migrate_fi.project.pins import _tokens

    def reference(text: str) -> list[tuple[int, str, tuple[int, int]]]:
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        kinds = (tokenize.STRING, tokenize.COMMENT)
        return [(t.type, t.string, t.start) for t in tokens if t.type in kinds]

    samples = [
        'x = rb"a#b"  # c "d"\nif"e":pass\nreturn_ = f"{y!r}" Rb\'\\\'\' u"\\n"\n',
        "s = '''a\n'b' \"c\" \\''' # no\n'''\nt = \"\"\"x\"\"\"\"y\"\n",
        "for z in br'q', 'w\\\n  continued': # é 'x'\n    pass\n",
        "def f(a='flashinfer-python==0.6.8'):  # pin\n    '''doc 0.6.8'''\n",
    ]
    root = Path(__file__).resolve().parent.parent
    files = sorted([*(root / "migrate_fi").rglob("*.py"), *(root / "tests").glob("*.py")])
    assert len(files) > 50
    for text in [*samples, *(f.read_text(encoding="utf-8") for f in files)]:
        assert [tuple(t) for t in _tokens(text)] == reference(text)


def test_a_version_check_names_a_distribution_the_quick_test_sees() -> None:
    """The scan reads a file's calls only where a literal starts with "flashinfer"
    (`_QUOTED_DISTRIBUTION`): every FlashInfer distribution's name does."""
    from migrate_fi.project.pins import _QUOTED_DISTRIBUTION, FAMILY

    assert all(name.startswith("flashinfer") for name in FAMILY)
    for text in ('version("flashinfer-python")', "v(' FlashInfer_cubin')", 'v("""flashinfer""")'):
        assert _QUOTED_DISTRIBUTION.search(text), text


_LINES = [
    "import flashinfer",
    "from importlib.metadata import version",
    'ok = version("flashinfer-python") >= "0.6.8"',
    "v = version('FlashInfer')",
    'if v < "0.6.8.post1":',
    "    pass",
    'backend = "flashinfer"',
    'torch_ok = version("torch") >= "2.5"',
    'assert_version("flashinfer-python", "0.6.8")',
    "require('flashinfer', minimum='0.6.8.post1')",
    "# requires flashinfer>=0.6.8",
    "# e.g. `0.6.8.post1`, as FlashInfer says",
    '"""Install flashinfer-python==0.6.8.post1 (flashinfer)."""',
    'REQ = ["flashinfer-python==0.6.8.post1", "torch>=2.5"]',
    'x = "0.6.8.post1"',
    'msg = f"flashinfer {x} is too old"',
    "def f(a='flashinfer-cubin==0.6.8'):",
    "    return 'flashinfer'",
    "class C:",
    '    """FlashInfer 0.6.8.post1 exposes this."""',
    "# \u00e9\u2192 flashinfer \uff10.\uff16",  # (not ASCII: full-width digits)
    'y = "\u0663.\u0664"  # flashinfer',
]


@given(
    st.lists(st.sampled_from(_LINES), max_size=10),
    st.lists(st.sampled_from(_PIECES), max_size=8),
)
@settings(max_examples=1500, deadline=None)
def test_a_python_file_the_pin_test_rules_out_holds_nothing_the_scan_finds(
    lines: list[str], pieces: list[str]
) -> None:
    """`may_hold_versions` decides, from a file's bytes, whether FI006 and FI007 must parse it:
    never False where `scan` finds something (Python files, and texts that do not parse)."""
    for text in ("\n".join(lines) + "\n", "".join(pieces), "\n".join([*lines, "".join(pieces)])):
        for old, companions in ((None, ()), ("0.6.8.post1", ()), (None, ("torch",))):
            if not may_hold_versions("m.py", text.encode(), old, companions):
                assert scan("m.py", text, old, companions) == [], text


def _may_hold_by_definition(data: bytes, old: str | None, companions: tuple[str, ...]) -> bool:
    """What `may_hold_versions` says of a Python file, from the exact patterns alone: a pin, a
    quoted name or the old version in its Latin-1 text; then, in its decoded text, the old
    version, a pin, or a version and a distribution's name both quoted."""
    from migrate_fi.editing.sources import SourceError, decode_source
    from migrate_fi.project.pins import _QUOTED_DISTRIBUTION, _VERSION_LITERAL

    names = frozenset(_family_names(companions))
    text = data.decode("latin-1")
    if not ((old is not None and old in text) or _gate(names).search(text)):
        return False
    try:
        text = decode_source(data).text
    except SourceError:
        return True
    if old is not None and old in text:
        return True
    if _gate(names, True).search(text):
        return True
    return bool(_VERSION_LITERAL.search(text) and _QUOTED_DISTRIBUTION.search(text))


@given(
    st.lists(st.sampled_from(_LINES), max_size=6),
    st.lists(
        st.sampled_from([*_PIECES, "\u00c9", "\u00e9", "\u00df", "\u00a0", "\xff"]), max_size=10
    ),
)
@settings(max_examples=1500, deadline=None)
def test_the_pin_test_is_its_definition(lines: list[str], pieces: list[str]) -> None:
    """`may_hold_versions` takes short cuts (an ASCII file tested once per pattern, its lower
    case made from its bytes, names found by searching): it decides as its definition does,
    on ASCII, Latin-1 and UTF-8 files, with letters whose case only Unicode folds."""
    text = "\n".join([*lines, "".join(pieces)])
    for data in (text.encode(), text.encode("latin-1", "replace")):
        for old, companions in ((None, ()), ("0.6.8.post1", ()), ("0.6.12", ("torch",))):
            expected = _may_hold_by_definition(data, old, companions)
            assert may_hold_versions("m.py", data, old, companions) == expected, (data, old)


def test_a_quoted_name_alone_is_not_a_pin() -> None:
    """`backend == "flashinfer"` is in most modules of a serving project; with no version
    quoted there, nothing there is a check or a requirement, and the file is not parsed."""
    assert not may_hold_versions("a.py", b'if backend == "flashinfer":\n    pass\n', "0.6.8")
    check = b'from importlib.metadata import version\nok = version("flashinfer") >= "0.6.8"\n'
    assert may_hold_versions("a.py", check, "0.6.4")
    assert may_hold_versions("a.py", b"# needs flashinfer>=0.6\n", "0.6.4")
    # (a file that is not ASCII is read as the scan reads it: decoded)
    assert not may_hold_versions("a.py", 'x = "flashinfer"  # é\n'.encode(), "0.6.4")
    assert may_hold_versions("a.py", "# é: flashinfer>=0.6\n".encode(), "0.6.4")
    assert may_hold_versions("a.py", b'x = "flashinfer"  # \xff\n', "0.6.4")  # (not UTF-8)


@pytest.mark.parametrize(
    ("line", "marker"),
    [
        ('"flashinfer_python[cu13]==0.6.17 ; #engine# == \\"sglang\\"",', '#engine# == "sglang"'),
        ("'vllm==0.21.0; python_version >= \"3.10\"',", 'python_version >= "3.10"'),
        ('"torch==2.9.1",', ""),
        ("flashinfer-python==0.6.17 ; sys_platform == 'linux'", "sys_platform == 'linux'"),
        ("flashinfer-python==0.6.17", ""),
    ],
)
def test_the_environment_marker_of_a_requirement(line: str, marker: str) -> None:
    from migrate_fi.project.ownership import requirement_marker

    assert requirement_marker(line) == marker


def test_the_json_array_a_line_belongs_to() -> None:
    """The innermost array that holds a line, brackets inside strings not counted."""
    from migrate_fi.project.ownership import json_array_text

    text = '{\n "a": ["x[1]",\n  "flashinfer-python==0.6.17"],\n "b": ["sglang==0.5.11"]\n}'
    assert json_array_text(text, 3) == '["x[1]",\n  "flashinfer-python==0.6.17"]'
    assert json_array_text(text, 4, 9) == '["sglang==0.5.11"]'
    assert json_array_text(text, 4) is None and json_array_text(text, 1) is None


@pytest.mark.parametrize(
    ("line", "quoted", "marker"),
    [
        ('flashinfer-python==0.6.8 ; sys_platform == "linux"  # the stack', False,
         'sys_platform == "linux"'),
        ("flashinfer-python==0.6.8", False, ""),
        ("""deps = ["sglang==0.5.11", "flashinfer-python==0.6.8; python_version>'3.9'"]""", True,
         "python_version>'3.9'"),
        ('  "flashinfer_python==0.6.17 ; #engine# == \\"sglang\\"",', True, '#engine# == "sglang"'),
    ],
)  # fmt: skip
def test_the_marker_of_the_pin_itself(line: str, quoted: bool, marker: str) -> None:
    """The pin's own marker, read as the list's markers are: a requirements line's comment
    left out and its quotes kept; in an array, the string that holds the version."""
    from migrate_fi.project.ownership import pin_marker

    col = line.index("==0.6.") + 2
    assert pin_marker(line, col, quoted) == marker
