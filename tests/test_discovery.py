"""Which files a walk takes, and in what order (`migrate_fi.project.discovery.discover`)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from migrate_fi.project.discovery import SKIPPED_DIRS, discover


def _reference(root: str) -> list[str]:
    """The files a walk of ``root`` takes, as a recursive walk finds them: a folder's Python
    files by name, then its folders' by name (links, skipped folders and virtualenvs left)."""
    out: list[str] = []

    def visit(folder: str) -> None:
        names = sorted(os.listdir(folder))
        for name in names:
            path = os.path.join(folder, name)
            if os.path.isfile(path) and not os.path.islink(path) and name.endswith(".py"):
                out.append(path)
        for name in names:
            path = os.path.join(folder, name)
            if os.path.islink(path) or not os.path.isdir(path) or name in SKIPPED_DIRS:
                continue
            if not os.path.exists(os.path.join(path, "pyvenv.cfg")):
                visit(path)

    visit(root)
    return out


def test_a_walk_takes_a_folder_s_files_then_its_folders_depth_first(tmp_path: Path) -> None:
    """Random trees: files and folders whose names sort between each other, skipped folders,
    virtualenvs, links and files of other kinds; the walk finds what a recursive walk does, in
    its order, and says each link it leaves once, in that order too."""
    rnd = random.Random(7)
    for tree in range(12):
        root = tmp_path / f"t{tree}"
        folders = [root]
        root.mkdir()
        for i in range(rnd.randint(5, 60)):
            parent = rnd.choice(folders)
            name = rnd.choice(["a", "b", "m", "z", "_x", "B", "a.b", "z9"]) + str(i)
            kind = rnd.random()
            if kind < 0.3:
                folder = parent / (rnd.choice(sorted(SKIPPED_DIRS)) if kind < 0.04 else name)
                folder.mkdir(exist_ok=True)
                if kind > 0.27:
                    (folder / "pyvenv.cfg").write_text("home = /usr\n")
                folders.append(folder)
            elif kind < 0.8:
                (parent / f"{name}.py").write_text("x = 1\n")
            elif kind < 0.9:
                (parent / f"{name}.txt").write_text("x\n")
            else:
                (parent / f"{name}.py").symlink_to(root)
        links: list[str] = []
        found = list(discover([str(root)], on_link=links.append))
        assert found == _reference(str(root)), tree
        expected = sorted(
            str(p) for p in root.rglob("*.py") if p.is_symlink() and _reached(p.parent, root)
        )
        assert sorted(links) == expected and len(set(links)) == len(links)


def _reached(folder: Path, root: Path) -> bool:
    """Whether a walk of ``root`` enters ``folder``."""
    while folder != root:
        if folder.name in SKIPPED_DIRS or (folder / "pyvenv.cfg").exists():
            return False
        folder = folder.parent
    return True
