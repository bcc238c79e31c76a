#!/usr/bin/env bash
# Make (or repair) the virtualenv in .venv and install the package with its test extras.
# A .venv left broken (no bin/python, or no working pip: python3-venv was missing when it was
# made) is removed and made again.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -e .venv ] && ! { [ -x .venv/bin/python ] && .venv/bin/python -m pip --version >/dev/null 2>&1; }; then
    echo "scripts/venv.sh: .venv is broken (no python or no pip); making it again" >&2
    rm -rf .venv
fi
if [ ! -e .venv ]; then
    python3 -m venv .venv || { rm -rf .venv; echo "scripts/venv.sh: python3 -m venv failed;" \
        "fix: apt-get install python3-venv" >&2; exit 2; }
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
