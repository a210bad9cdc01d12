"""APPLYSET_PHASE_TIMES (run/phases.py, issue 48): the module, run by the ``ansible`` command as users
run it, appends where its time went to the file the variable names, and its result is the same as
without. benchmarks/phases.py reads the file; no time is asserted here."""

from __future__ import annotations

import json

from ansible_cli import ansible_env, run_module


def cm(name: str, value: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}


def test_each_run_appends_its_phases_and_the_result_is_the_same_without(cluster, namespace, tmp_path):
    times = tmp_path / "phases.jsonl"
    env = ansible_env(cluster, APPLYSET_PHASE_TIMES=str(times))
    args = {"parent": "set1", "namespace": namespace, "definition": [cm("a", "1"), cm("b", "1")]}
    rc, applied, out = run_module(cluster, "applyset_apply", args, env=env)
    assert rc == 0, out
    rc, timed_noop, out = run_module(cluster, "applyset_apply", args, env=env)
    assert rc == 0, out
    rc, noop, out = run_module(cluster, "applyset_apply", args)
    assert rc == 0, out

    assert list(timed_noop) == list(noop)  # the same keys in the same order: nothing added to the result
    # Requests and writes are counted exactly; round trips are a measurement (two requests sent side by
    # side count as two when a loaded machine starts the second after the first was answered).
    counted = ("sent", "writes")
    assert [timed_noop["requests"][k] for k in counted] == [noop["requests"][k] for k in counted], \
        (timed_noop["requests"], noop["requests"])
    assert noop["requests"]["writes"] == 0
    first, second = (json.loads(line) for line in times.read_text().splitlines())
    assert [lap[0] for lap in first["laps"]] == ["module start", "arguments", "connect", "imports and input", "run",
                                                 "result"]
    steps = [step[0] for step in first["steps"]]
    assert steps[0] == "read-parent" and "apply" in steps and "release" in steps
    # the record's counts are the client's, as the result reports them
    assert (first["requests"], first["writes"]) == (applied["requests"]["sent"], applied["requests"]["writes"])
    assert second["writes"] == 0 and sum(step[5] for step in second["steps"]) == 0
