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
# CI's console and the harness's captured stderr get plain lines. Decided once, here:
# inside a $(...) the standard output is never the terminal.
_lib_bold='' _lib_red='' _lib_off1='' _lib_off2=''
if [ -z "${NO_COLOR:-}" ] && [ -t 1 ]; then _lib_bold=$'\033[1m' _lib_off1=$'\033[0m'; fi
if [ -z "${NO_COLOR:-}" ] && [ -t 2 ]; then _lib_red=$'\033[31m' _lib_off2=$'\033[0m'; fi
# say / fail print as "<script name>: message"; fail exits 1.
say()  { printf '%s%s:%s %s\n' "$_lib_bold" "$SCRIPT" "$_lib_off1" "$*"; }
fail() { printf '%s%s: %s%s\n' "$_lib_red" "$SCRIPT" "$*" "$_lib_off2" >&2; exit 1; }
