# Sourced by every scripts/setup*: the course's pinned Go toolchain and the output
# helpers. Not executable on its own.

# The Go every lab is built and measured with (each go.mod's `toolchain` line names it
# too; tools/leaklab's toolchains.py and the CI workflow and devcontainer agree, a test
# checks it). A Go of 1.21 or newer fetches it from the module proxy on first use. A
# GOTOOLCHAIN that names a version is the user's choice and kept; `local` (Debian's
# and setup-go's default) or `auto` would build with whatever Go is installed, so they
# give way to the pin.
LEAKLAB_GO_TOOLCHAIN=go1.27.3
case "${GOTOOLCHAIN:-}" in
  go1.*) ;;
  *) export GOTOOLCHAIN=$LEAKLAB_GO_TOOLCHAIN ;;
esac

# Colour only on a terminal and never under NO_COLOR (https://no-color.org): a log file,
# CI's console and the harness's captured stderr get plain lines.
_lib_style() { # _lib_style FD CODE: the escape for CODE when FD is a terminal
  if [ -z "${NO_COLOR:-}" ] && [ -t "$1" ]; then printf '\033[%sm' "$2"; fi
}
# say / fail print as "<script name>: message"; fail exits 1.
say()  { printf '%s%s:%s %s\n' "$(_lib_style 1 1)" "$SCRIPT" "$(_lib_style 1 0)" "$*"; }
fail() { printf '%s%s: %s%s\n' "$(_lib_style 2 31)" "$SCRIPT" "$*" "$(_lib_style 2 0)" >&2; exit 1; }
