#!/usr/bin/env bash
# Install what the tests need (a virtualenv in .venv) and run them: lint, types, the suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k manifest`.
# Needs: python3 (3.11+) with venv (python3-venv), git, ssh-keygen (openssh-client: signed-commit tests),
# bubblewrap (sealed runs). As root, what is missing is installed with apt; otherwise it is named with its
# apt command. Docker (the drafter tests) comes from .ci/setup-docker.sh; without an engine those tests
# skip, or fail with CI=true. A broken .venv is made again (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# git, python3-venv, openssh-client (signed-commit tests) and bubblewrap (sealed runs): installed with apt
# when run as root, named with their command otherwise.
. scripts/system-deps.sh
need scripts/test.sh git python3-venv openssh-client || exit 2
if ! need scripts/test.sh bubblewrap; then
    echo "scripts/test.sh: without bubblewrap the sealed-run tests skip (with CI=true they fail)" >&2
    [ "${CI:-}" != "true" ] || exit 2
fi
bash scripts/venv.sh
# The drafter tests need a Docker engine: as root on a machine that can host one, .ci/setup-docker.sh
# installs docker.io, starts it and builds the sandbox image; else they skip (with CI=true they fail).
if ! docker info >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        echo "scripts/test.sh: no Docker engine: the drafter tests skip; fix: sudo bash .ci/setup-docker.sh" >&2
    elif [ -f /.dockerenv ]; then
        echo "scripts/test.sh: inside a container, which cannot host a Docker engine: the drafter tests skip" >&2
    else
        bash .ci/setup-docker.sh .venv/bin/python ||
            echo "scripts/test.sh: could not start a Docker engine: the drafter tests skip" >&2
    fi
fi
export PATH="$PWD/.venv/bin:$PATH"
ruff check src tests bench
mypy
python -m pytest -n 2 -q "$@"
