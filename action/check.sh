#!/usr/bin/env bash
# The verdict: `gate check` fences its own output (::stop-commands::), then writes its annotations, the step
# summary and the step's outputs. Exit 0 only when the patch is admitted.
set -euo pipefail
gate="${GATE_BIN:-${RUNNER_TEMP:?}/mergegate/bin/gate}"
exec "$gate" check ${GATE_BASE:+--base "$GATE_BASE"} ${GATE_HEAD:+--head "$GATE_HEAD"} \
    --evidence "${RUNNER_TEMP:?}/gate-evidence" --junit "$RUNNER_TEMP/gate-junit.xml"
