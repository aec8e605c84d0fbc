"""`leaklab diff`: the learner's change beside the solution's, for an instructor.

The learner's change is computed between two materialised trees (broken from git HEAD,
and the variant), so it includes new files and never depends on the learner's git
state. The solution's change is its patch series, one section per stage.
"""

from __future__ import annotations

import html
import subprocess
import tempfile
from pathlib import Path

from leaklab.spec import Lab
from leaklab.variants import materialise


def learner_diff(lab: Lab, variant: str = "mine") -> str:
    """A unified diff of `variant` against `broken`, with a/ b/ paths inside the service.

    Build outputs never enter either tree (`materialise` leaves them out), so the diff
    needs no exclusions."""
    with tempfile.TemporaryDirectory() as tmp:
        broken, mine = Path(tmp) / "broken", Path(tmp) / "mine"
        materialise(lab, "broken", broken)
        materialise(lab, variant, mine)
        result = subprocess.run(
            [
                "git",
                "diff",
                "--no-index",
                "--no-color",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                "broken",
                "mine",
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
            check=False,
        )
    # --no-index exits 1 when the trees differ; 0 when they are equal.
    if result.returncode not in (0, 1):
        return f"(git diff failed: {result.stderr.strip()})"
    return result.stdout.replace("a/broken/", "a/").replace("b/mine/", "b/")


def sections(lab: Lab, variant: str = "mine") -> list[tuple[str, str]]:
    """(title, diff) pairs: the learner's change first, then each solution stage."""
    out = [(f"{variant}: your change against broken", learner_diff(lab, variant) or "(no change)")]
    for i, name in enumerate(lab.patches, start=1):
        stage = lab.stage_names[i - 1] if i <= len(lab.stage_names) else name
        out.append((f"solution stage {i}: {stage} ({name})", (lab.solution_dir / name).read_text()))
    return out


def to_html(lab: Lab, parts: list[tuple[str, str]]) -> str:
    """A self-contained page: one coloured diff per section, side by side when wide."""
    styles = {"+": "add", "-": "del", "@": "hunk"}
    blocks = []
    for title, text in parts:
        lines = []
        for line in text.splitlines():
            kind = (
                "meta"
                if line.startswith(("diff ", "index ", "+++", "---"))
                else styles.get(line[:1], "")
            )
            lines.append(f'<span class="{kind}">{html.escape(line)}</span>')
        blocks.append(
            f"<section><h2>{html.escape(title)}</h2><pre>{chr(10).join(lines)}</pre></section>"
        )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(lab.slug)}: diff</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; }}
main {{ display: grid; grid-template-columns: repeat(auto-fit, minmax(38rem, 1fr)); gap: 1rem; }}
pre {{ background: #f6f8fa; padding: .75rem; overflow-x: auto; font-size: 12px; }}
.add {{ background: #e6ffec; }} .del {{ background: #ffebe9; }}
.hunk {{ color: #0550ae; }} .meta {{ color: #57606a; font-weight: bold; }}
</style></head>
<body><h1>{html.escape(lab.slug)}: {html.escape(lab.title)}</h1><main>
{chr(10).join(blocks)}
</main></body></html>
"""
