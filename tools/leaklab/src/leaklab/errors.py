"""One error type for everything a user can get wrong, with the fix on the same line."""

from __future__ import annotations


class LeakLabError(Exception):
    """A failure the user can act on: what went wrong, and how to fix it.

    The CLI prints these as one line and exits non-zero; anything else is a bug
    and keeps its traceback.
    """

    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.what} (fix: {self.fix})" if self.fix else self.what


class UsageError(LeakLabError):
    """A command's arguments or options cannot be used as given (a size that is not a
    size, an option this lab cannot take): the CLI's usage exit (2), even inside a
    command whose own failures exit 1."""
