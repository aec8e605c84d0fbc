"""One front end: every command is under `leaklab`, and a mistake exits 2 with one line."""

from __future__ import annotations

from pathlib import Path

from test_base import run_cli


def test_every_tool_is_a_leaklab_command(fake_repo: Path) -> None:
    shown = run_cli(fake_repo, "--help")
    assert shown.returncode == 0
    for command in ("capture", "bench", "notebooks", "slides", "hint", "dev", "grade"):
        assert f" {command} " in shown.stdout, command
    slides = run_cli(fake_repo, "slides", "--help")
    assert all(f" {c} " in slides.stdout for c in ("check", "sync", "build", "new"))


def test_a_named_capture_checks_its_names_before_running(fake_repo: Path) -> None:
    for args, message in (
        (("--into", "burst"), "--into and --order name where a --named run goes"),
        (("--named", "x", "--into", "../elsewhere"), "plain names, not paths"),
    ):
        done = run_cli(fake_repo, "capture", "90", *args)
        assert done.returncode == 2 and message in " ".join(done.stderr.split())
    assert not (fake_repo / "datasets" / "90-fake").exists() or not any(
        (fake_repo / "datasets" / "90-fake").rglob("*.csv")
    )
