"""The course's pinned toolchains, as the harness passes them to the commands it runs.

Every lab is built and measured with one Go (each go.mod's `toolchain` line, the
scripts' `scripts/lib.sh`, CI and the devcontainer name the same one). A learner who runs
`leaklab run 01` from a plain shell has no GOTOOLCHAIN set, or Debian's and setup-go's
`local`, and the go.mod's `go 1.27` would then fail on an older installed Go: so the
harness selects the pin itself, unless GOTOOLCHAIN already names a version (the user's
own choice, kept)."""

from __future__ import annotations

import os
from collections.abc import Mapping

GO_TOOLCHAIN = "go1.27.3"


def env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables to add to a toolchain command's environment (empty when the user's
    GOTOOLCHAIN names a Go version)."""
    if environ.get("GOTOOLCHAIN", "").startswith("go1."):
        return {}
    return {"GOTOOLCHAIN": GO_TOOLCHAIN}
