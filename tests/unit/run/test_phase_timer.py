"""run/phases.py: where a run's time goes, measured only when APPLYSET_PHASE_TIMES names a file.

Off, every hook does nothing; on, one JSON line per process holds the laps, the steps of the
route with their requests, and the spans. The whole module through ansible-playbook writes it in
benchmarks/phases.py.
"""

import json

import pytest

from applyset.run import phases, runner


class Counting:
    """A client double with the counters the timer reads."""

    requests_sent = 0
    writes_sent = 0


@pytest.fixture
def timing(tmp_path, monkeypatch):
    """Timing on, into a file of the test's; the module-wide timer reset after."""
    path = tmp_path / "phases.jsonl"
    monkeypatch.setenv(phases.ENV, str(path))
    monkeypatch.setattr(phases, "_timer", None)
    monkeypatch.setattr(phases.atexit, "register", lambda func: None)  # the test writes it itself
    yield path


def test_off_without_the_variable(monkeypatch):
    monkeypatch.delenv(phases.ENV, raising=False)
    monkeypatch.setattr(phases, "_timer", None)
    assert phases.start_from_env() is None
    phases.lap("arguments")  # no error, nothing kept
    with phases.step("plan", runner.DECIDE, Counting()), phases.span("hooks"):
        pass
    assert phases.spanned("hooks")(lambda x: x + 1)(1) == 2
    assert phases._timer is None


def test_one_line_with_laps_steps_spans_and_counts(timing):
    timer = phases.start_from_env()
    client = Counting()
    phases.watch_client(client)
    phases.lap("arguments")
    with phases.step("apply", runner.WRITE, client):
        client.requests_sent, client.writes_sent = 3, 2
        with phases.span("hooks"):
            pass
    assert phases.spanned("hook waits")(lambda: "done")() == "done"
    timer.write()
    record = json.loads(timing.read_text())
    assert [lap[0] for lap in record["laps"]] == ["module start", "arguments", "result"]
    assert record["steps"][0][:2] == ["apply", "write"] and record["steps"][0][4:] == [3, 2]
    assert set(record["spans"]) == {"hooks", "hook waits"}
    assert (record["requests"], record["writes"]) == (3, 2)
    assert record["total"] >= record["laps"][0][1] > 0  # the process started before the timer


def test_the_runner_times_each_step(timing):
    phases.start_from_env()
    ran = []
    steps = [runner.Step("first", lambda ctx: ran.append(1), runner.READ),
             runner.Step("second", lambda ctx: ran.append(2), runner.DECIDE)]

    class Context:
        client = Counting()
        failing = False
        step = None
        failure = None

    runner.run(steps, Context())
    assert ran == [1, 2]
    assert [(s[0], s[1]) for s in phases._timer.steps] == [("first", "read"), ("second", "decide")]
