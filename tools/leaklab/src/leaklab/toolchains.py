"""The course's pinned toolchains, as the harness passes them to the commands it runs.

Go: every lab is built and measured with one Go (each go.mod's `toolchain` line, the
scripts' `scripts/lib.sh`, CI and the devcontainer name the same one). A learner who runs
`leaklab run 01` from a plain shell has no GOTOOLCHAIN set, or Debian's and setup-go's
`local`, and the go.mod's `go 1.27` would then fail on an older installed Go: so the
harness selects the pin itself, unless GOTOOLCHAIN already names a version (the user's
own choice, kept).

Java: labs 04 and 05 build, run and measure on JDK 25. The JDK is JAVA_HOME when set (the
JVM tools' own convention), else the one `scripts/setup-jvm` chose and linked as
`.leaklab/tools/jdk` (a machine whose default `java` is older, with a JDK 25 beside it):
its `bin` goes first on the PATH of every command the harness starts, so sbt, the
service, jcmd and jfr are the same JDK."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from leaklab.paths import work_dir

GO_TOOLCHAIN = "go1.27.3"
JAVA_MAJOR = 25


def env(environ: Mapping[str, str] = os.environ, root: Path | None = None) -> dict[str, str]:
    """The variables to set on a command the harness starts, given the environment it
    would otherwise inherit (`root`: the course, found from the harness by default)."""
    added: dict[str, str] = {}
    if not environ.get("GOTOOLCHAIN", "").startswith("go1."):
        added["GOTOOLCHAIN"] = GO_TOOLCHAIN
    jdk = jdk_home(environ, root)
    if jdk is not None:
        path = environ.get("PATH", os.defpath)
        added["PATH"] = os.pathsep.join([str(jdk / "bin"), path])
    return added


def jdk_home(environ: Mapping[str, str] = os.environ, root: Path | None = None) -> Path | None:
    """JAVA_HOME when it holds a java, else setup-jvm's choice, else None (PATH's java)."""
    for home in (environ.get("JAVA_HOME"), work_dir(root) / "tools" / "jdk"):
        if home and (Path(home) / "bin" / "java").is_file():
            return Path(home)
    return None
