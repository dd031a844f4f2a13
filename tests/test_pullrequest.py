"""`migrate-fi report --post`: the report on the pull request, one comment edited in place by
later runs, and in the job summary; against a local stand-in of GitHub's REST API."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from migrate_fi.cli import cli
from migrate_fi.outputs.pullrequest import (
    COMMENT_LIMIT,
    MARKER,
    GitHubError,
    fit_comment,
    post_report,
)

PROJECTS = Path(__file__).parent / "fixtures" / "projects"


class FakeGitHub:
    """Issue comments of one repository, as GitHub's REST API serves them."""

    def __init__(self) -> None:
        self.comments: list[dict[str, Any]] = [
            {"id": i, "body": f"a person's comment {i}", "url": ""} for i in range(1, 131)
        ]
        self.calls: list[tuple[str, str, str | None]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        for c in self.comments:
            c["url"] = f"{self.url}/repos/o/r/issues/comments/{c['id']}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, code: int, doc: object) -> None:
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict[str, Any]:
                size = int(self.headers.get("Content-Length", "0"))
                return json.loads(self.rfile.read(size))  # type: ignore[no-any-return]

            def do_GET(self) -> None:
                fake.calls.append(("GET", self.path, self.headers.get("Authorization")))
                path, _, query = self.path.partition("?")
                args = dict(p.split("=") for p in query.split("&"))
                page, size = int(args["page"]), int(args["per_page"])
                assert path == "/repos/o/r/issues/7/comments"
                self._answer(200, fake.comments[(page - 1) * size : page * size])

            def do_POST(self) -> None:
                fake.calls.append(("POST", self.path, self.headers.get("Authorization")))
                assert self.path == "/repos/o/r/issues/7/comments"
                n = len(fake.comments) + 1
                url = f"{fake.url}/repos/o/r/issues/comments/{n}"
                made = {"id": n, "body": self._body()["body"], "url": url, "html_url": f"pr#{n}"}
                fake.comments.append(made)
                self._answer(201, made)

            def do_PATCH(self) -> None:
                fake.calls.append(("PATCH", self.path, self.headers.get("Authorization")))
                n = int(self.path.rsplit("/", 1)[1])
                comment = next(c for c in fake.comments if c["id"] == n)
                comment["body"] = self._body()["body"]
                self._answer(200, {**comment, "html_url": f"pr#{n}"})

        return Handler


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[FakeGitHub, dict[str, str]]]:
    fake = FakeGitHub()
    thread = threading.Thread(target=fake.server.serve_forever, daemon=True)
    thread.start()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    env = {
        "GITHUB_TOKEN": "t0ken",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_API_URL": fake.url,
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    yield fake, env
    fake.server.shutdown()


def test_one_comment_posted_then_edited(github: tuple[FakeGitHub, dict[str, str]]) -> None:
    fake, env = github
    assert post_report("# Upgrade\nfirst\n", env) == "pr#131"
    assert post_report("# Upgrade\nsecond\n", env) == "pr#131"  # (after 130 of a person's)
    ours = [c for c in fake.comments if c["body"].startswith(MARKER)]
    assert len(ours) == 1 and ours[0]["body"] == f"{MARKER}\n# Upgrade\nsecond\n"
    assert [m for m, _, _ in fake.calls] == ["GET", "GET", "POST", "GET", "GET", "PATCH"]
    assert all(auth == "Bearer t0ken" for _, _, auth in fake.calls)


def test_report_post_from_the_command_line(
    github: tuple[FakeGitHub, dict[str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake, env = github
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(PROJECTS)
    r = CliRunner().invoke(cli, ["report", "--post", "demo"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert r.stdout == ""  # (posted, not printed)
    posted = [c for c in fake.comments if c["body"].startswith(MARKER)]
    assert len(posted) == 1 and "# Upgrade FlashInfer 0.6.8.post1 -> 0.7.4" in posted[0]["body"]
    assert (tmp_path / "summary.md").read_text().startswith("# Upgrade FlashInfer")
    assert "report posted on the pull request: pr#131" in r.stderr


def _units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_report_longer_than_a_comment_is_cut_where_nothing_is_open(
    github: tuple[FakeGitHub, dict[str, str]], lang: str
) -> None:
    """GitHub refuses a comment over 65,536 characters (FlashInfer's own tree gives a report of
    198,000): the comment holds what fits, cut after a line where no code block or folded part
    is open, and says how much is left and where it is; a report that fits is posted whole."""
    fake, env = github
    word = "变更" if lang == "zh" else "change"
    site = f"- `src/m.py:1` FI002: {word} " + "x" * 60
    sections = [
        "# Upgrade",
        "## Left for a person\n\n" + "\n".join([site] * 700),
        "## Key changes\n\n```diff\n" + "\n".join(["+ a line"] * 4000) + "\n```",
        "<details><summary>more</summary>\n\n" + "\n".join(["- note"] * 4000) + "\n\n</details>",
    ]
    text = "\n\n".join(sections) + "\n"
    body = fit_comment(text, lang)
    assert _units(text) > COMMENT_LIMIT >= _units(body)
    kept = body.rsplit("\n\n", 1)[0]
    assert kept.count("```") % 2 == 0 and kept.count("<details>") == kept.count("</details>")
    assert body.startswith(f"{MARKER}\n# Upgrade") and site in kept
    assert f"{len(MARKER) + 1 + len(text) - len(kept):,}" in body.rsplit("\n\n", 1)[1]
    assert ("作业摘要" if lang == "zh" else "job summary") in body.rsplit("\n\n", 1)[1]
    post_report(text, env, lang=lang)
    (ours,) = [c for c in fake.comments if c["body"].startswith(MARKER)]
    assert ours["body"] == body
    assert fit_comment("# Upgrade\nshort\n", lang) == f"{MARKER}\n# Upgrade\nshort\n"


def test_outside_a_pull_request_it_says_why(tmp_path: Path) -> None:
    with pytest.raises(GitHubError, match="GITHUB_TOKEN, GITHUB_REPOSITORY"):
        post_report("x", {"GITHUB_EVENT_PATH": "e.json"})
    event = tmp_path / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}))
    env = {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_PATH": str(event)}
    with pytest.raises(GitHubError, match="not a pull request event"):
        post_report("x", env)
    env["GITHUB_EVENT_PATH"] = str(tmp_path / "pr.json")
    (tmp_path / "pr.json").write_text(json.dumps({"pull_request": {"number": 1}}))
    env["GITHUB_API_URL"] = "http://127.0.0.1:9"  # (nothing listens there)
    with pytest.raises(GitHubError, match="cannot be reached"):
        post_report("x", env)
    r = CliRunner().invoke(
        cli, ["report", "--post", str(PROJECTS / "demo")], env={"GITHUB_TOKEN": ""}
    )
    assert r.exit_code == 2 and "GITHUB_TOKEN" in r.stderr and "Traceback" not in r.output


def _steps(text: str) -> list[tuple[str, str]]:
    """The (if, run) of each step of action.yml (a reader of its plain layout: no YAML
    library is a dependency)."""
    steps: list[tuple[str, str]] = []
    condition = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("- name:"):
            condition = ""
        elif stripped.startswith("if:"):
            condition = stripped[3:].strip()
        elif stripped.startswith("run:"):
            steps.append((condition, stripped[4:].strip()))
    return steps


@pytest.mark.skipif(__import__("shutil").which("bash") is None, reason="needs bash")
def test_the_action_posts_the_report_and_annotates(
    github: tuple[FakeGitHub, dict[str, str]], tmp_path: Path
) -> None:
    """action.yml's steps, run by bash with the environment GitHub Actions gives them (the
    install step left out: the package is installed here), against the stand-in API."""
    import os
    import shutil
    import subprocess
    import sys

    fake, env = github
    steps = _steps((Path(__file__).parents[1] / "action.yml").read_text())
    assert [c for c, _ in steps] == [
        "",
        "inputs.report == 'true' && startsWith(github.event_name, 'pull_request')",
        "",
    ]
    project = tmp_path / "demo"
    shutil.copytree(PROJECTS / "demo", project)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "migrate-fi").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m migrate_fi "$@"\n')
    (bin_dir / "migrate-fi").chmod(0o755)
    run_env = {
        **os.environ,
        **env,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MIGRATE_FI_TO": "0.7.4",
        "MIGRATE_FI_LANG": "zh",
        "MIGRATE_FI_PATHS": ".",
    }
    results = [
        subprocess.run(
            ["bash", "-c", run], cwd=project, env=run_env, capture_output=True, text=True
        )
        for _, run in steps[1:]
    ]
    assert results[0].returncode == 0, results[0].stderr
    posted = [c for c in fake.comments if c["body"].startswith(MARKER)]
    assert len(posted) == 1 and "升级 FlashInfer 0.6.8.post1 -> 0.7.4" in posted[0]["body"]
    assert results[1].returncode == 1  # (sites found: the gate fails, with annotations)
    assert "::warning file=" in results[1].stdout or "::error file=" in results[1].stdout
