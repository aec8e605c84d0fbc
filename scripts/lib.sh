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

# apt_install PKG...: Debian's packages, as root or through sudo, refreshing the package
# lists once if the first try fails (a new machine's lists may be stale or missing).
# Fails with the command to run by hand.
apt_install() {
  local sudo=()
  command -v apt-get >/dev/null 2>&1 || fail "no apt-get: install $* by hand"
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "run as root or install sudo, then: apt-get install $*"
    sudo=(sudo)
  fi
  say "installing $* (apt)"
  if ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null; then
    say "apt-get install failed; refreshing the package lists once and retrying"
    "${sudo[@]}" apt-get update -q >/dev/null ||
      fail "apt-get update failed: check the network or /etc/apt/sources.list, then run: apt-get install $*"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >/dev/null ||
      fail "could not install $*; try by hand: apt-get install $*"
  fi
}
