"""The one result format: what `leaklab grade --json FILE` writes and every consumer
reads (the workflow's job summary, the Classroom 50 adapter, JUnit XML, the class
board). Versioned by its `schema` field; the JSON Schema is docs/grading/result.schema.json,
and a file is checked against it where it is written and where it is read."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from leaklab import __version__
from leaklab.grading.grade import MAX_SCORE, GradeResult

SCHEMA_ID = "leaklab/grade-result/v1"
SCHEMA_FILE = Path("docs") / "grading" / "result.schema.json"


@cache
def schema() -> dict[str, Any]:
    """The schema, from the course's docs (beside the harness in every copy)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / SCHEMA_FILE
        if candidate.is_file():
            loaded: dict[str, Any] = json.loads(candidate.read_text())
            return loaded
    raise FileNotFoundError(f"{SCHEMA_FILE} not found above {here}")


def to_document(
    result: GradeResult, grader: dict[str, Any], learner: dict[str, Any]
) -> dict[str, Any]:
    """The versioned document of one grade."""
    doc = result.to_json()
    doc["schema"] = SCHEMA_ID
    doc["score"] = MAX_SCORE if result.passed else 0
    doc["max_score"] = MAX_SCORE
    doc["grader"] = {"version": __version__, **grader}
    doc["learner"] = learner
    if doc.get("time_to_limit") is None:
        doc.pop("time_to_limit", None)
    return doc


def problems(doc: object) -> list[str]:
    """Why a document is not a v1 result, one short line per problem ([] when it is)."""
    validator = jsonschema.Draft202012Validator(schema())
    found = []
    for error in sorted(validator.iter_errors(doc), key=lambda e: list(e.path)):
        where = "/".join(str(p) for p in error.path) or "(top level)"
        found.append(f"{where}: {error.message}")
    return found


def write(doc: dict[str, Any], path: Path) -> None:
    """Atomically, after checking it: a file the board cannot read is never written."""
    if bad := problems(doc):
        raise ValueError(f"the grade result does not match {SCHEMA_ID}: {bad[0]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def read(path: Path) -> dict[str, Any]:
    """One result file; ValueError with the reason, in one line, when it is not one."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not JSON: {exc.msg} at line {exc.lineno}") from None
    if isinstance(doc, dict) and doc.get("schema") not in (None, SCHEMA_ID):
        raise ValueError(f"has schema {doc.get('schema')!r}; this harness reads {SCHEMA_ID}")
    if bad := problems(doc):
        raise ValueError(f"does not match {SCHEMA_ID}: {bad[0]}")
    assert isinstance(doc, dict)
    return doc
