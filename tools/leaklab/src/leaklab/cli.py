"""The `leaklab` command: parses arguments, calls the library, prints. Nothing else.

Each command imports what it needs when it runs: pandas, statsmodels and matplotlib
take seconds to import on a cold machine, and `leaklab --help`, `diff` or `doctor`
never need them.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec

import typer
from rich.console import Console
from rich.markup import escape

from leaklab.errors import LeakLabError, UsageError
from leaklab.paths import repo_root, work_dir
from leaklab.procs import interrupts_as_keyboard_interrupt
from leaklab.spec import Lab, lab_slugs, load_lab
from leaklab.variants import PATCH_PREFIX, UNORDERED, dataset_name

if TYPE_CHECKING:
    from leaklab.dataset import Dataset
    from leaklab.runner import RunOptions

P = ParamSpec("P")

app = typer.Typer(
    help="Leak Lab: build, run, measure and compare the course's leaking services.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


class Failed(LeakLabError):
    """What was asked ran and failed (a build, tests, a run): exit 1, not 2."""


def failing(func: Callable[P, None]) -> Callable[P, None]:
    """Inside a build, test or run command, a harness error is that command failing
    (exit 1); usage and environment errors raised before it (an unknown lab) stay 2."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            func(*args, **kwargs)
        except Failed:
            raise
        except LeakLabError as exc:
            if _usage(exc):
                raise
            raise Failed(exc.what, exc.fix) from None

    return wrapper


def _usage(exc: LeakLabError) -> bool:
    """Errors about what was typed or what is installed, not about the code built: a
    UsageError, or (from modules that raise the plain type) one worded as such."""
    words = ("unknown", "no lab", "not installed", "is missing", "does not exist")
    return isinstance(exc, UsageError) or any(w in exc.what for w in words)


def version_callback(value: bool) -> None:
    if value:
        from leaklab import __version__

        print(f"leaklab {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=version_callback, is_eager=True, help="print the version"
        ),
    ] = False,
) -> None:
    """Leak Lab: build, run, measure and compare the course's leaking services."""


PIPE_WIDTH = 200


def _console(stderr: bool = False) -> Console:
    """A pipe has no width, and Rich's default for one (80 columns) cuts a diff's code and
    a wide table's columns in a log or `| less`; take a wide one there. A terminal's own
    width, or COLUMNS when set, is kept."""
    stream = sys.stderr if stderr else sys.stdout
    piped = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(stderr=stderr, width=PIPE_WIDTH if piped else None)


out = _console()
err = _console(stderr=True)


def _complete_lab(incomplete: str) -> list[str]:
    """Shell completion of a lab argument: the course's lab numbers and folders."""
    slugs = lab_slugs()
    return [c for s in slugs for c in (s[:2], s) if c.startswith(incomplete)]


LabArg = Annotated[
    str,
    typer.Argument(
        metavar="LAB",
        help="lab number or folder, e.g. 01 or 01-go-bulk-abort",
        autocompletion=_complete_lab,
    ),
]
VariantOpt = Annotated[
    str,
    typer.Option(
        "--variant",
        "-v",
        help="broken, stage-K, fixed, mine (your edits), or patch:FILE (a fix as a patch)",
    ),
]
DurationOpt = Annotated[
    float | None, typer.Option(help="seconds of load (default: the lab's)", min=1, max=600)
]
RateOpt = Annotated[float | None, typer.Option(help="requests per second (default: the lab's)")]
FixedOpt = Annotated[
    bool,
    typer.Option(
        "--fixed-duration",
        help="run the whole duration (default: stop the load once the verdict is decided)",
    ),
]
WithOpt = Annotated[
    list[str] | None,
    typer.Option("--with", help="also build a named extra of lab.toml's [build.extras]"),
]
MemoryLimitOpt = Annotated[
    str | None,
    typer.Option(
        "--memory-limit",
        help="run the service in a memory cgroup of this size (256M, 154Mi, 1G; M = MiB) "
        "and record its OOM kill",
    ),
]
ParamOpt = Annotated[
    list[str] | None, typer.Option("--param", "-p", help="another load parameter, KEY=VALUE")
]


def interruptible(func: Callable[P, None]) -> Callable[P, None]:
    """Ctrl-C (or SIGTERM) inside a command: the cleanup has run; say so and exit 130."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            func(*args, **kwargs)
        except KeyboardInterrupt:
            err.print("interrupted: every process stopped, nothing written")
            raise typer.Exit(130) from None

    return wrapper


def _params(duration: float | None, rate: float | None, extra: list[str] | None) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in extra or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise LeakLabError(f"--param {item!r} is not KEY=VALUE", "e.g. --param timeout=300ms")
        params[key] = value
    if duration is not None:
        params["duration"] = f"{duration:g}"
    if rate is not None:
        params["rate"] = f"{rate:g}"
    return params


def _memory_limit(lab: Lab, variant: str, size: str | None) -> int | None:
    """--memory-limit in bytes, checked before anything is built or started."""
    if size is None:
        return None
    from leaklab import memlimit

    idle = memlimit.idle_rss(lab.dataset_dir, dataset_name(variant))
    return memlimit.check(lab.analysis.verdict_series, size, idle)


def _order(lab: Lab, variant: str) -> int:
    variants = [*lab.variants, "mine"]
    return variants.index(variant) if variant in variants else UNORDERED


def _run_and_print(lab: Lab, opts: RunOptions) -> Dataset:
    from leaklab import report
    from leaklab.runner import run

    result = run(lab, opts, log=lambda line: err.print(line, highlight=False))
    summary = report.summarise(lab, result.data)
    out.print(report.table(lab, [summary]))
    for line in report.limit_lines([summary]):
        out.print(line, highlight=False)
    if summary.busy:
        err.print(summary.busy, highlight=False, markup=False)
    out.print(f"dataset: {result.csv} (+ .json)")
    return result.data


@app.command("list")
def list_labs(
    variants: Annotated[
        str | None, typer.Option("--variants", help="print only this lab's variants")
    ] = None,
) -> None:
    """The labs, their variants and what each teaches."""
    if variants is not None:
        for name in load_lab(variants).variants:
            print(name)
        return
    for slug in lab_slugs():
        lab = load_lab(slug)
        out.print(f"[bold]{lab.slug}[/bold] ({lab.runtime}) {lab.title}")
        out.print(f"    variants: {', '.join(lab.variants)}, mine")


@app.command()
@interruptible
@failing
def build(lab_name: LabArg, variant: VariantOpt = "broken") -> None:
    """Build one variant (cached by content) and print where its files are."""
    from leaklab.build import build_variant

    lab = load_lab(lab_name)
    built = build_variant(lab, variant, log=lambda s: err.print(s, highlight=False))
    out.print(str(built.out))


@app.command()
@interruptible
@failing
def test(lab_name: LabArg, variant: VariantOpt = "broken") -> None:
    """Run the lab's unit tests on a variant's tree; on a fix (mine, or patch:FILE), exactly
    the gate `leaklab check` runs."""
    from leaklab.build import build_variant, run_tests

    lab = load_lab(lab_name)
    # A fix, in the tree or as a patch: the grade's gate, as `check` runs it (the course's
    # tests and the solution's regression tests, not only the service's own).
    if variant == "mine" or variant.startswith(PATCH_PREFIX):
        _check_and_print(lab, variant)
        return
    built = build_variant(lab, variant, log=lambda s: err.print(s, highlight=False))
    log = built.src.parent / f"test-{dataset_name(variant)}.log"
    run_tests(lab.for_variant(variant), built, log)
    out.print(f"{lab.slug} {variant}: unit tests pass (log: {log})")


def _check_and_print(lab: Lab, variant: str = "mine") -> bool:
    """`leaklab check`: print its report; exit 1 when the gate fails."""
    from leaklab import check

    checked = check.check(lab, log=lambda s: err.print(s, highlight=False), variant=variant)
    for line in check.report(lab, checked):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    if not checked.passed:
        raise typer.Exit(1)
    return True


@app.command("check")
@interruptible
def check_cmd(lab_name: LabArg) -> None:
    """The gate a grade runs, on your tree: it builds, and the course's tests and the
    solution's regression tests pass; exit 0 pass, 1 fail."""
    _check_and_print(load_lab(lab_name))


@app.command("watch")
def watch_cmd(lab_name: LabArg) -> None:
    """`leaklab check` on every save in the lab's editable folders; Ctrl-C ends it."""
    from leaklab import check, watch

    lab = load_lab(lab_name)
    say = functools.partial(err.print, highlight=False)

    def again(files: list[str]) -> None:
        out.rule(f"lab {lab.number}: check" + (f" ({', '.join(files)} changed)" if files else ""))
        checked = check.check(lab, log=say)
        for line in check.report(lab, checked):
            out.print(line, highlight=False, markup=False, soft_wrap=True)
        if checked.passed:
            _offer_grade(lab)

    def ready() -> None:
        out.print(
            f"watching labs/{lab.slug}/{', '.join(lab.editable)}: save to check again, "
            "Ctrl-C to stop",
            highlight=False,
        )

    try:
        watch.run(lab, again, ready)
    except KeyboardInterrupt:
        out.print(f"stopped watching lab {lab.number}", highlight=False)


def _offer_grade(lab: Lab) -> None:
    """After a passing check: the measured run, if the learner at a terminal says so."""
    from leaklab import status
    from leaklab.grading.grade import grade
    from leaklab.grading.report import grade_report

    if not sys.stdin.isatty():
        return
    if not typer.confirm(f"run the measured grade now (leaklab grade {lab.number})?"):
        return
    result = grade(lab, "mine", log=lambda s: err.print(s, highlight=False))
    status.record(lab, "grade", result.passed)
    for line in grade_report(lab, result):
        out.print(line, highlight=False)


@app.command("status")
def status_cmd() -> None:
    """Every lab: not started, changed, checked, measured or passed (local results)."""
    from leaklab import status

    root = repo_root()
    if not status.has_results(root) and not any(
        status.lab_status(load_lab(s, root)).state != "not started" for s in lab_slugs(root)
    ):
        raise LeakLabError(
            "no results yet: no lab changed, checked, run or graded in this clone "
            "(start with `leaklab run 01`)"
        )
    for slug in lab_slugs(root):
        state = status.lab_status(load_lab(slug, root))
        detail = f"  ({state.detail})" if state.detail else ""
        out.print(f"{slug:<28} {state.state:<12}{detail}", highlight=False, soft_wrap=True)


@app.command("run")
@interruptible
@failing
def run_cmd(
    lab_name: LabArg,
    variant: VariantOpt = "broken",
    duration: DurationOpt = None,
    rate: RateOpt = None,
    param: ParamOpt = None,
    port: Annotated[int | None, typer.Option(help="fixed port (default: a free one)")] = None,
    idle: Annotated[float | None, typer.Option(help="seconds to idle after the load")] = None,
    fixed_duration: FixedOpt = False,
    extras: WithOpt = None,
    memory_limit: MemoryLimitOpt = None,
) -> None:
    """Run one variant under the lab's load and print its summary."""
    from leaklab.runner import RunOptions

    lab = load_lab(lab_name)
    limit = _memory_limit(lab, variant, memory_limit)
    _run_and_print(
        lab,
        RunOptions(
            variant,
            _params(duration, rate, param),
            port,
            idle,
            name=dataset_name(variant),
            order=_order(lab, variant),
            adaptive=not fixed_duration and limit is None,  # a limit's run waits for the kill
            extras=tuple(extras or ()),
            memory_limit=limit,
        ),
    )


@app.command()
@interruptible
def capture(
    lab_name: LabArg,
    variant: VariantOpt = "broken",
    duration: DurationOpt = None,
    rate: RateOpt = None,
    param: ParamOpt = None,
    named: Annotated[
        str | None,
        typer.Option("--named", help="a run beside the standard ones: its dataset's name"),
    ] = None,
    into: Annotated[
        str, typer.Option(help="with --named: a subfolder of datasets/<lab>/ (e.g. burst)")
    ] = "",
    order: Annotated[int | None, typer.Option(help="with --named: its place in tables")] = None,
    extras: WithOpt = None,
    memory_limit: MemoryLimitOpt = None,
) -> None:
    """A run whose dataset lands in datasets/<lab>/ (for the notebooks and READMEs);
    always the whole duration: a published run shows the whole load."""
    from leaklab.runner import RunOptions

    lab = load_lab(lab_name)
    if (into or order is not None) and not named:
        raise LeakLabError("--into and --order name where a --named run goes", "add --named")
    if "/" in into or ".." in into or (named and ("/" in named or named.startswith("."))):
        raise LeakLabError("--named and --into are plain names, not paths", "e.g. --into burst")
    dest = lab.root / "datasets" / lab.slug / into
    limit = _memory_limit(lab, variant, memory_limit)
    options = RunOptions(
        variant,
        _params(duration, rate, param),
        dest=dest,
        name=named or dataset_name(variant),
        order=order if order is not None else _order(lab, variant),
        extras=tuple(extras or ()),
        memory_limit=limit,
    )
    _run_and_print(lab, options)


@app.command()
def compare(
    lab_name: LabArg,
    source: Annotated[
        str, typer.Option("--from", help="runs (your latest runs) or datasets (captured)")
    ] = "runs",
    png: Annotated[Path | None, typer.Option(help="where to write the plot")] = None,
    wide: Annotated[
        bool, typer.Option("--wide", help="every fitted series and count (needs ~200 columns)")
    ] = False,
) -> None:
    """Put runs side by side: the summary table, the separation, and a PNG over time."""
    from leaklab import dataset, report

    lab = load_lab(lab_name)
    folders = {
        "runs": work_dir(lab.root) / "runs" / lab.slug,
        "datasets": lab.root / "datasets" / lab.slug,
    }
    if source not in folders:
        raise LeakLabError(f"--from {source!r} is unknown", "use --from runs or --from datasets")
    runs = dataset.read_folder(folders[source]) if folders[source].is_dir() else []
    if not runs:
        raise LeakLabError(
            f"no runs in {folders[source]}",
            f"run `leaklab run {lab.number} --variant broken` first, or use --from datasets",
        )
    summaries = [report.summarise(lab, ds) for ds in runs]
    out.print(report.table(lab, summaries, wide=wide))
    for projection in report.limit_lines(summaries):
        out.print(projection, highlight=False)
    for run in summaries:
        if run.busy:
            err.print(f"{run.name}: {run.busy}", highlight=False, markup=False)
    if line := report.separation(lab, summaries):
        out.print(line)
    target = png or work_dir(lab.root) / "reports" / f"{lab.slug}-{source}.png"
    out.print(f"plot: {report.plot(lab, runs, target)}")


# The demo's runs are shorter than a lab's standard run: lab 01's broken heap has grown
# by ~40 MB in 30 s, plain on the plot and in the table, and a learner sees it in about
# a minute and a half instead of three. Grades and captures keep the lab's duration.
DEMO_DURATION_S = 30.0


@app.command()
@interruptible
def demo(
    lab_name: Annotated[str, typer.Argument(metavar="LAB", help="lab to demonstrate")] = "01",
    duration: DurationOpt = None,
    fixed_duration: FixedOpt = False,
) -> None:
    """The main job: build broken and fixed, run both under the same load, compare."""
    from leaklab.runner import RunOptions, run

    lab = load_lab(lab_name)
    params = _params(duration or DEMO_DURATION_S, None, None)
    for variant in ("broken", "fixed"):
        err.rule(f"{lab.slug}: {variant}")
        run(
            lab,
            RunOptions(variant, params, order=_order(lab, variant), adaptive=not fixed_duration),
            log=lambda s: err.print(s, highlight=False),
        )
    err.rule("compare")
    compare(lab.slug, "runs", None)
    out.print(
        f"next: open the lab's README (labs/{lab.slug}/README.md), then the notebook "
        f"(notebooks/{lab.slug}.ipynb)"
    )


@app.command("grade")
@interruptible
def grade_cmd(
    lab_name: LabArg,
    variant: Annotated[
        str, typer.Option("--variant", "-v", help="mine (your working tree), or any variant")
    ] = "mine",
    patch: Annotated[
        Path | None, typer.Option(help="grade broken plus this patch (a submitted fix)")
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json",
            metavar="FILE",
            help="also write the result (docs/grading/result.schema.json); - for stdout",
        ),
    ] = None,
    junit: Annotated[
        Path | None, typer.Option(metavar="FILE", help="also write the result as JUnit XML")
    ] = None,
    plot: Annotated[
        Path | None, typer.Option(metavar="FILE", help="also plot the graded run (PNG)")
    ] = None,
    course: Annotated[
        str | None,
        typer.Option(
            envvar="LEAKLAB_COURSE_REF",
            help="the course's published commit or tag (root: the first commit): grade "
            "with its harness and labs/base.toml, never the working tree's",
        ),
    ] = None,
    fixed_duration: FixedOpt = False,
) -> None:
    """Grade a fix: unit tests, then the lab's standard load. Exit 0 pass; 1 fail or not
    attempted; 2 usage or environment."""
    import os

    from leaklab.base import COURSE_REF_ENV
    from leaklab.grading import course as published
    from leaklab.grading import junit as junit_xml
    from leaklab.grading import result as result_format
    from leaklab.grading.grade import GradeResult, grade
    from leaklab.grading.report import grade_report

    root = repo_root()
    commit = published.resolve(root, course) if course else None
    if commit and not os.environ.get(published.REEXEC_ENV) and published.differs(root, commit):
        err.print(
            f"the grader in this tree is not the course's: grading with the published "
            f"one (commit {commit[:12]})",
            highlight=False,
        )
        raise typer.Exit(published.rerun_published(root, commit, sys.argv[1:]))
    if commit:
        os.environ[COURSE_REF_ENV] = commit  # labs/base.toml from the published commit
    lab = load_lab(lab_name)
    if patch is not None:
        if not patch.is_file():
            raise LeakLabError(f"--patch {patch} does not exist", "give the path of a .patch file")
        variant = f"{PATCH_PREFIX}{patch.resolve()}"
    control = published.ignored(root, commit) if commit else []
    if control:
        err.print(
            "ignored (the course's machinery; the published version grades): " + ", ".join(control),
            highlight=False,
        )
    to_stdout = json_out is not None and str(json_out) == "-"
    show = err if to_stdout else out

    def document(result: GradeResult) -> dict[str, object]:
        result.ignored = sorted({*result.ignored, *control})
        editable = [f"labs/{lab.slug}/{e}" for e in lab.editable]
        return result_format.to_document(
            result, published.identity(root, commit), published.learner(root, editable)
        )

    def save(doc: dict[str, object]) -> None:
        if to_stdout:
            print(json.dumps(doc, indent=2, sort_keys=True))
        elif json_out is not None:
            result_format.write(doc, json_out)
            show.print(f"result: {json_out}", highlight=False)
        if junit is not None:
            junit_xml.write(doc, junit)

    try:
        result = grade(
            lab, variant, log=lambda s: err.print(s, highlight=False), fixed_duration=fixed_duration
        )
    except LeakLabError as exc:
        # The grade could not run here (a toolchain, git): an `error` result, exit 2.
        failed = GradeResult(lab.slug, variant, status="error", stage="error", reason=exc.what)
        failed.thresholds = {
            "flat_below": lab.analysis.flat_below,
            "grows_above": lab.analysis.grows_above,
        }
        save(document(failed))
        raise
    if variant == "mine" and result.status != "not_attempted":  # for `leaklab status`
        from leaklab import status

        status.record(lab, "grade", result.passed)
    doc = document(result)
    for line in grade_report(lab, result):
        show.print(line, highlight=False)
    save(doc)
    if plot is not None and result.dataset:
        from leaklab import dataset, report

        graded = dataset.read(Path(result.dataset).with_suffix(".json"))
        show.print(f"plot: {report.plot(lab, [graded], plot)}", highlight=False)
    raise typer.Exit(0 if result.passed else 1)


@app.command("diff")
def diff_cmd(
    lab_name: LabArg,
    variant: Annotated[str, typer.Option("--variant", "-v", help="whose change to show")] = "mine",
    html_out: Annotated[Path | None, typer.Option("--html", help="also write an HTML page")] = None,
) -> None:
    """The learner's change against broken, beside the solution's patch series."""
    from rich.syntax import Syntax

    from leaklab.grading import diff

    lab = load_lab(lab_name)
    parts = diff.sections(lab, variant)
    for title, text in parts:
        out.rule(title)
        if out.is_terminal:
            out.print(Syntax(text, "diff", background_color="default"))
        else:  # a pipe: the diff as it is, never wrapped or cut
            out.print(text, markup=False, highlight=False, soft_wrap=True, end="")
    if html_out is not None:
        html_out.parent.mkdir(parents=True, exist_ok=True)
        html_out.write_text(diff.to_html(lab, parts))
        out.print(f"html: {html_out}")


class_app = typer.Typer(
    help="Instructors: many students' grade results (docs/grading/).", no_args_is_help=True
)
app.add_typer(class_app, name="class")


@class_app.command("board")
def class_board(
    results: Annotated[
        Path, typer.Argument(help="a folder of result files: <student>/grade-NN.json")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="the page to write")] = Path(
        "board.html"
    ),
    grader_tree: Annotated[
        str | None,
        typer.Option(
            help="the published grader's tree id (default: tools/leaklab in this checkout)"
        ),
    ] = None,
) -> None:
    """One static page: a row per student, a column per lab. Exit 1 when some files
    could not be used (each named, with why); the page is written regardless."""
    from leaklab import base
    from leaklab.grading import board

    if not results.is_dir():
        raise LeakLabError(f"{results} is not a folder", "give the folder the results are in")
    root = repo_root()
    tree = grader_tree or base.git_or_empty(
        root, "rev-parse", "-q", "--verify", "HEAD:tools/leaklab"
    )
    collected = board.collect(results, lab_slugs(root))
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(board.render(collected, tree or None))
    for problem in collected.problems:
        err.print(f"skipped {problem}", highlight=False, markup=False, soft_wrap=True)
    out.print(f"board: {output} ({len(collected.cells)} students)", highlight=False)
    if collected.problems:
        raise typer.Exit(1)


@class_app.command("summary")
def class_summary(
    files: Annotated[list[Path], typer.Argument(help="result files (grade --json)")],
) -> None:
    """The results as Markdown, for $GITHUB_STEP_SUMMARY."""
    from leaklab.grading import result as result_format
    from leaklab.grading import summary

    bad = False
    for path in files:
        try:
            doc = result_format.read(path)
        except ValueError as exc:
            err.print(f"{path}: {exc}", highlight=False, markup=False, soft_wrap=True)
            bad = True
            continue
        for line in summary.markdown(doc):
            print(line)
    if bad:
        raise typer.Exit(1)


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Check toolchains, ports, memory and disk; say how to fix what is missing."""
    from leaklab.doctor import lines as doctor_lines
    from leaklab.doctor import run_checks

    checks = run_checks(repo_root())
    if as_json:
        out.print_json(json.dumps([c.__dict__ for c in checks]))
    else:
        for line in doctor_lines(checks):
            out.print(line, highlight=False)
    if any(c.required and not c.ok for c in checks):
        raise typer.Exit(1)


@app.command()
def hint(
    lab_name: LabArg,
    number: Annotated[
        int | None, typer.Argument(help="which hint (default: the next one you have not seen)")
    ] = None,
) -> None:
    """One hint at a time for a lab's exercise (the next one, or hint K again)."""
    from leaklab import hints

    lab = load_lab(lab_name)
    shown = hints.show(lab, number)
    out.print(f"[bold]hint {shown.number} of {shown.total}[/bold]: {shown.text}", highlight=False)
    out.print(shown.next_step, highlight=False)


@app.command()
@interruptible
def bench(
    lab_name: LabArg,
    capture: Annotated[
        bool, typer.Option(help="write into datasets/<lab>/ instead of .leaklab/reports/")
    ] = False,
) -> None:
    """The lab's per-operation benchmark on broken and fixed, side by side."""
    from leaklab.bench import bench as run_bench

    comparison, outputs = run_bench(load_lab(lab_name), capture)
    out.print(comparison, highlight=False, markup=False)
    err.print(f"outputs: {', '.join(str(f) for f in outputs)}", highlight=False)


@app.command()
def notebooks(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="notebooks to run (default: every course notebook)")
    ] = None,
    in_place: Annotated[
        bool, typer.Option("--in-place", help="write the outputs into the notebook itself")
    ] = False,
) -> None:
    """Execute notebooks top to bottom on the project's kernel (CI; --in-place refreshes
    the outputs GitHub renders)."""
    from nbclient.exceptions import CellExecutionError

    from leaklab.notebooks import execute

    for path in paths or sorted((repo_root() / "notebooks").glob("*.ipynb")):
        try:
            out.print(f"executed {path} -> {execute(path, in_place)}", highlight=False)
        except CellExecutionError as exc:
            err.print(f"[red]error:[/red] {path} failed:\n{exc}", highlight=False, markup=False)
            raise typer.Exit(1) from None


slides_app = typer.Typer(
    help="Authors: the decks in slides/ and the labs' README plots, generated from the labs."
)
app.add_typer(slides_app, name="slides")


@slides_app.command("check")
def slides_check() -> None:
    """Generated regions and plots match their sources; every slide has speaker notes."""
    from leaklab.authoring import slides

    problems = slides.check()
    for problem in problems:
        err.print(problem, highlight=False, markup=False)
    pages = f"{len(slides.decks())} decks, {len(slides.readmes())} lab READMEs"
    out.print(f"{pages}, {len(problems)} problems")
    if problems:
        raise typer.Exit(1)


@slides_app.command("sync")
def slides_sync(
    decks: Annotated[
        list[str] | None,
        typer.Argument(help="deck or lab name prefixes, e.g. 03 (default: all)"),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option(help="only regions of this kind (include, table, plot)")
    ] = None,
) -> None:
    """Rewrite the generated regions and redraw the plots of the decks and lab READMEs
    (slides/plots/, labs/NN-slug/img/), or of the named ones only."""
    from leaklab.authoring import slides

    for path in slides.sync(kinds=only or slides.KINDS, only=decks or []):
        out.print(f"updated {path}", highlight=False)


@slides_app.command("build")
def slides_build(
    decks: Annotated[list[str] | None, typer.Argument(help="deck name prefixes")] = None,
    dest: Annotated[Path | None, typer.Option("--out", help="default: slides/build")] = None,
    pdf: Annotated[bool, typer.Option(help="PDF too (needs Chromium: CHROME_PATH)")] = False,
    images: Annotated[bool, typer.Option(help="one PNG per slide, for review")] = False,
) -> None:
    """Expand and render the decks (Marp) into slides/build/."""
    from leaklab.authoring import slides

    for problem in slides.check():
        err.print(f"warning: {problem}", highlight=False, markup=False)
    for path in slides.build(out=dest, pdf=pdf, images=images, only=decks or []):
        out.print(f"built {path}", highlight=False)


@slides_app.command("new")
def slides_new(lab_name: LabArg) -> None:
    """Start a lab's deck from slides/template-lab.md."""
    from leaklab.authoring import slides

    out.print(f"created {slides.new_deck(lab_name)}", highlight=False)


dev_app = typer.Typer(help="Maintainers: keep the course consistent.", no_args_is_help=True)
app.add_typer(dev_app, name="dev")


@dev_app.command("lock")
def dev_lock() -> None:
    """Record each lab's published trees in labs/base.toml (commit it with the lab)."""
    from leaklab import dev

    out.print(f"wrote {dev.lock(repo_root())}")


@dev_app.command("new")
def dev_new(
    slug: Annotated[str, typer.Argument(help="NN-words-with-dashes, e.g. 06-go-timer-leak")],
    preset: Annotated[str, typer.Option(help="the toolchain: go, cargo, mix or sbt")] = "go",
) -> None:
    """Start a lab: a lab.toml that parses, a README skeleton, empty service/ and load/."""
    from leaklab.authoring.new_lab import new_lab

    for path in new_lab(repo_root(), slug, preset):
        out.print(f"wrote {path}", highlight=False)
    out.print("next: fill in the TODOs, then `leaklab dev check` lists what is missing")


@dev_app.command("check")
def dev_check() -> None:
    """The course agrees with itself: the base record, every stage, every lab's files."""
    from leaklab import dev

    problems = dev.check(repo_root())
    for line in dev.warnings(repo_root()):
        out.print(f"[yellow]![/yellow] {escape(line)}", highlight=False)
    for line in problems:
        out.print(f"[red]x[/red] {escape(line)}", highlight=False)
    if problems:
        raise typer.Exit(1)
    out.print(f"the course is consistent ({len(lab_slugs())} labs)")


@dev_app.command("figures")
def dev_figures(
    lab_name: Annotated[
        str | None, typer.Argument(help="one lab (01), or every lab and the course's files")
    ] = None,
    write_unsourced: Annotated[
        bool,
        typer.Option(
            help="rewrite the [unsourced] lists from the prose as it is now (review the diff)"
        ),
    ] = False,
) -> None:
    """Every figure the prose quotes, recomputed from its dataset (or lab.toml, or a
    recorded output) and found where it is quoted; the rest on shrink-only lists."""
    from leaklab import figures
    from leaklab.spec import resolve_slug

    root = repo_root()
    slug = resolve_slug(lab_name, root) if lab_name else None
    if write_unsourced:
        for one in [slug] if slug else [None, *lab_slugs(root)]:
            path = figures.rewrite_unsourced(root, one, "not declared yet")
            out.print(f"wrote {path}", highlight=False)
    report = figures.check(root)
    mine = [p for p in report.problems if slug is None or slug in p.file or slug in p.text]
    for problem in mine:
        out.print(f"[red]x[/red] {escape(str(problem))}", highlight=False)
    if mine:
        raise typer.Exit(1)
    out.print(
        f"{report.checked} declared figures match their sources; "
        f"{report.unsourced} still listed as unsourced"
    )


def main() -> None:
    """Entry point: one clear line for user errors, exit 130 on Ctrl-C, nothing half-written."""
    try:
        with interrupts_as_keyboard_interrupt():
            app()
    except LeakLabError as exc:
        err.print(f"[red]error:[/red] {exc.what}", highlight=False)
        if exc.fix:
            err.print(f"[yellow]fix:[/yellow] {exc.fix}", highlight=False)
        # 1: what was asked ran and failed; 2: usage or environment.
        sys.exit(1 if isinstance(exc, Failed) else 2)
