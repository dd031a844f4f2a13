"""The report where reviewers read it: one comment on the pull request, updated in place by
every later run, and the job summary (GitHub Actions).

Everything comes from the environment GitHub Actions sets: ``GITHUB_TOKEN`` (the workflow's
own token, passed by the workflow: migrate-fi keeps it in memory only), ``GITHUB_REPOSITORY``,
``GITHUB_EVENT_PATH`` (the pull request's number), ``GITHUB_API_URL`` and
``GITHUB_STEP_SUMMARY``. The comment is found again by a marker line at its top, so a second
run edits it instead of adding another. Only the REST API of issue comments is used (a pull
request's conversation is its issue's).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["COMMENT_LIMIT", "MARKER", "GitHubError", "fit_comment", "post_report", "write_summary"]

MARKER = "<!-- migrate-fi report -->"
# The most a comment's body may hold ("maximum is 65536 characters"), counted here as UTF-16
# units: as many or more than any count of characters a server may make
COMMENT_LIMIT = 65_536
# What a comment cut to fit says of the rest, in the report's languages
_CUT = {
    "en": "*This description goes on for {more} more characters, more than a GitHub comment"
    " holds: the job summary of this run has all of it, and `migrate-fi report` prints it.*",
    "zh": "*本描述还有 {more} 个字符，超出了 GitHub 评论能容纳的长度：本次运行的作业摘要中有完整内容，"
    "`migrate-fi report` 也会完整输出。*",
}
_PAGE = 100
_MAX_PAGES = 30  # (3,000 comments: a conversation longer than that keeps a new comment)

Opener = Callable[[urllib.request.Request], Any]


class GitHubError(Exception):
    """The report cannot be posted; one line for the user."""


def _number(event_path: str) -> int:
    try:
        with open(event_path, encoding="utf-8") as fh:
            event = json.load(fh)
    except (OSError, ValueError) as exc:
        raise GitHubError(f"{event_path}: the workflow's event cannot be read ({exc})") from None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number = pull.get("number") if isinstance(pull, dict) else None
    if not isinstance(number, int):
        raise GitHubError(
            f"{event_path}: not a pull request event (run the job on pull_request or"
            " pull_request_target)"
        )
    return number


def _call(
    opener: Opener, method: str, url: str, token: str, body: Mapping[str, Any] | None = None
) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/vnd.github+json")
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("X-GitHub-Api-Version", "2022-11-28")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with opener(request) as response:
            return json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise GitHubError(f"GitHub answered {exc.code} to {method} {url}: {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise GitHubError(f"GitHub cannot be reached at {url} ({exc})") from None


def _units(text: str) -> int:
    """The length of ``text`` in UTF-16 units."""
    return len(text.encode("utf-16-le")) // 2


def fit_comment(text: str, lang: str = "en", limit: int = COMMENT_LIMIT) -> str:
    """``text`` as one comment's body, with the marker line first: whole where it fits in
    ``limit``; else cut after the last line that fits where no code block or folded part
    (``<details>``) is left open, with a line that says how much is left and where."""
    body = f"{MARKER}\n{text}"
    if _units(body) <= limit:
        return body
    lines = body.split("\n")
    room = limit - _units("\n\n" + _CUT.get(lang, _CUT["en"]).format(more=f"{len(body):,}"))
    cut, used, fence, folded = 1, 0, False, 0
    for i, line in enumerate(lines):
        used += _units(line) + 1
        if used > room:
            break
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
        elif not fence:
            folded += stripped.count("<details") - stripped.count("</details>")
        if not fence and folded <= 0:
            cut = i + 1  # (nothing open after this line)
    head = "\n".join(lines[:cut]).rstrip("\n")
    return head + "\n\n" + _CUT.get(lang, _CUT["en"]).format(more=f"{len(body) - len(head):,}")


def post_report(
    text: str,
    environ: Mapping[str, str] | None = None,
    opener: Opener | None = None,
    lang: str = "en",
) -> str:
    """Post ``text`` on the pull request of this workflow run, or edit the comment an earlier
    run posted (cut to what a comment holds, `fit_comment`); the comment's address. Raises
    `GitHubError`."""
    env = os.environ if environ is None else environ
    missing = [
        k for k in ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH") if not env.get(k)
    ]
    if missing:
        raise GitHubError(
            f"{', '.join(missing)} not set: run it in GitHub Actions with"
            " `env: GITHUB_TOKEN: ${{ github.token }}`"
        )
    call = opener or urllib.request.urlopen
    token, repo = env["GITHUB_TOKEN"], env["GITHUB_REPOSITORY"]
    api = env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    number = _number(env["GITHUB_EVENT_PATH"])
    body = {"body": fit_comment(text, lang)}
    for page in range(1, _MAX_PAGES + 1):
        url = f"{api}/repos/{repo}/issues/{number}/comments?per_page={_PAGE}&page={page}"
        comments = _call(call, "GET", url, token)
        if not isinstance(comments, list):
            raise GitHubError(f"GitHub answered GET {url} with no list of comments")
        for comment in comments:
            if isinstance(comment, dict) and str(comment.get("body", "")).startswith(MARKER):
                edited = _call(call, "PATCH", str(comment["url"]), token, body)
                return str(edited.get("html_url", comment["url"]))
        if len(comments) < _PAGE:
            break
    made = _call(call, "POST", f"{api}/repos/{repo}/issues/{number}/comments", token, body)
    return str(made.get("html_url", "")) if isinstance(made, dict) else ""


def write_summary(text: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Append ``text`` to the job summary; its file, or None outside GitHub Actions."""
    env = os.environ if environ is None else environ
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        raise GitHubError(f"{path}: the job summary cannot be written ({exc.strerror})") from None
    return path
