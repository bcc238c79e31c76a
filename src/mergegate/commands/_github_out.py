"""``gate check`` inside a GitHub Actions job: everything it prints is fenced; then its own annotations, the
step summary and the job's outputs (``GITHUB_STEP_SUMMARY``, ``GITHUB_OUTPUT``)."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mergegate import textsafe
from mergegate.ci import github
from mergegate.errors import EXIT_INTERNAL, GateError


def fenced(body: Callable[[], tuple[int, Any]]) -> int:
    """Run ``body`` with workflow commands stopped; report after the fence.  Returns the exit code."""
    token = github.new_token()
    print(github.stop(token), flush=True)
    result: Any = None
    try:
        code, result = body()
    except GateError as exc:  # printed inside the fence: an error can quote what production chose
        print(f"gate check: {textsafe.line(exc.render())}", file=sys.stderr)
        code = exc.exit_code
    except Exception:  # fail closed, and the traceback stays inside the fence too
        print("gate check: internal error (never a pass):\n" + textsafe.text(traceback.format_exc()),
              file=sys.stderr)
        code = EXIT_INTERNAL
    finally:
        sys.stderr.flush()
        sys.stdout.flush()
    print(github.resume(token), flush=True)
    _report(code, result)
    return code


def _report(code: int, result: Any) -> None:
    environ = os.environ
    if result is None:
        print(github.Annotation("error", f"gate check stopped with exit {code}: the reason is in the log above "
                                "(never a pass)", "mergegate").render(), flush=True)
        _outputs({"decision": "error", "reason": f"exit_{code}", "admitted": "false", "exit-code": str(code)})
        return
    outcome, where = result
    from mergegate.git import blobs
    from mergegate.pipeline import evidence

    def source_of(path: str) -> str | None:
        data = blobs.file_at(outcome.merge_base, path)
        return None if data is None else data.decode(errors="replace")

    for note in github.notes(outcome, source_of):
        print(note.render())
    sys.stdout.flush()
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as out:
            out.write(evidence.markdown(outcome) + "\n")
    _outputs({"decision": outcome.decision, "reason": outcome.reason,
              "admitted": "true" if outcome.admitted else "false", "evidence": str(where), "exit-code": str(code)})


def _outputs(values: dict[str, str]) -> None:
    path = os.environ.get("GITHUB_OUTPUT")
    if path:
        with Path(path).open("a", encoding="utf-8") as out:
            out.write(github.outputs(values))
