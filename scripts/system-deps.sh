# Sourced by scripts/demo.sh and scripts/test.sh (POSIX sh): need WHO PACKAGE... installs the system
# packages that are missing with apt-get when run as root (and apt-get is there), or names the command;
# it returns 2 when something stays missing. Each PACKAGE is checked by what it provides:
# python3-venv (ensurepip), openssh-client (ssh-keygen), bubblewrap (bwrap), git.
need() {
    who=$1
    shift
    missing=""
    for pkg in "$@"; do
        case $pkg in
            python3-venv) python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$missing $pkg" ;;
            openssh-client) command -v ssh-keygen >/dev/null 2>&1 || missing="$missing $pkg" ;;
            bubblewrap) command -v bwrap >/dev/null 2>&1 || missing="$missing $pkg" ;;
            *) command -v "$pkg" >/dev/null 2>&1 || missing="$missing $pkg" ;;
        esac
    done
    [ -n "$missing" ] || return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "$who: installing$missing (apt-get)" >&2
        if apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >&2; then
            return 0
        fi
        echo "$who: apt-get could not install$missing" >&2
        return 2
    fi
    sudo="sudo "
    [ "$(id -u)" != 0 ] || sudo=""
    echo "$who: missing:$missing; fix: ${sudo}apt-get install -y$missing" >&2
    return 2
}
