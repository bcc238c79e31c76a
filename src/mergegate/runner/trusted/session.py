"""The sealed child's pytest session: one catalog node id, collected and run over the trusted oracle tree.

The session is pytest's own (collection, fixtures from the oracle tree's
``conftest.py`` files, classes, parametrization, unittest cases), configured by
the gate alone: an empty ini file of ours (``-c``), so no ``pytest.ini``,
``pyproject.toml``, ``setup.cfg`` or ``tox.ini`` of the repository is read; the
conftest search stops at the trusted tree's root; no plugin is autoloaded; no
cache is written.  Every production import is answered by the stand-in finder,
which this plugin keeps first on ``sys.meta_path``.

How each collected item runs (``item.runtest`` is replaced):
- a ``@given`` test: rebuilt from its Hypothesis handle around a counter of
  completed examples, with its own settings within the gate's bounds
  (``bounds.bounded_settings``) and the gate's seed;
- a state machine's ``TestCase``: the machine run the same way;
- anything else, a plain test: once; one completed run counts as one example.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from typing import Any

from mergegate.runner.trusted import faults, guess, rules

INI = "[pytest]\n"


class GatePlugin:
    """Collect exactly the node id; run its items under the gate's rules; keep what decides the verdict."""

    def __init__(self, job: dict[str, Any], finder: Any, oracle_path: str, rel: str) -> None:
        self.job, self.finder, self.oracle_path, self.rel = job, finder, oracle_path, rel
        self.items: list[Any] = []
        self.examples = 0
        self.kinds: set[str] = set()
        self.failure: BaseException | None = None
        self.failed_report: Any = None
        self.skipped_report: Any = None
        self.collect_failure: BaseException | None = None
        self.collect_report: Any = None
        self.marked_xfail: set[str] = set()
        self.xfailed = 0
        self.outcomes: dict[str, str] = {}  # each item's outcome, from pytest's reports (trusted/observe.py)
        self.logs: dict[str, Any] = {}  # each Hypothesis item's decision log (observe.Log)
        self.tampered: str | None = None  # shared runs: what production changed, if it did
        self.result: dict[str, Any] = {}
        self.emit: Any = None
        self.group: list[dict[str, Any]] = []  # a collector's jobs (trusted/group.py); empty for one job
        self.each: Any = None  # the collector's loop over its jobs (group.run_each), set with the group
        self.done: set[Any] = set()  # the group's jobs already reported
        self.collected_opens = 0  # how many of the opened files collection opened (group.run_each)
        self.collection: Any = None  # a collector's: what collecting each of its files opened (collected.py)
        self.refused: BaseException | None = None  # a refusal an example raised (its item fails with it if it passes)
        self.stderr: int | None = None  # a collector's stderr file, emptied as each run starts (group._run_here)

    def for_job(self, job: dict[str, Any], items: list[Any]) -> None:
        """In a collector: this job's file and items, nothing of another run's outcome."""
        self.job, self.items = job, items
        self.rel, self.oracle_path = job["oracle_file"], os.path.join(job["trusted_root"], job["oracle_file"])
        self.examples, self.kinds, self.failure = 0, set(), None
        self.failed_report = self.skipped_report = None
        self.xfailed = 0
        self.outcomes, self.logs = {}, {}

    def pytest_runtestloop(self, session: Any) -> Any:
        if not self.group or self.collect_report is not None or session.testsfailed:
            return None  # one job, or collection failed: pytest's own loop (which stops at the error)
        self.each(self, session)
        return True

    def _front(self) -> None:
        import sys

        if self.finder is not None and sys.meta_path and sys.meta_path[0] is not self.finder:
            sys.meta_path.remove(self.finder)
            sys.meta_path.insert(0, self.finder)  # before pytest's assertion rewriter: production is never a file

    def pytest_configure(self, config: Any) -> None:
        self._front()

    def pytest_collectstart(self, collector: Any) -> None:
        self._front()
        original = collector.collect

        def collect() -> Any:
            try:
                if self.collection is None:
                    return list(original())
                with self.collection.inside(collector.nodeid):
                    return list(original())
            except BaseException as exc:
                cause: BaseException = exc
                while cause.__cause__ is not None:  # pytest's CollectError wraps the import's own error
                    cause = cause.__cause__
                self.collect_failure = self.collect_failure or cause
                raise

        collector.collect = collect

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed and self.collect_report is None:
            self.collect_report = report

    def pytest_collection_modifyitems(self, session: Any, config: Any, items: list[Any]) -> None:
        for item in items:
            item.runtest = functools.partial(self._run, item, item.runtest)
            if item.get_closest_marker("xfail") is not None:
                self.marked_xfail.add(item.nodeid)
        self.items = list(items)

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        faults.REFUSED.clear()  # an item's run begins (before its fixtures): refusals from here on are its own
        rules.SEEN.clear()  # and a fresh production process: its classes are new objects
        self.refused = None

    def pytest_runtest_logreport(self, report: Any) -> None:
        from mergegate.runner.trusted import observe

        self.outcomes[report.nodeid] = observe.item_outcome(self.outcomes.get(report.nodeid), report)
        if report.failed and self.failed_report is None:
            self.failed_report = report
        elif report.skipped and hasattr(report, "wasxfail") and report.nodeid in self.marked_xfail:
            self.xfailed += 1  # failed as its (trusted) xfail marker says: pytest's "as expected"
        elif report.skipped and self.skipped_report is None:
            self.skipped_report = report  # a skip, or an xfail() called at run time: production chose it

    # ------------------------------------------------------------ running one item

    def _run(self, item: Any, original: Any) -> None:
        from hypothesis.core import HypothesisHandle

        function = getattr(item, "obj", None)
        handle = getattr(function, "hypothesis", None)
        machine = getattr(function, "_hypothesis_state_machine_class", None)
        try:
            if type(handle) is HypothesisHandle and getattr(item, "funcargs", None) is not None:
                self.kinds.add("hypothesis")
                self._given(item, function, handle)
            elif machine is not None:
                self.kinds.add("hypothesis")
                self._machine(item, machine)
            else:
                self.kinds.add("plain")
                original()
                guess.settle_finder(self.finder)  # production's process where the nexts taken left it
                excinfo = getattr(item, "_excinfo", None)  # a unittest case reports its failure here
                refused = faults.went_on()
                if refused is not None and not excinfo:
                    raise refused
                if not excinfo:
                    self.examples += 1
                elif self.failure is None:
                    self.failure = excinfo[0].value
            if self.refused is not None:
                raise self.refused  # every example passed, or failed as expected: one on a refusal of the gate's
        except BaseException as exc:
            if self.failure is None:
                self.failure = exc
            raise

    def _counted(self, inner: Any) -> Any:
        import sys

        gettrace, shared = sys.gettrace, self.job["isolation"] == "shared"

        @functools.wraps(inner)
        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                out = inner(*args, **kwargs)
                guess.settle_finder(self.finder)  # production's process where the nexts taken left it
            except BaseException:
                # the example failed; the next one starts with no refusal, and the item fails with this one if the
                # failure was one Hypothesis expected (``@example(...).xfail(raises=TypeError)``) and it passes
                self.refused = self.refused or faults.went_on()
                raise
            finally:
                if shared and gettrace() is not None:  # production in this process set a tracer
                    self.tampered = self.tampered or "sys.settrace"
            refused = faults.went_on()  # the example (or its fixtures) caught a refusal of the gate's: it fails
            if refused is not None:
                raise refused
            self.examples += 1  # examples that completed, not calls
            return out

        return counted

    def _check_body(self, inner: Any) -> None:
        """Shared runs: the test body must be the trusted tree's code, not one production put there."""
        filename = getattr(getattr(inner, "__code__", None), "co_filename", "")
        if self.job["isolation"] == "shared" and not filename.startswith(self.job["trusted_root"].rstrip("/") + "/"):
            self.tampered = self.tampered or "the test body (not defined in the oracle tree)"

    def _given(self, item: Any, function: Any, handle: Any) -> None:
        import hypothesis

        from mergegate.runner.trusted import bounds, observe

        own = getattr(function, "_hypothesis_internal_use_settings", None) or hypothesis.settings.default
        self._check_body(handle.inner_test)
        test = bounds.rebuild(self._counted(handle.inner_test), handle, function, self.job, hypothesis.given,
                                 hypothesis.settings, hypothesis.seed, own)
        args = {name: item.funcargs[name] for name in item._fixtureinfo.argnames}
        instance = getattr(function, "__self__", None)
        with observe.cases(self.logs.setdefault(item.nodeid, observe.Log())):
            test(instance, **args) if instance is not None else test(**args)

    def _machine(self, item: Any, machine: Any) -> None:
        import hypothesis
        from hypothesis.stateful import get_state_machine_test

        from mergegate.runner.trusted import bounds, observe

        own = getattr(item.instance, "settings", None) or hypothesis.settings.default
        bounded = bounds.bounded_settings(hypothesis.settings, own, self.job)
        log = self.logs.setdefault(item.nodeid, observe.Log())
        built = get_state_machine_test(observe.logged_machine(machine, log), settings=bounded)
        handle: Any = getattr(built, "hypothesis")  # noqa: B009 - the @given handle of the machine's test
        test = bounds.rebuild(self._counted(handle.inner_test), handle, built, self.job,
                                 hypothesis.given, hypothesis.settings, hypothesis.seed, own)
        with observe.cases(log):
            test()

    # ------------------------------------------------------------ the outcome

    def outcome(self, exit_code: int) -> dict[str, Any]:
        from mergegate.runner.trusted import report, standins

        rel, node = self.rel, self.job["nodeid"]
        gone = next((e for e in (self.collect_failure, self.failure) if isinstance(e, standins.SubjectGone)), None)
        if gone is not None:
            return {"status": "fail", "witness": "Crash:subject", "error": f"{gone} (after {self.examples} examples)"}
        if self.collect_report is not None:
            exc = self.collect_failure
            if exc is not None and isinstance(exc, standins.ProductionImportError):
                return {"status": "fail", "witness": report.assertion_site(exc, self.oracle_path, rel),
                        "error": str(exc)[:2000]}
            witness = report.assertion_site(exc, self.oracle_path, rel) if exc is not None else f"CollectError:{rel}"
            return {"status": "fail", "witness": witness,
                    "error": f"loading the oracle: {_text(self.collect_report)}"[-2000:]}
        if not self.items:
            return {"status": "fail", "witness": f"NotCollected:{rel}",
                    "error": f"pytest collected no test for {node} at the trusted revision (exit {exit_code})"}
        if self.failed_report is not None or (self.failure is not None and not self.xfailed):
            exc = self.failure
            if exc is None:  # a fixture's setup or teardown failed
                when = getattr(self.failed_report, "when", "setup")
                return {"status": "fail", "witness": f"FixtureError:{rel}",
                        "error": f"{when} of {node} failed: {_text(self.failed_report)}"[-2000:]}
            return {"status": "fail", "witness": report.assertion_site(exc, self.oracle_path, rel),
                    "counterexample": report.counterexample(exc), "error": f"{type(exc).__name__}: {exc}"[:2000],
                    "falsifying_example": report.falsifying_example(exc)}
        if self.skipped_report is not None and not (self.job.get("allow_skip") and self.examples):
            return {"status": "fail", "witness": f"Skipped:{rel}",
                    "error": f"{node} was skipped: {_text(self.skipped_report)}"[-2000:]}
        if self.examples == 0 and not self.xfailed:
            return {"status": "fail", "witness": f"ZeroExamples:{rel}", "error": "the property ran zero examples"}
        return {"status": "pass", "witness": ""}


def _text(report: Any) -> str:
    text = getattr(report, "longreprtext", "") or str(getattr(report, "longrepr", ""))
    return " ".join(text.split())


# pytest's plugins a sealed session never needs (each costs time in every run): no cache, no
# stepwise, no faulthandler, no pastebin, no setup plans, no thread or unraisable-exception hooks.
# Plugins that give fixtures a suite may use (tmpdir, record_property, doctest_namespace) stay.
BLOCKED = ("cacheprovider", "stepwise", "faulthandler", "pastebin", "setupplan", "setuponly",
           "unraisableexception", "threadexception")
_PREPARED: list[Any] = []


def blocked() -> list[str]:
    return [arg for name in BLOCKED for arg in ("-p", f"no:{name}")]


def prepare() -> None:
    """In the zygote: import pytest's plugins and build its plugin manager once, before any fork."""
    import importlib

    import pytest  # noqa: F401
    from _pytest.config import default_plugins, get_config

    for name in default_plugins:
        with contextlib.suppress(Exception):
            importlib.import_module(f"_pytest.{name}")
    for name in ("_pytest._argcomplete", "readline", "hypothesis.stateful", "hypothesis.internal.conjecture.optimiser",
                 # imported by every run's report: once here, not once per forked child
                 "mergegate.runner.trusted.observe", "mergegate.runner.trusted.report",
                 "mergegate.runner.trusted.bounds", "mergegate.runner.trusted.coverage"):
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    with contextlib.suppress(Exception):
        _warm_up()
    with contextlib.suppress(Exception):
        _PREPARED.append(get_config(blocked()))


def _warm_up() -> None:
    """One throwaway session on a tiny test of our own, before any fork: pytest's lazy caches
    (compiled patterns, signatures, the assertion rewriter) are filled once, for every child."""
    import pytest

    with tempfile.TemporaryDirectory(prefix="gate-warm-") as folder:
        test = os.path.join(folder, "test_warm.py")
        with open(test, "w", encoding="utf-8") as handle:
            handle.write("import pytest\n\n\n@pytest.fixture\ndef value(tmp_path):\n    return 1\n\n\n"
                         "class TestWarm:\n    @pytest.mark.parametrize('n', [1])\n"
                         "    def test_warm(self, value, n, monkeypatch, capsys):\n        assert value == n\n")
        ini = os.path.join(folder, "pytest.ini")
        with open(ini, "w", encoding="utf-8") as handle:
            handle.write(INI)
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            pytest.main([test, "-c", ini, "--rootdir", folder, "--confcutdir", folder, *blocked(), "-q", "-s"])
        import sys

        for name in [n for n, m in sys.modules.items() if str(getattr(m, "__file__", "")).startswith(folder)]:
            del sys.modules[name]  # an oracle may have a module of the same name
        for path in [p for p in sys.path if p.startswith(folder)]:
            sys.path.remove(path)


def _main(args: list[str], plugin: GatePlugin) -> int:
    """``pytest.main(args, plugins=[plugin])``, on the plugin manager the zygote built."""
    import pytest

    if not _PREPARED:
        return int(pytest.main(args, plugins=[plugin]))
    manager = _PREPARED[0].pluginmanager
    manager.register(plugin)
    config = manager.hook.pytest_cmdline_parse(pluginmanager=manager, args=args)
    try:
        return int(config.hook.pytest_cmdline_main(config=config))
    except pytest.UsageError:  # "found no collectors": the collect report says why
        return int(pytest.ExitCode.USAGE_ERROR)
    finally:
        config._ensure_unconfigure()


def arguments(job: dict[str, Any], ini: str) -> list[str]:
    """pytest's command line for the job: the node id, and nothing of the repository's configuration."""
    return _command([os.path.join(job["trusted_root"], job["nodeid"])], [job], ini)


def group_arguments(jobs: list[dict[str, Any]], ini: str) -> list[str]:
    """pytest's command line for a collector: its oracle files, every job's names recognised as tests."""
    rels = dict.fromkeys(job["oracle_file"] for job in jobs)
    return _command([os.path.join(jobs[0]["trusted_root"], rel) for rel in rels], jobs, ini)


def _command(targets: list[str], jobs: list[dict[str, Any]], ini: str) -> list[str]:
    names = [job["nodeid"].partition("::")[2].partition("[")[0].split("::") for job in jobs]
    functions = " ".join(dict.fromkeys(["test", *(n[-1] for n in names)]))
    classes = " ".join(dict.fromkeys(["Test", *(c for n in names for c in n[:-1])]))
    root = jobs[0]["trusted_root"]
    return [
        *targets, "-c", ini, "--rootdir", root, "--confcutdir", root, *blocked(),
        "-s", "-q", "--no-header", "-o", "console_output_style=classic",
        "-o", f"python_functions={functions}", "-o", f"python_classes={classes}", "-o", "python_files=*.py",
    ]


def _ini(job: dict[str, Any]) -> str:
    ini: str = job.get("ini") or ""
    if not ini:
        ini = os.path.join(tempfile.mkdtemp(prefix="ini-", dir=job["home"]), "pytest.ini")
        with open(ini, "w", encoding="utf-8") as handle:
            handle.write(INI)
    return ini


def finish(plugin: GatePlugin, code: int, result: dict[str, Any]) -> dict[str, Any]:
    """The job's outcome, and what the row records of how it ran."""
    result["examples"] = plugin.examples
    if plugin.finder is not None:
        result["calls"] = plugin.finder.channel.calls
        result["production_s"] = round(plugin.finder.channel.waited, 4)
        if plugin.job.get("coverage"):
            from mergegate.runner.trusted import coverage

            coverage.record(plugin.finder.channel, plugin.job["coverage"], result)
    result["kind"] = "plain" if plugin.kinds == {"plain"} else "hypothesis"
    # What ran, for the differential rule: the trusted side's record, never production's.
    result["items"] = {item.nodeid: plugin.outcomes.get(item.nodeid, "notrun") for item in plugin.items}
    result["decisions"] = {nodeid: log.to_json() for nodeid, log in plugin.logs.items()}
    outcome = plugin.outcome(code)
    if plugin.tampered is not None:
        outcome["tampered"] = plugin.tampered
    return outcome


def run(job: dict[str, Any], finder: Any, result: dict[str, Any]) -> dict[str, Any]:
    oracle_path = os.path.join(job["trusted_root"], job["oracle_file"])
    plugin = GatePlugin(job, finder, oracle_path, job["oracle_file"])
    return finish(plugin, _main(arguments(job, _ini(job)), plugin), result)
