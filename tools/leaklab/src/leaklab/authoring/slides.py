"""`leaklab slides`: the course's Marp decks, built from the real files.

A deck (`slides/NN-*.md`) never retypes code or figures. It marks *generated regions*,
each an opening HTML comment, generated text, and a closing comment:

    <!-- include: labs/01-go-bulk-abort/service/bulk/flush.go#L30-L38 -->
    ...a caption and a fenced code block, copied from those lines...
    <!-- /include -->

    <!-- table: 01 -->              the lab's summary table from datasets/<lab>/ (slopes,
    ...                             95% CIs, peak RSS, throughput, verdict), computed by
    <!-- /table -->                 leaklab.report.summarise, as `leaklab compare` does;
                                    `<!-- table: 02 runs=broken -->` keeps those rows only

    <!-- plot: runs 01 series=go_heap_inuse_bytes runs=broken,fixed img=h:420 -->
    ![h:420](plots/....png)         a PNG in slides/plots/, drawn from the committed datasets
    <!-- /plot -->                  by leaklab.report.plot (`runs`) or by `fit` below

A lab's README (`labs/NN-slug/README.md`) draws its images with the same plot markers;
`file=` names the image in the lab's img/ folder, and the alt text is the author's:

    <!-- plot: runs 02 series=rust_live_bytes,rss_bytes runs=broken,fixed file=steady.png -->
    ![steady load: broken and fixed](img/steady.png)
    <!-- /plot -->

Paths are relative to the repository root; an include's lines are shown with tabs as four
spaces and the common indentation removed, and nothing else changes. Commands:

- `check`: every generated region in every deck and lab README equals what its sources
  give now (an excerpt whose file moved on fails), every plot's image is in slides/plots/
  (a README's in its lab's img/) and was drawn from the datasets as they are now, no
  image there is left unused, and every content slide has speaker notes;
- `sync`: rewrite the generated regions in place from their sources and redraw every
  plot, removing images no deck or README uses (then review the diff);
- `build [--pdf] [--images]`: expand every deck from its sources into slides/build/, copy
  its images there, and run the Marp CLI (slides/node_modules, `scripts/setup-slides`);
- `new NN`: start a lab's deck from slides/template-lab.md.

The plot images are committed, so a deck or README reads on GitHub with its figures, in
the look every plot of the course shares (leaklab.style). `check` cannot redraw them to
compare (matplotlib's output is not byte-stable across versions): each PNG carries a
stamp instead, a text chunk holding a hash of its marker's arguments and of the bytes of
every run it plots (the .json and the .csv), and `check` fails on an image whose stamp is
missing or differs from the sources' now. `sync` is what redraws them, after a dataset or
a plot changed. The READMEs' plots live beside the decks' markers because one re-capture
changes both: one `leaklab slides sync` then redraws every image of the course.

Markers are HTML comments, which Marp shows as presenter notes: the build removes them.
"""

from __future__ import annotations

import filecmp
import hashlib
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from PIL import Image

from leaklab import dataset, report, style
from leaklab.analysis import disturbed, load_seconds, scale, series_fit, steady_window, unit_per_min
from leaklab.errors import LeakLabError
from leaklab.paths import repo_root
from leaklab.spec import Lab, load_lab

KINDS = ("include", "table", "plot")
REGION = re.compile(
    r"<!-- (?P<kind>include|table|plot): (?P<arg>[^>]*?) -->\n(?P<body>.*?)<!-- /(?P=kind) -->",
    re.S,
)
LANGS = {
    ".go": "go",
    ".rs": "rust",
    ".ex": "elixir",
    ".exs": "elixir",
    ".scala": "scala",
    ".patch": "diff",
    ".diff": "diff",
    ".toml": "toml",
    ".py": "python",
    ".sh": "bash",
    ".txt": "text",
}
# Table headings for the series the labs share; any other series shows its own name.
LABELS = {
    "rss_bytes": "RSS",
    "go_heap_inuse_bytes": "Go heap in use",
    "go_heap_live_bytes": "live heap",
    "jvm_heap_after_gc_bytes": "JVM heap after GC",
    "beam_binary_bytes": "BEAM binaries",
    "beam_processes_bytes": "BEAM processes",
    "rust_allocated_bytes": "Rust allocated",
    "live_heap_bytes": "live heap",
    "allocated_bytes": "allocated (rate)",
}
# Marp directives (`<!-- _class: lead -->`) are comments too, but not speaker notes.
DIRECTIVE = re.compile(
    r"^\s*_?(class|paginate|header|footer|backgroundColor|backgroundImage|color|theme|style)"
    r"\s*:",
)
NOT_CONTENT = re.compile(r"<!--\s*_class:\s*(lead|section)\b")
COMMENT = re.compile(r"<!--(.*?)-->", re.S)
IMAGE = re.compile(r"(!\[[^\]]*\]\()(?!https?:|/|data:)([^)\s]+)\)")
# Where the plots live, relative to slides/: committed, so decks render on GitHub. The
# folder holds only what `sync` draws (an image there that no deck uses is an error).
IMAGES = "plots"
# A lab README's plots live in the lab's own folder, which it links as `img/...`.
LAB_IMAGES = "img"
# The PNG text chunk that records what a plot was drawn from (see `source_stamp`).
STAMP = "leaklab-source"


@dataclass(frozen=True)
class Region:
    """One generated region of a deck: its marker and the text between the markers."""

    kind: str
    arg: str
    body: str
    start: int
    end: int


@dataclass(frozen=True)
class PlotJob:
    """A PNG a page needs: its file name, how to draw it, and the stamp of its sources."""

    name: str
    draw: Callable[[Path], Path]
    stamp: str = ""


@dataclass(frozen=True)
class Page:
    """A file with generated regions: a deck, or a lab's README, and its plots' folder."""

    path: Path
    images: Path
    readme: bool = False

    @property
    def label(self) -> str:
        """How problems name the page: a deck by its file name, a README by its lab."""
        return f"labs/{self.path.parent.name}/README.md" if self.readme else self.path.name

    @property
    def link(self) -> str:
        """The plots' folder as the page's image lines name it."""
        return LAB_IMAGES if self.readme else IMAGES


def slides_dir(root: Path | None = None) -> Path:
    return (root or repo_root()) / "slides"


def plots_dir(root: Path | None = None) -> Path:
    return slides_dir(root) / IMAGES


def decks(root: Path | None = None) -> list[Path]:
    """The decks, in teaching order: slides/NN-*.md (not the template or the guide)."""
    return sorted(slides_dir(root).glob("[0-9][0-9]-*.md"))


def readmes(root: Path | None = None) -> list[Path]:
    """The labs' READMEs, in lab order: labs/NN-*/README.md."""
    return sorted((root or repo_root()).glob("labs/[0-9][0-9]-*/README.md"))


def page(root: Path, path: Path) -> Page:
    """A deck's plots go to slides/plots/, a lab README's to the lab's img/."""
    if path.name == "README.md" and path.parent.parent.name == "labs":
        return Page(path, path.parent / LAB_IMAGES, readme=True)
    return Page(path, plots_dir(root))


def pages(root: Path, only: Sequence[str] = ()) -> list[Page]:
    """Every deck and lab README, or those whose deck or lab name starts with one of `only`."""
    chosen = [*decks(root), *readmes(root)]
    return [
        page(root, p)
        for p in chosen
        if not only
        or any((p.parent.name if p.name == "README.md" else p.name).startswith(o) for o in only)
    ]


def regions(text: str) -> list[Region]:
    return [
        Region(m["kind"], m["arg"].strip(), m["body"], m.start(), m.end())
        for m in REGION.finditer(text)
    ]


# ---------------------------------------------------------------- includes


def parse_include(arg: str) -> tuple[str, int, int]:
    """`path#L30-L38` (or `path#L30`) -> (path, first line, last line), 1-based, inclusive."""
    m = re.fullmatch(r"(?P<path>[^#\s]+)#L(?P<a>\d+)(?:-L(?P<b>\d+))?", arg)
    if not m:
        raise LeakLabError(f"include {arg!r}: expected path#L<first>-L<last>")
    first = int(m["a"])
    last = int(m["b"] or first)
    if last < first:
        raise LeakLabError(f"include {arg!r}: the range ends before it starts")
    return m["path"], first, last


def excerpt(root: Path, arg: str) -> str:
    """The generated text of an include: a caption line and the fenced excerpt."""
    words, opts = _options(arg)
    if len(words) != 1:
        raise LeakLabError(f"include {arg!r}: expected path#L<first>-L<last> [lang=...]")
    path, first, last = parse_include(words[0])
    source = root / path
    if not source.is_file():
        raise LeakLabError(f"include {arg!r}: {path} does not exist", "fix the path or the deck")
    lines = source.read_text().splitlines()
    if last > len(lines):
        raise LeakLabError(f"include {arg!r}: {path} has only {len(lines)} lines")
    chosen = [line.expandtabs(4).rstrip() for line in lines[first - 1 : last]]
    code = textwrap.dedent("\n".join(chosen))
    lang = opts.get("lang", LANGS.get(source.suffix, ""))
    where = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"*{path}, {where}*\n\n```{lang}\n{code}\n```\n"


# ---------------------------------------------------------------- tables


def _as_text(value: float) -> str:
    if abs(value) >= 10:
        return f"{value:,.0f}"
    return f"{value:.2g}" if abs(value) >= 0.1 else f"{value:.2f}"


def summary_table(root: Path, arg: str) -> str:
    """The lab's captured runs as a markdown table, figures computed from datasets/.

    `runs=a,b` keeps those rows only, in the folder's order: a deck shows the broken row
    before its pause and the others after it, where they no longer give the answer away."""
    words, opts = _options(arg)
    lab = load_lab(words[0], root)
    runs = dataset.read_folder(root / "datasets" / lab.slug)
    wanted = opts.get("runs")
    if wanted:
        names = wanted.split(",")
        unknown = sorted(set(names) - {d.name for d in runs})
        if unknown:
            raise LeakLabError(f"table {arg!r}: no run named {', '.join(unknown)}")
        runs = [d for d in runs if d.name in names]
    if not runs:
        raise LeakLabError(f"table {arg!r}: no datasets in datasets/{lab.slug}")
    cols = [s for s in lab.analysis.series if s.endswith("_bytes")]
    head = ["run", *(f"{LABELS.get(s, s)} {unit_per_min(s)}" for s in cols)]
    head += ["peak RSS MB", "answered/s", "client aborts", "verdict"]
    rows = [
        "| " + " | ".join(head) + " |",
        "| --- | " + " | ".join("---:" for _ in head[1:-1]) + " | --- |",
    ]
    for ds in runs:
        s = report.summarise(lab, ds)
        cells = [s.name]
        for name in cols:
            fit = s.fits[name]
            cells.append(
                "n/a"
                if fit is None
                else f"{_as_text(fit.slope)} [{_as_text(fit.low)}, {_as_text(fit.high)}]"
            )
        cells += [
            _as_text(s.peak_rss_mb),
            _as_text(s.throughput),
            f"{s.aborted:,} of {s.sent:,}",
            f"**{s.verdict}**",
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------- plots


def _options(arg: str) -> tuple[list[str], dict[str, str]]:
    words, opts = [], {}
    for token in arg.split():
        if "=" in token:
            key, value = token.split("=", 1)
            opts[key] = value
        else:
            words.append(token)
    return words, opts


def source_stamp(
    kind: str, lab: Lab, series: Sequence[str], folder: Path, names: Sequence[str]
) -> str:
    """A hash of what a plot shows: its kind, lab, series and runs, and the bytes of each
    run's .json and .csv. Display options (img=, file=, alt text) are not in it."""
    digest = hashlib.sha256(
        f"{kind} {lab.number} series={','.join(series)} runs={','.join(names)}\n".encode()
    )
    for name in names:
        for suffix in (".json", ".csv"):
            source = folder / f"{name}{suffix}"
            if not source.is_file():
                raise LeakLabError(
                    f"plot: no run named {name} (datasets/{lab.slug}/{name}{suffix})"
                )
            # Line endings as git stores them: a checkout with core.autocrlf (Windows)
            # holds the same dataset, and its plots are not stale.
            data = source.read_bytes().replace(b"\r\n", b"\n")
            digest.update(f"{name}{suffix} {len(data)}\n".encode())
            digest.update(data)
    return digest.hexdigest()


def read_stamp(path: Path) -> str | None:
    """The source stamp a plot was drawn with, or None for an image without one."""
    with Image.open(path) as image:
        value = image.info.get(STAMP)
    return value if isinstance(value, str) else None


ALT = re.compile(r"!\[(?P<alt>[^\]]*)\]")


def plot_job(root: Path, arg: str, on: Page | None = None, body: str = "") -> tuple[PlotJob, str]:
    """What a plot marker draws, and the image line it generates (on a README, with the
    alt text its author wrote in `body`)."""
    words, opts = _options(arg)
    if len(words) != 2 or words[0] not in ("runs", "fit"):
        raise LeakLabError(f"plot {arg!r}: expected `runs LAB key=value...` or `fit LAB ...`")
    kind, lab_name = words
    lab = load_lab(lab_name, root)
    folder = root / "datasets" / lab.slug
    wanted = opts.get("runs")
    names = wanted.split(",") if wanted else [d.name for d in dataset.read_folder(folder)]
    series = tuple(opts.get("series", lab.analysis.verdict_series).split(","))
    # Run names may sit in a subfolder of the datasets (burst/burst-40k-broken): the
    # image is one flat file per plot all the same.
    stem = f"{lab.number}-{kind}-{'+'.join(names)}-{'+'.join(series)}"
    name = opts.get("file") or re.sub(r"[^A-Za-z0-9_.+-]", "-", stem) + ".png"
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+\.png", name):
        raise LeakLabError(f"plot {arg!r}: file= is a PNG's name, without a folder")
    stamp = source_stamp(kind, lab, series, folder, names)

    def draw(path: Path) -> Path:
        runs = [dataset.read(folder / f"{n}.json") for n in names]
        if kind == "runs":
            return plot_runs(lab, runs, series, path, stamp)
        return plot_fit(lab, runs[0], series[0], path, stamp)

    if on is not None and on.readme:
        alt = m["alt"] if (m := ALT.search(body)) else ""
    else:
        alt = opts.get("img", "")
    image = f"![{alt}]({on.link if on else IMAGES}/{name})\n"
    return PlotJob(name, draw, stamp), image


def _metadata(stamp: str) -> dict[str, str | None]:
    # No "Software" stamp: a redraw with another matplotlib is then byte-identical
    # whenever the pixels are, and git sees no change.
    return {"Software": None, STAMP: stamp}


def plot_runs(
    lab: Lab, runs: Sequence[dataset.Dataset], series: tuple[str, ...], path: Path, stamp: str = ""
) -> Path:
    """`leaklab compare`'s figure (leaklab.report.plot), sized for a 16:9 slide."""
    report.plot(lab, list(runs), path, series, _metadata(stamp))
    return path


def plot_fit(lab: Lab, ds: dataset.Dataset, series: str, path: Path, stamp: str = "") -> Path:
    """One run's series, its steady window and the fitted slope with its 95% CI, drawn
    with the analysis functions the harness's summary uses."""
    factor, unit = scale(series)
    frame = ds.series(series)
    load_s = load_seconds(ds)
    window = steady_window(frame, lab.analysis.warmup_s, load_s, disturbed(ds))
    fit = series_fit(ds, series, lab.analysis.warmup_s)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.plot(
        frame["t_s"], frame["value"] / factor, color=style.colour(ds.variant), lw=1.2, label=ds.name
    )
    ax.axvspan(
        frame["t_s"].min(), lab.analysis.warmup_s, color="grey", alpha=0.12, lw=0, label="warm-up"
    )
    ax.axvline(load_s, color="black", ls=":", lw=1, label="load end")
    if fit is not None:
        t = window["t_s"].to_numpy()
        y = window["value"].to_numpy() / factor
        mid_t = float(t.mean())
        mid_y = float(y.mean())
        line = mid_y + fit.slope * (t - mid_t) / 60.0
        ax.plot(t, line, color="black", lw=2, label=f"fit: {fit} {unit_per_min(series)}")
        for edge in (fit.low, fit.high):
            ax.plot(t, mid_y + edge * (t - mid_t) / 60.0, color="black", lw=0.8, ls="--")
    ax.set_title(f"{style.series_title(series)}: {ds.name}, steady window and slope (95% CI)")
    ax.set_xlabel("seconds since load start")
    ax.set_ylabel(unit or "count")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata=_metadata(stamp))
    plt.close(fig)
    return path


# ---------------------------------------------------------------- regions


def generate(root: Path, region: Region, on: Page | None = None) -> tuple[str, PlotJob | None]:
    """What a region's body should be, from its sources now (and the plot it needs)."""
    if region.kind == "include":
        return excerpt(root, region.arg), None
    if region.kind == "table":
        return summary_table(root, region.arg), None
    job, image = plot_job(root, region.arg, on, region.body)
    return image, job


def expand(
    root: Path, text: str, kinds: Sequence[str] = KINDS, on: Page | None = None
) -> tuple[str, list[PlotJob]]:
    """The deck (or README) with its regions of the given kinds regenerated (markers kept,
    other regions as they were), and the plots it needs."""
    out, jobs, pos = [], [], 0
    for region in regions(text):
        if region.kind in kinds:
            body, job = generate(root, region, on)
        else:
            body, job = region.body, None
        out.append(text[pos : region.start])
        out.append(f"<!-- {region.kind}: {region.arg} -->\n{body}<!-- /{region.kind} -->")
        if job:
            jobs.append(job)
        pos = region.end
    out.append(text[pos:])
    return "".join(out), jobs


def slides_of(text: str) -> list[str]:
    """The deck's slides: the front matter removed, split on `---` lines outside code."""
    body = re.sub(r"\A---\n.*?\n---\n", "", text, count=1, flags=re.S)
    pages: list[str] = []
    current: list[str] = []
    fenced = False
    for line in body.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if line.strip() == "---" and not fenced:
            pages.append("\n".join(current))
            current = []
        else:
            current.append(line)
    pages.append("\n".join(current))
    return pages


def has_notes(page: str) -> bool:
    for m in COMMENT.finditer(page):
        inner = m.group(1).strip()
        if DIRECTIVE.match(inner) or re.match(rf"/?({'|'.join(KINDS)})\b", inner):
            continue
        if inner:
            return True
    return False


def plot_problem(on: Page, job: PlotJob) -> str | None:
    """Why a plot's committed image is not what its marker draws now, if it is not."""
    image = on.images / job.name
    where = f"{on.label}: {on.link}/{job.name}"
    if not image.is_file():
        return f"{where} is missing (leaklab slides sync draws it)"
    stamp = read_stamp(image)
    if stamp is None:
        return f"{where} has no source stamp (leaklab slides sync redraws it)"
    if stamp != job.stamp:
        return f"{where} was drawn from an older dataset: leaklab slides sync"
    return None


def check(root: Path | None = None, paths: Sequence[Path] | None = None) -> list[str]:
    """Problems in the decks and lab READMEs: stale or broken generated regions, plots
    missing or drawn from older datasets, slides without notes; and, for all of them,
    plots nothing uses."""
    root = root or repo_root()
    chosen = [page(root, p) for p in paths] if paths is not None else pages(root)
    problems = []
    for on in chosen:
        text = on.path.read_text()
        for region in regions(text):
            try:
                want, job = generate(root, region, on)
            except LeakLabError as exc:
                problems.append(f"{on.label}: {exc}")
                continue
            if region.body != want:
                problems.append(
                    f"{on.label}: <!-- {region.kind}: {region.arg} --> no longer matches "
                    "its source (leaklab slides sync, then review the slide)"
                )
            elif job and (problem := plot_problem(on, job)):
                problems.append(problem)
        if on.readme:
            continue
        for number, slide in enumerate(slides_of(text), start=1):
            if NOT_CONTENT.search(slide) or not slide.strip():
                continue
            if not has_notes(slide):
                problems.append(f"{on.label}: slide {number} has no speaker notes")
    if paths is None:
        problems += [
            f"{IMAGES}/{name}: no deck uses it (leaklab slides sync removes it)"
            for name in unused_plots(root)
        ]
        problems += [
            f"{image.relative_to(root)}: no plot marker in its README draws it "
            "(leaklab slides sync removes it)"
            for image in unused_lab_images(root)
        ]
    return problems


def plot_jobs(root: Path) -> dict[str, PlotJob]:
    """Every plot the decks use, by file name."""
    jobs: dict[str, PlotJob] = {}
    for deck in decks(root):
        for job in page_jobs(root, page(root, deck)):
            jobs[job.name] = job
    return jobs


def page_jobs(root: Path, on: Page) -> list[PlotJob]:
    """The plots one page draws."""
    return [
        plot_job(root, region.arg, on, region.body)[0]
        for region in regions(on.path.read_text())
        if region.kind == "plot"
    ]


def unused_plots(root: Path) -> list[str]:
    folder = plots_dir(root)
    used = plot_jobs(root)
    return sorted(p.name for p in folder.glob("*") if p.is_file() and p.name not in used)


def unused_lab_images(root: Path) -> list[Path]:
    """Images in a lab's img/ that no plot marker of its README draws: the folder holds
    only what `sync` draws, so each image there is redrawn when its datasets change."""
    unused = []
    for folder in sorted(root.glob(f"labs/[0-9][0-9]-*/{LAB_IMAGES}")):
        readme = folder.parent / "README.md"
        used = (
            {job.name for job in page_jobs(root, page(root, readme))} if readme.is_file() else set()
        )
        unused += [p for p in sorted(folder.glob("*")) if p.is_file() and p.name not in used]
    return unused


def draw(root: Path, jobs: Sequence[PlotJob], folder: Path | None = None) -> list[Path]:
    """Draw each plot into `folder` (slides/plots/); return those whose bytes changed."""
    folder = folder or plots_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    changed = []
    for job in jobs:
        target = folder / job.name
        fresh = target.with_name(f".{target.stem}.new.png")
        try:
            job.draw(fresh)
            if target.is_file() and filecmp.cmp(target, fresh, shallow=False):
                continue
            fresh.replace(target)
            changed.append(target)
        finally:
            fresh.unlink(missing_ok=True)
    return changed


def sync(
    root: Path | None = None, kinds: Sequence[str] = KINDS, only: Sequence[str] = ()
) -> list[Path]:
    """Rewrite the generated regions (of the given kinds) of every deck and lab README,
    or of those whose deck or lab name starts with one of `only`, from their sources;
    redraw their plots; with every page, also remove the plots nothing uses. Return what
    changed."""
    root = root or repo_root()
    changed = []
    for on in pages(root, only):
        text = on.path.read_text()
        new, jobs = expand(root, text, kinds, on)
        if new != text:
            on.path.write_text(new)
            changed.append(on.path)
        if "plot" in kinds and (only or on.readme):
            changed += draw(root, jobs, on.images)
    if "plot" in kinds and not only:
        changed += draw(root, list(plot_jobs(root).values()))
        for name in unused_plots(root):
            (plots_dir(root) / name).unlink()
            changed.append(plots_dir(root) / name)
        for image in unused_lab_images(root):
            image.unlink()
            changed.append(image)
    return changed


def local_images(text: str, deck_dir: Path) -> list[str]:
    """The deck's images that live under its own folder, as written (relative)."""
    base = deck_dir.resolve()
    return [
        m.group(2)
        for m in IMAGE.finditer(text)
        if (base / m.group(2)).resolve().is_relative_to(base)
    ]


def for_marp(text: str, deck_dir: Path, out: Path) -> str:
    """Remove the markers; images under the deck's folder keep their relative path (the
    build copies them beside the deck), others are re-pointed from `out`."""
    text = re.sub(rf"<!-- /?({'|'.join(KINDS)})(: [^>]*?)? -->\n?", "", text)
    local = set(local_images(text, deck_dir))

    def repoint(m: re.Match[str]) -> str:
        if m.group(2) in local:
            return m.group(0)
        target = (deck_dir / m.group(2)).resolve()
        return f"{m.group(1)}{os.path.relpath(target, out)})"

    return IMAGE.sub(repoint, text)


def copy_images(text: str, deck_dir: Path, out: Path) -> None:
    """Copy the deck's own images into `out` at the same relative paths."""
    for image in local_images(text, deck_dir):
        source = deck_dir / image
        if not source.is_file():
            raise LeakLabError(f"{source} is missing", "leaklab slides sync draws the plots")
        target = out / image
        if target.resolve() != source.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)


def marp_bin(root: Path) -> Path:
    marp = slides_dir(root) / "node_modules" / ".bin" / "marp"
    if not marp.exists():
        raise LeakLabError(
            "the Marp CLI is not installed in slides/node_modules", "scripts/setup-slides"
        )
    return marp


def build(
    root: Path | None = None,
    out: Path | None = None,
    pdf: bool = False,
    images: bool = False,
    only: Sequence[str] = (),
) -> list[Path]:
    """Expand, plot and render every deck (or those whose name starts with one of `only`)."""
    root = root or repo_root()
    out = out or slides_dir(root) / "build"
    out.mkdir(parents=True, exist_ok=True)
    chosen = [d for d in decks(root) if not only or any(d.name.startswith(o) for o in only)]
    sources = []
    for deck in chosen:
        text, _ = expand(root, deck.read_text())
        copy_images(text, deck.parent, out)
        target = out / deck.name
        target.write_text(for_marp(text, deck.parent, out))
        sources.append(target)
    theme = slides_dir(root) / "theme" / "leaklab.css"
    base = [str(marp_bin(root)), "--theme-set", str(theme), "--allow-local-files"]
    formats: list[list[str]] = [[]]
    if pdf:
        formats.append(["--pdf"])
    if images:
        formats.append(["--images", "png"])
    built: list[Path] = []
    for extra in formats:
        # `--` ends the options: Marp prints its usage and exits 0 when an option
        # swallows the file names, so the outputs are checked below as well.
        done = subprocess.run([*base, *extra, "--", *map(str, sources)], check=False, cwd=out)
        if done.returncode != 0:
            raise LeakLabError(f"marp failed (exit {done.returncode})", "read its output above")
    suffixes = [".html", ".pdf"] if pdf else [".html"]
    expected = [(src, src.with_suffix(suffix)) for src in sources for suffix in suffixes]
    built = [target for _, target in expected]
    missing = [
        str(target)
        for src, target in expected
        if not target.exists() or target.stat().st_mtime < src.stat().st_mtime
    ]
    if missing:
        raise LeakLabError(f"marp did not write {', '.join(missing)}", "run it by hand to see why")
    return built


def new_deck(lab_name: str, root: Path | None = None) -> Path:
    """Start `slides/<slug>.md` from the template, filled with the lab's lab.toml."""
    root = root or repo_root()
    lab = load_lab(lab_name, root)
    target = slides_dir(root) / f"{lab.slug}.md"
    if target.exists():
        raise LeakLabError(f"{target} exists", "edit it, or remove it to start again")
    template = (slides_dir(root) / "template-lab.md").read_text()
    values = {
        "NN": lab.number,
        "SLUG": lab.slug,
        "TITLE": lab.title,
        "RUNTIME": lab.runtime,
        "STORY": lab.story,
        "VERDICT_SERIES": lab.analysis.verdict_series,
    }
    for key, value in values.items():
        template = template.replace(f"{{{{{key}}}}}", value)
    target.write_text(template)
    return target
