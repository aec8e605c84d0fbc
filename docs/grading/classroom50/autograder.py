#!/usr/bin/env python3
"""Leak Lab's autograder for Classroom 50 (foundation50/classroom50).

Classroom 50's runner fetches this file from the instructor's configuration (the
per-assignment bundle, `CLASSROOM/autograders/ASSIGNMENT/autograder.py`), runs it with
the Python of the runner, in the student's checkout, once per submission, and reads the
`result.json` it leaves there ("Advanced Autograding" on the project's wiki). The
student cannot edit this file or the bundle beside it: that is what makes the grade the
course's. This script:

1. reads `leaklab.toml` from the bundle (`$CLASSROOM50_BUNDLE_DIR`): the lab, and the
   course's published commit to grade with (a repository URL and a tag), e.g.

       lab = "01"
       course_repository = "https://github.com/your-org/leak-lab"
       course_ref = "v2026.11"

   (without the two course keys, or when the fetch fails, the repository's first
   commit: a template copy is one commit holding the course as published);
2. puts the course's machinery back (`tools/`, `scripts/`, `labs/base.toml`,
   `docs/grading/` from that commit), noting which of them the student changed;
3. sets up the lab and runs `leaklab grade NN --course <commit>`, which writes the
   course's own result file (docs/grading/result.schema.json);
4. writes Classroom 50's `result.json` (schema `classroom50/result/v1`: one test per
   lab, 10 points), `release-body.md` (the grade in Markdown), and the course result
   and its JUnit file as release assets, for the instructor's class board.

It exits 0 whenever it wrote a result, a failed grade included: a non-zero exit makes
the runner discard the result and publish an error. When the grade cannot run at all
(no history, a missing toolchain), it writes a zero-point result that says why, in one
line, and sets the runner's status to `error`.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

MAX_SCORE = 10
# The grade's own budget: set-up plus grade, lab 04 the longest (docs/grading/README.md).
TIMEOUT_S = 40 * 60
MACHINERY = ("tools", "scripts", "labs/base.toml", "docs/grading")
ASSETS = Path("classroom50-release-assets")


def main() -> int:
    try:
        return grade(Path.cwd())
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        return _unable(Path.cwd(), "??", str(exc))


def grade(work: Path) -> int:
    config = _config()
    lab = str(
        config.get("lab") or _lab_from_assignment(os.environ.get("ASSIGNMENT", ""))
    )
    if not re.fullmatch(r"\d\d", lab):
        return _unable(
            work, "??", 'no lab number: set lab = "NN" in the bundle\'s leaklab.toml'
        )
    try:
        commit, source = _published_commit(work, config)
    except RuntimeError as exc:
        return _unable(work, lab, str(exc))
    changed = _git(
        work, "diff", "--name-only", commit, "HEAD", "--", *MACHINERY
    ).split()
    _git(
        work,
        "checkout",
        commit,
        "--",
        *[p for p in MACHINERY if _exists(work, commit, p)],
    )
    print(
        f"autograder: lab {lab}, the course's commit {commit[:12]} ({source})",
        flush=True,
    )
    if changed:
        print(
            f"autograder: not the student's to change, put back: {', '.join(changed)}"
        )

    ASSETS.mkdir(exist_ok=True)
    out = ASSETS / f"leaklab-{lab}.json"
    setup = _run(["scripts/setup", "--lab", lab], work)
    if setup.returncode != 0:
        return _unable(
            work, lab, f"scripts/setup --lab {lab} failed (exit {setup.returncode})"
        )
    grade = _run(
        [
            ".venv/bin/leaklab",
            "grade",
            lab,
            "--course",
            commit,
            "--json",
            str(out),
            "--junit",
            str(ASSETS / f"leaklab-{lab}.xml"),
        ],
        work,
    )
    if not out.is_file():
        return _unable(
            work, lab, f"leaklab grade {lab} wrote no result (exit {grade.returncode})"
        )
    doc = json.loads(out.read_text())
    _write_result(work, lab, doc)
    summary = _run(
        [".venv/bin/leaklab", "class", "summary", str(out)], work, capture=True
    )
    (work / "release-body.md").write_text(
        f"### Leak Lab, lab {lab}: {doc['score']}/{doc['max_score']}\n\n{summary.stdout}"
    )
    return 0


def _config() -> dict[str, object]:
    bundle = os.environ.get("CLASSROOM50_BUNDLE_DIR")
    path = Path(bundle) / "leaklab.toml" if bundle else None
    if path is None or not path.is_file():
        return {}
    return tomllib.loads(path.read_text())


def _lab_from_assignment(slug: str) -> str:
    found = re.search(r"(?:^|\D)(\d\d)(?:\D|$)", slug)
    return found.group(1) if found else ""


def _published_commit(work: Path, config: dict[str, object]) -> tuple[str, str]:
    repo, ref = config.get("course_repository"), config.get("course_ref")
    if isinstance(repo, str) and isinstance(ref, str):
        fetched = subprocess.run(
            [
                "git",
                "fetch",
                "--quiet",
                "--no-tags",
                repo,
                f"{ref}:refs/leaklab/course",
            ],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        if fetched.returncode == 0:
            return _git(
                work, "rev-parse", "refs/leaklab/course^{commit}"
            ), f"{repo} {ref}"
        print(
            f"autograder: could not fetch {repo} {ref}; using the first commit instead"
        )
    listed = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    roots = listed.stdout.split() if listed.returncode == 0 else []
    if len(roots) != 1:
        raise RuntimeError(
            "the repository has no single first commit to take as the course's "
            "(a shallow clone, or no history): check out with full history"
        )
    return roots[0], "the repository's first commit"


def _exists(work: Path, commit: str, path: str) -> bool:
    return (
        subprocess.run(
            ["git", "cat-file", "-e", f"{commit}:{path}"],
            cwd=work,
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )


def _git(work: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=work, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RuntimeError(f"git {args[0]} failed: {last}")
    return done.stdout.strip()


def _run(
    argv: list[str], work: Path, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    # Progress lines, never a redrawn bar, in the runner's log: no TTY, no colour.
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        argv,
        cwd=work,
        env=env,
        text=True,
        check=False,
        timeout=TIMEOUT_S,
        capture_output=capture,
        stdin=subprocess.DEVNULL,
    )


def _identity() -> dict[str, object]:
    """The fields Classroom 50's runner validates (it overwrites owner, type and time)."""
    env = os.environ
    commit = env.get("COMMIT_URL", "")
    return {
        "schema": "classroom50/result/v1",
        "classroom": env.get("CLASSROOM", ""),
        "assignment": env.get("ASSIGNMENT", ""),
        "assignment_type": env.get("ASSIGNMENT_TYPE", "individual"),
        "owner": env.get("OWNER") or env.get("USERNAME", ""),
        "submission": env.get("SUBMISSION_TAG", ""),
        "commit": commit,
        "release": env.get("RELEASE_URL", ""),
        "review": env.get("REVIEW_URL") or commit,
        "datetime": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _write_result(work: Path, lab: str, doc: dict[str, object]) -> None:
    passed = doc.get("status") == "passed"
    name = f"Lab {lab}: {doc.get('status', 'error')}, {doc.get('stage')}: {doc.get('reason', '')}"
    test = {
        "test-name": name[:300],
        "passed": passed,
        "score": MAX_SCORE if passed else 0,
        "max-score": MAX_SCORE,
    }
    result = {
        **_identity(),
        "score": test["score"],
        "max-score": MAX_SCORE,
        "tests": [test],
    }
    (work / "result.json").write_text(json.dumps(result, indent=2) + "\n")


def _unable(work: Path, lab: str, why: str) -> int:
    """The grade could not run: a zero-point result saying why, status `error`."""
    print(f"autograder: {why}", file=sys.stderr)
    doc = {"status": "error", "stage": "error", "reason": why}
    _write_result(work, lab, doc)
    (work / "release-body.md").write_text(
        f"### Leak Lab, lab {lab}: not graded\n\n{why}\n"
    )
    output = os.environ.get("GITHUB_OUTPUT")
    if output:
        with open(output, "a") as fh:
            fh.write(f"status=error\nsummary=leaklab: {why}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
