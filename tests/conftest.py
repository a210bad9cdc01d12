"""Suite-wide hooks: where the time of a run goes, the time budget of ``make test``, and which skips
are allowed; and steps held to what they declare (``APPLYSET_STRICT_STEPS``).

Every run prints the time per test file and the slowest tests (with pytest-xdist the workers'
reports reach the controller, which prints them), and writes the table to
``.state/test-times.tsv`` so that two runs can be compared file by file.

``make test`` sets ``APPLYSET_WHOLE_SUITE=1``: the whole suite then also

- holds its wall-clock time against ``SUITE_BUDGET_MINUTES`` (the one place the budget is written):
  past the budget the run warns and names the slowest files; past one and a half times the budget it
  fails under CI (``CI=true``), so that the next feature pays for its own tests, while a loaded machine
  does not fail an honest run that is a little late;
- fails on a skip that ``ALLOWED_SKIPS`` does not list: every tool a test needs is built or installed
  by ``make test`` itself, so a skip for a missing one would hide an untested behaviour.
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from pathlib import Path

import pytest

# Every run of the tests holds the steps of a route to the values they declare reading and setting
# (run/runner.py, Step): an undeclared read is a StepOrderError, in this process and in the modules
# the integration tests start (they inherit the environment).
os.environ["APPLYSET_STRICT_STEPS"] = "1"

# The budget of `make test` (warm build cache, the machine CI runs on: 2 cores): it warns past 30
# minutes and fails CI past 45. A whole run took 25 min 8 s on 3 workers on a quiet machine once the
# modules started warm (docs/testing.md), so a feature's tests have room before the warning.
SUITE_BUDGET_MINUTES = 30
FAIL_FACTOR = 1.5

# The skips that are right even in a whole run, each with why. A reason is matched from its start.
ALLOWED_SKIPS = {
    # make chromium (CI runs it) installs Debian's chromium where it can; make test does not need root.
    "chromium is not installed": "the screenshot needs root and apt-get; every other check of the page runs",
    # docs pages whose every example needs a chart repository on the network, marked not run.
    "every example of": "the page's examples reach a network repository, which this machine cannot",
    # only against an existing cluster (APPLYSET_TEST_KUBECONFIG), never with the local control plane
    "needs the local control plane's CA file": "an existing cluster's CA is not ours to read",
    "the kubeconfig names no CA certificate": "an existing cluster's kubeconfig may trust the system CAs",
    "the test cluster's kubeconfig has no client-key-data": "an existing cluster may use a token",
}

# The slowest files of a whole run at the time of writing (seconds of test time, 3 workers), for a machine that has no
# TIMES_FILE yet (a fresh clone, CI): with workers, the longest start first.
FILE_TIMES = {
    "tests/integration/test_faults.py": 596,
    "tests/integration/test_shell_examples.py": 586,
    "tests/integration/test_helm_charts.py": 283,
    "tests/integration/test_stacks_corpus.py": 265,
    "tests/integration/test_examples.py": 137,
    "tests/integration/test_fleet.py": 131,
    "tests/integration/test_concurrency.py": 119,
    "tests/integration/test_history.py": 116,
    "tests/integration/test_approved_plan_awx.py": 105,
    "tests/integration/test_fast_path.py": 101,
    "tests/integration/test_apply.py": 96,
    "tests/integration/test_conformance_corpus.py": 94,
    "tests/integration/test_benchmark_smoke.py": 90,
    "tests/integration/test_bad_input.py": 88,
    "tests/integration/test_refusals.py": 83,
    "tests/integration/test_drift.py": 79,
    "tests/integration/test_secret_output.py": 79,
    "tests/integration/test_rbac_secrets.py": 78,
    "tests/integration/test_roles.py": 74,
    "tests/integration/test_connection_errors.py": 62,
    "tests/integration/test_helm_takeover.py": 61,
    "tests/integration/test_csa_migration.py": 56,
    "tests/integration/test_hooks.py": 56,
    "tests/integration/test_corpus_deploy_role.py": 53,
    "tests/unit/plugins/test_kubeconfig_inventory.py": 50,
}

REPO_ROOT = Path(__file__).resolve().parents[1]
TIMES_FILE = REPO_ROOT / ".state" / "test-times.tsv"
SLOWEST_FILES, SLOWEST_TESTS = 25, 15


def _whole_suite() -> bool:
    return os.environ.get("APPLYSET_WHOLE_SUITE") == "1"


def _allowed(reason: str) -> bool:
    return any(reason.startswith(prefix) for prefix in ALLOWED_SKIPS)


def _skip_reason(report) -> str:
    """The text pytest shows for a skip: the last element of ``longrepr`` (path, line, reason)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return re.sub(r"^Skipped: ", "", reason)


class SuiteClock:
    """Test time per file and per test, the skips seen, and the session's wall clock."""

    def __init__(self, config):
        self.config = config
        self.started = time.monotonic()
        self.per_file: dict[str, float] = defaultdict(float)
        self.per_test: dict[str, float] = defaultdict(float)
        self.skips: list[tuple[str, str]] = []
        # Seeds of sampled sweeps (a test's record_property named *_SEED), to repeat a run's sample.
        self.seeds: dict[str, str] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        self.per_file[report.nodeid.split("::")[0]] += report.duration
        self.per_test[report.nodeid] += report.duration
        for name, value in getattr(report, "user_properties", ()):
            if name.endswith("_SEED"):
                self.seeds[report.nodeid] = f"{name}={value}"
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.append((report.nodeid, _skip_reason(report)))

    def wall(self) -> float:
        return time.monotonic() - self.started

    def slowest_files(self, count: int) -> list[tuple[str, float]]:
        return sorted(self.per_file.items(), key=lambda item: (-item[1], item[0]))[:count]

    def unallowed_skips(self) -> list[tuple[str, str]]:
        return [(nodeid, reason) for nodeid, reason in self.skips if not _allowed(reason)]

    def budget_verdict(self) -> str | None:
        """'warn', 'fail' or None for a whole run against the budget."""
        if not _whole_suite():
            return None
        minutes = self.wall() / 60
        if minutes > SUITE_BUDGET_MINUTES * FAIL_FACTOR and os.environ.get("CI") == "true":
            return "fail"
        return "warn" if minutes > SUITE_BUDGET_MINUTES else None

    @pytest.hookimpl
    def pytest_sessionfinish(self, session):
        self._write_times()
        if not _whole_suite():
            return
        if self.unallowed_skips() or self.budget_verdict() == "fail":
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _times_file(self) -> Path:
        # Only a whole run replaces the table the next run orders its files by.
        return TIMES_FILE if _whole_suite() else TIMES_FILE.with_name("test-times-partial.tsv")

    def _write_times(self) -> None:
        TIMES_FILE.parent.mkdir(parents=True, exist_ok=True)
        rows = [f"{seconds:.1f}\t{path}" for path, seconds in self.slowest_files(len(self.per_file))]
        self._times_file().write_text("seconds\tfile\n" + "".join(row + "\n" for row in rows))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter):
        write = terminalreporter.write_line
        total = sum(self.per_file.values())
        terminalreporter.section(f"time per test file ({len(self.per_file)} files, {total:.0f} s of test time, "
                                 f"{self.wall():.0f} s wall clock)")
        for path, seconds in self.slowest_files(SLOWEST_FILES):
            write(f"{seconds:8.1f} s  {path}")
        write(f"(all files: {self._times_file().relative_to(REPO_ROOT)})")
        terminalreporter.section(f"{SLOWEST_TESTS} slowest tests")
        for nodeid, seconds in sorted(self.per_test.items(), key=lambda item: (-item[1], item[0]))[:SLOWEST_TESTS]:
            write(f"{seconds:8.1f} s  {nodeid}")
        if self.seeds:
            terminalreporter.section("seeds of sampled sweeps (set one to repeat its sample)")
            for nodeid, seed in sorted(self.seeds.items()):
                write(f"{seed}  {nodeid}")
        self._summarize_budget(terminalreporter)
        self._summarize_skips(terminalreporter)

    def _summarize_budget(self, terminalreporter) -> None:
        verdict = self.budget_verdict()
        if verdict is None:
            return
        slowest = ", ".join(f"{path} ({seconds:.0f} s)" for path, seconds in self.slowest_files(5))
        terminalreporter.write_line(
            f"{'FAILED' if verdict == 'fail' else 'WARNING'}: the suite took {self.wall() / 60:.1f} min, past its "
            f"budget of {SUITE_BUDGET_MINUTES} min (tests/conftest.py; CI fails past {FAIL_FACTOR}x). "
            f"The slowest files: {slowest}", red=verdict == "fail", yellow=verdict == "warn", bold=True)

    def _summarize_skips(self, terminalreporter) -> None:
        if not _whole_suite() or not self.unallowed_skips():
            return
        terminalreporter.section("skips that a whole run does not allow", red=True)
        for nodeid, reason in self.unallowed_skips():
            terminalreporter.write_line(f"{nodeid}: {reason}", red=True)
        terminalreporter.write_line("make test builds or installs every tool the tests need: a skip hides an untested "
                                    "behaviour. Fix the lookup, or list the reason in ALLOWED_SKIPS (tests/conftest.py) "
                                    "with why it is right.", red=True)


def _known_file_times() -> dict[str, float]:
    """Each test file's time in the last run on this machine (``TIMES_FILE``), else ``FILE_TIMES``."""
    times = dict(FILE_TIMES)
    try:
        rows = TIMES_FILE.read_text().splitlines()[1:]
    except OSError:
        return times
    for row in rows:
        seconds, _tab, path = row.partition("\t")
        try:
            times[path] = float(seconds)
        except ValueError:
            continue
    return times


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Longest files first, so that with workers the last file to start is a short one (the wall
    clock is the slowest worker's). Inside a file the order stays the file's own. Deterministic for
    a given times file, so every xdist worker collects the same order."""
    times = _known_file_times()
    position = {}
    for index, item in enumerate(items):
        position.setdefault(item.nodeid.split("::")[0], index)
    items.sort(key=lambda item: (-times.get(item.nodeid.split("::")[0], 0.0), position[item.nodeid.split("::")[0]]))


def pytest_configure(config):
    # The controller (or a run without xdist) keeps the clock; workers only send their reports.
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(SuiteClock(config), "applyset-suite-clock")
