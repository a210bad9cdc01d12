"""Concurrent runs: on one set they serialize (or one fails cleanly); different sets do not interfere."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from test_faults import PLURALS, labelled, obj

DRIVER = Path(__file__).resolve().parent / "engine_driver.py"


def start(cluster, parent, namespace, definition, **options):
    job = {"auth": {"kubeconfig": cluster.kubeconfig}, "parent": parent, "namespace": namespace,
           "definition": definition, "options": {"max_prune_percent": 100, **options}}
    proc = subprocess.Popen([sys.executable, str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(job))
    proc.stdin.close()
    return proc


def finish(proc):
    """(returncode, report, when the run ended by the wall clock)."""
    out = proc.stdout.read()
    proc.wait(timeout=300)
    report = json.loads(out) if out.strip() else {"error": proc.stderr.read()}
    return proc.returncode, report, report.get("finished_at", time.time())


def desired(namespace, prefix, count):
    return [obj(kind, f"{prefix}-{kind.lower()}-{i}", namespace) for i in range(count) for kind in PLURALS]


def test_two_runs_on_one_set_serialize_and_leave_exactly_one_desired_set(cluster, kube, namespace):
    base = desired(namespace, "base", 3)
    rc, report, _ = finish(start(cluster, "shared", namespace, base))
    assert rc == 0, report
    set_id = report["applyset"]["id"]
    # Two runs at once, each replacing the set with something different.
    left = desired(namespace, "left", 10)
    right = desired(namespace, "right", 10)
    procs = [start(cluster, "shared", namespace, left), start(cluster, "shared", namespace, right)]
    results = [finish(p) for p in procs]
    succeeded = [(t, d) for (rc, _, t), d in zip(results, (left, right)) if rc == 0]
    for rc, report, _ in results:
        # A run that did not get the set failed before touching a member, and says why.
        assert rc == 0 or "another run" in report["error"] or "changed by someone else" in report["error"], report
    assert succeeded, results
    last_desired = max(succeeded, key=lambda pair: pair[0])[1]
    expected = {(o["kind"], namespace, o["metadata"]["name"]) for o in last_desired}
    assert labelled(kube, (namespace,), set_id) == expected
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/shared")["metadata"]
    assert parent["annotations"]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap,Secret,Service,ServiceAccount"
    assert "applyset.kubernetes.ansible/lock" not in parent["annotations"]


def test_two_sets_in_one_namespace_at_once(cluster, kube, namespace):
    one, two = desired(namespace, "one", 8), desired(namespace, "two", 8)
    results = [finish(p) for p in (start(cluster, "set-one", namespace, one), start(cluster, "set-two", namespace, two))]
    assert all(rc == 0 for rc, _, _ in results), results
    ids = [report["applyset"]["id"] for _, report, _ in results]
    for set_id, objs in zip(ids, (one, two)):
        assert labelled(kube, (namespace,), set_id) == {(o["kind"], namespace, o["metadata"]["name"]) for o in objs}
