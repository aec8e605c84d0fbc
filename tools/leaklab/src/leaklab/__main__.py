"""`python -m leaklab` is the `leaklab` command."""

from leaklab.cli import main

main()
