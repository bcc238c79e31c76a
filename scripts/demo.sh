#!/bin/sh
# The quick start's first command: install the gate into ~/.venv/gate and run the demo.
# On a fresh Debian/Ubuntu with only python3 and git: python3-venv is installed with apt when run as root,
# named with its command otherwise.
set -eu
cd "$(dirname "$0")/.."
. scripts/system-deps.sh
need scripts/demo.sh git python3-venv || exit 2
venv="${GATE_VENV:-$HOME/.venv/gate}"
[ -x "$venv/bin/pip" ] || { rm -rf "$venv"; python3 -m venv "$venv"; }
"$venv/bin/pip" install -q --disable-pip-version-check .
exec "$venv/bin/gate" demo
