"""The slides check themselves: every code excerpt, table and plot marker on a deck still
matches its source, every plot is committed in slides/plots/ and used, every content
slide has speaker notes, and every deck builds to HTML (PDF too where Chromium is
present). Needs slides/node_modules (scripts/setup-slides); no network at test time."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pytest

from leaklab import style
from leaklab.authoring import slides
from leaklab.errors import LeakLabError
from leaklab.paths import repo_root

ROOT = repo_root()
DECKS = slides.decks(ROOT)
CHROME = os.environ.get("CHROME_PATH") or shutil.which("chromium") or shutil.which("google-chrome")


def test_there_are_decks() -> None:
    names = [d.name for d in DECKS]
    assert names[0] == "00-introduction.md" and names[-1] == "99-closing.md", names


@pytest.mark.parametrize("deck", DECKS, ids=[d.stem for d in DECKS])
def test_every_excerpt_table_and_plot_matches_its_source(deck: Path) -> None:
    assert slides.check(ROOT, [deck]) == []


def test_a_stale_excerpt_is_caught(tmp_path: Path) -> None:
    source = tmp_path / "labs" / "99-x" / "service" / "a.go"
    source.parent.mkdir(parents=True)
    source.write_text("package a\n\nfunc A() {\n\treturn\n}\n")
    deck = tmp_path / "slides" / "99-x.md"
    deck.parent.mkdir()
    marker = "<!-- include: labs/99-x/service/a.go#L3-L5 -->\n"
    deck.write_text(f"# A\n\n{marker}<!-- /include -->\n\n<!-- notes -->\n")
    assert any("no longer matches" in p for p in slides.check(tmp_path, [deck]))

    expanded, _ = slides.expand(tmp_path, deck.read_text())
    deck.write_text(expanded)
    assert slides.check(tmp_path, [deck]) == []
    assert "```go\nfunc A() {\n    return\n}\n```" in expanded  # tabs shown as 4 spaces

    source.write_text("package a\n\nfunc A() {\n\tpanic(1)\n}\n")
    assert any("no longer matches" in p for p in slides.check(tmp_path, [deck]))


def test_a_table_keeps_only_the_runs_it_names() -> None:
    # A deck shows lab 02's broken row before its pause: stage-1's and fixed's rows
    # together give the two-step fix away.
    rows = slides.summary_table(ROOT, "02 runs=broken").splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == ["| broken"]
    every = slides.summary_table(ROOT, "02").splitlines()[2:]
    assert len(every) == 3
    with pytest.raises(LeakLabError, match="no run named nope"):
        slides.summary_table(ROOT, "02 runs=broken,nope")


def test_every_committed_plot_is_used_by_a_deck() -> None:
    assert slides.unused_plots(ROOT) == []


def test_a_fit_plot_draws_the_run_in_its_variants_colour(lab_root: Path) -> None:
    job, _ = slides.plot_job(lab_root, "fit 01 series=go_heap_live_bytes runs=fixed")
    pixels = plt.imread(job.draw(lab_root / "fixed.png"))[:, :, :3]
    green = np.array(matplotlib.colors.to_rgb(style.colour("fixed")))
    red = np.array(matplotlib.colors.to_rgb(style.colour("broken")))
    assert (np.abs(pixels - green).max(axis=2) < 0.02).sum() > 200
    assert (np.abs(pixels - red).max(axis=2) < 0.02).sum() == 0


@pytest.fixture
def lab_root(tmp_path: Path) -> Path:
    """A repository holding lab 01's lab.toml and two of its captured runs, nothing else."""
    slug = "01-go-bulk-abort"
    (tmp_path / "labs" / slug).mkdir(parents=True)
    for manifest in (ROOT / "labs").glob("*.toml"):  # course-wide defaults, if any
        shutil.copy(manifest, tmp_path / "labs" / manifest.name)
    shutil.copy(ROOT / "labs" / slug / "lab.toml", tmp_path / "labs" / slug / "lab.toml")
    (tmp_path / "datasets" / slug).mkdir(parents=True)
    for run in ("broken.csv", "broken.json", "fixed.csv", "fixed.json"):
        shutil.copy(ROOT / "datasets" / slug / run, tmp_path / "datasets" / slug)
    (tmp_path / "slides").mkdir()
    return tmp_path


def test_sync_draws_committed_plots_and_check_finds_them_missing_or_unused(
    lab_root: Path,
) -> None:
    deck = lab_root / "slides" / "01-x.md"
    marker = "<!-- plot: fit 01 series=go_heap_live_bytes runs=broken img=h:400 -->\n"
    deck.write_text(f"# A plot\n\n{marker}<!-- /plot -->\n\n<!-- notes -->\n")
    assert any("no longer matches" in p for p in slides.check(lab_root))

    changed = slides.sync(lab_root)
    image = lab_root / "slides" / "plots" / "01-fit-broken-go_heap_live_bytes.png"
    assert deck in changed and image in changed
    assert "![h:400](plots/01-fit-broken-go_heap_live_bytes.png)" in deck.read_text()
    assert image.read_bytes().startswith(b"\x89PNG")
    assert slides.check(lab_root) == []
    assert slides.sync(lab_root) == [], "a redraw of the same data changes nothing"

    image.unlink()
    assert slides.check(lab_root) == [
        "01-x.md: plots/01-fit-broken-go_heap_live_bytes.png is missing "
        "(leaklab slides sync draws it)"
    ]
    slides.sync(lab_root)
    stale = image.with_name("01-fit-broken-rss_bytes.png")
    stale.write_bytes(image.read_bytes())
    assert slides.check(lab_root) == [
        "plots/01-fit-broken-rss_bytes.png: no deck uses it (leaklab slides sync removes it)"
    ]
    assert stale in slides.sync(lab_root) and not stale.exists()


FIT_IMAGE = "01-fit-broken-go_heap_live_bytes.png"


def _recapture(lab_root: Path, run: str) -> None:
    """Stand-in for a re-capture: the run's provenance JSON gains a field."""
    source = lab_root / "datasets" / "01-go-bulk-abort" / f"{run}.json"
    meta = json.loads(source.read_text())
    meta["recaptured"] = True
    source.write_text(json.dumps(meta))


def test_a_plot_drawn_from_an_older_dataset_is_caught(lab_root: Path) -> None:
    deck = lab_root / "slides" / "01-x.md"
    marker = "<!-- plot: fit 01 series=go_heap_live_bytes runs=broken img=h:400 -->\n"
    deck.write_text(f"# A plot\n\n{marker}<!-- /plot -->\n\n<!-- notes -->\n")
    slides.sync(lab_root)
    assert slides.check(lab_root) == []

    _recapture(lab_root, "broken")
    assert slides.check(lab_root) == [
        "01-x.md: plots/01-fit-broken-go_heap_live_bytes.png was drawn from an older "
        "dataset: leaklab slides sync"
    ]
    assert slides.sync(lab_root) == [lab_root / "slides" / "plots" / FIT_IMAGE]
    assert slides.check(lab_root) == []


def test_a_stamp_ignores_line_endings_and_display_options(lab_root: Path) -> None:
    arg = "runs 01 series=go_heap_live_bytes runs=broken,fixed"
    job, _ = slides.plot_job(lab_root, arg)
    resized, _ = slides.plot_job(lab_root, arg + " img=h:300")
    assert resized.stamp == job.stamp
    other, _ = slides.plot_job(lab_root, "runs 01 series=rss_bytes runs=broken,fixed")
    assert other.stamp != job.stamp
    # A core.autocrlf checkout turns the JSON's LF line endings into CRLF (the CSVs are
    # written with CRLF already, and git leaves them so).
    meta = lab_root / "datasets" / "01-go-bulk-abort" / "fixed.json"
    assert b"\r" not in meta.read_bytes()
    meta.write_bytes(meta.read_bytes().replace(b"\n", b"\r\n"))
    assert slides.plot_job(lab_root, arg)[0].stamp == job.stamp


def test_a_plot_without_a_source_stamp_is_caught(lab_root: Path) -> None:
    deck = lab_root / "slides" / "01-x.md"
    marker = "<!-- plot: fit 01 series=go_heap_live_bytes runs=broken img=h:400 -->\n"
    deck.write_text(f"# A plot\n\n{marker}<!-- /plot -->\n\n<!-- notes -->\n")
    slides.sync(lab_root)
    image = lab_root / "slides" / "plots" / FIT_IMAGE
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    fig.savefig(image)  # drawn by hand, as the READMEs' images were
    plt.close(fig)
    assert slides.check(lab_root) == [
        f"01-x.md: plots/{FIT_IMAGE} has no source stamp (leaklab slides sync redraws it)"
    ]


def test_a_readme_plot_is_drawn_into_its_labs_img_and_kept_fresh(lab_root: Path) -> None:
    readme = lab_root / "labs" / "01-go-bulk-abort" / "README.md"
    region = (
        "<!-- plot: runs 01 series=go_heap_live_bytes runs=broken,fixed file=compare.png -->\n"
        "![the author's alt text](img/compare.png)\n"
        "<!-- /plot -->\n"
    )
    text = f"# Lab 01\n\nMeasured:\n\n{region}\nProse after.\n"
    readme.write_text(text)
    image = readme.parent / "img" / "compare.png"
    assert slides.check(lab_root) == [
        "labs/01-go-bulk-abort/README.md: img/compare.png is missing (leaklab slides sync draws it)"
    ]

    assert slides.sync(lab_root) == [image]
    assert readme.read_text() == text, "the README's text and alt text stay as written"
    assert slides.read_stamp(image)
    assert slides.check(lab_root) == []
    assert slides.sync(lab_root) == [], "a redraw of the same data changes nothing"

    _recapture(lab_root, "fixed")
    assert slides.check(lab_root) == [
        "labs/01-go-bulk-abort/README.md: img/compare.png was drawn from an older dataset: "
        "leaklab slides sync"
    ]
    stray = image.with_name("old.png")
    stray.write_bytes(image.read_bytes())
    assert slides.check(lab_root)[-1] == (
        "labs/01-go-bulk-abort/img/old.png: no plot marker in its README draws it "
        "(leaklab slides sync removes it)"
    )
    assert slides.sync(lab_root) == [image, stray] and not stray.exists()
    assert slides.check(lab_root) == []


def test_sync_can_leave_excerpts_alone(lab_root: Path) -> None:
    """`sync --only plot` redraws plots without touching an excerpt whose file moved."""
    (lab_root / "a.go").write_text("one\n")
    deck = lab_root / "slides" / "01-x.md"
    deck.write_text("# A\n\n<!-- include: a.go#L1 -->\nold\n<!-- /include -->\n\n<!-- n -->\n")
    assert slides.sync(lab_root, kinds=("plot",)) == []
    assert "\nold\n" in deck.read_text()
    assert deck in slides.sync(lab_root)
    assert "\nold\n" not in deck.read_text()


def test_a_missing_source_or_range_is_reported(tmp_path: Path) -> None:
    with pytest.raises(LeakLabError):
        slides.excerpt(tmp_path, "nothing/here.go#L1-L2")
    (tmp_path / "a.go").write_text("one\n")
    with pytest.raises(LeakLabError):
        slides.excerpt(tmp_path, "a.go#L1-L9")


def test_slides_without_notes_are_reported(tmp_path: Path) -> None:
    deck = tmp_path / "00-x.md"
    deck.write_text(
        "---\nmarp: true\n---\n\n<!-- _class: lead -->\n\n# Title\n\n---\n\n"
        "# Content\n\n<!-- _class: small -->\n\n- no notes here\n\n---\n\n"
        "# Content\n\n<!-- a speaker note -->\n"
    )
    assert slides.check(tmp_path, [deck]) == ["00-x.md: slide 2 has no speaker notes"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (ROOT / "slides" / "node_modules" / ".bin" / "marp").exists():
        pytest.fail("the Marp CLI is not installed: run scripts/setup-slides (npm ci, once)")
    out = tmp_path_factory.mktemp("slides")
    slides.build(ROOT, out)
    return out


@pytest.mark.parametrize("deck", DECKS, ids=[d.stem for d in DECKS])
def test_every_deck_builds_to_html(built: Path, deck: Path) -> None:
    html = (built / deck.name).with_suffix(".html").read_text()
    pages = len(slides.slides_of(deck.read_text()))
    assert html.count("<section") >= pages, "every slide rendered"
    assert "<!-- include:" not in html and "```" not in html, "markers and fences consumed"
    for image in slides.IMAGE.finditer((built / deck.name).read_text()):
        assert (built / image.group(2)).is_file(), f"{deck.name}: missing {image.group(2)}"


@pytest.mark.skipif(CHROME is None, reason="no Chromium: apt-get install chromium for PDF")
def test_a_deck_builds_to_pdf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROME_PATH", str(CHROME))
    out = slides.build(ROOT, tmp_path, pdf=True, only=["99"])
    pdf = [p for p in out if p.suffix == ".pdf"]
    assert pdf and pdf[0].read_bytes().startswith(b"%PDF")
