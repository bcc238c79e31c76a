#!/usr/bin/env bash
# Install what the tests need (a virtualenv in .venv) and run them: lint, types, the suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k manifest`.
# Needs: python3 (3.11+) with venv (python3-venv), git, ssh-keygen (openssh-client: signed-commit tests),
# bubblewrap (sealed runs; without it those tests skip, or fail with CI=true). Whatever is missing is
# named with its apt command. A broken .venv is made again (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
missing=""
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo "
command -v git >/dev/null || missing="$missing git"
python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$missing python3-venv"
command -v ssh-keygen >/dev/null || missing="$missing openssh-client"
if [ -n "$missing" ]; then
    echo "scripts/test.sh: missing:$missing; fix: ${sudo}apt-get install -y$missing" >&2
    exit 2
fi
if ! command -v bwrap >/dev/null; then
    echo "scripts/test.sh: bubblewrap is missing: sealed-run tests skip (with CI=true they fail);" \
        "fix: ${sudo}apt-get install -y bubblewrap" >&2
    [ "${CI:-}" != "true" ] || exit 2
fi
bash scripts/venv.sh
export PATH="$PWD/.venv/bin:$PATH"
ruff check src tests bench
mypy
python -m pytest -n 2 -q "$@"
