#!/usr/bin/env bash
# Install what the tests need (a virtualenv in .venv) and run them: lint, types, the suite.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k manifest`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
export PATH="$PWD/.venv/bin:$PATH"
ruff check src tests bench
mypy
python -m pytest -n 2 -q "$@"
