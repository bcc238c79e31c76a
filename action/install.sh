#!/usr/bin/env bash
# The action's second step: the gate in its own virtual environment, built from this action's files (the
# pinned revision the workflow names), never from the pull request.
set -euo pipefail
venv="${RUNNER_TEMP:?}/mergegate"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${GITHUB_ACTION_PATH:?}"
"$venv/bin/gate" --version
