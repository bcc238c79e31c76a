#!/usr/bin/env bash
# The trusted revision's runtime dependencies, read with git from the merge-base (never built from the head),
# installed into the gate's environment where the sandboxed subject imports them.
set -euo pipefail
gate="${GATE_BIN:-${RUNNER_TEMP:?}/mergegate/bin/gate}"
"$gate" deps --install ${GATE_BASE:+--base "$GATE_BASE"} ${GATE_HEAD:+--head "$GATE_HEAD"}
