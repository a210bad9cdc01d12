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


def test_a_claim_held_by_another_run_is_reported_the_same_under_async(cluster, kube, namespace, tmp_path):
    """Two runs of one set, started with async: the one that finds the other's claim reports it
    exactly as a synchronous run does (issue 19 point 5)."""
    import yaml
    from ansible_cli import BIN, ansible_env, run_module

    definition = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"a": "1"}}]
    rc, _result, out = run_module(cluster, "applyset_apply", {"parent": "held", "namespace": namespace,
                                                               "definition": definition})
    assert rc == 0, out
    # Another run's claim, unexpired (as a run on another controller would hold it). The key is
    # still .../lock on the wire: older versions' runs read it, so they and ours exclude each other.
    claim = json.dumps({"expires": time.time() + 600, "run": "elsewhere/1/abcd"}, separators=(",", ":"))
    status, body, _ = kube.request("PATCH", f"/api/v1/namespaces/{namespace}/secrets/held",
                                   {"metadata": {"annotations": {"applyset.kubernetes.ansible/lock": claim}}},
                                   content_type="application/merge-patch+json")
    assert status == 200, body
    args = {"parent": "held", "namespace": namespace, "definition": definition, "claim_wait": 0}
    rc, sync_result, out = run_module(cluster, "applyset_apply", args)
    assert rc != 0 and "elsewhere/1/abcd" in sync_result["msg"], out
    # The option's old name is an alias: a playbook written for an older version still works.
    old_name = {**{k: v for k, v in args.items() if k != "claim_wait"}, "lock_wait": 0}
    rc, old_result, out = run_module(cluster, "applyset_apply", old_name)
    assert rc != 0 and old_result["msg"] == sync_result["msg"], out

    tasks = [
        {"name": "two runs of the same set at once", "loop": [1, 2], "async": 120, "poll": 0,
         "register": "started", "applyset.kubernetes.applyset_apply": args},
        {"name": "collect them", "ansible.builtin.async_status": {"jid": "{{ item.ansible_job_id }}"},
         "loop": "{{ started.results }}", "register": "finished", "until": "finished is finished",
         "retries": 60, "delay": 1, "ignore_errors": True},
        {"name": "keep the results", "ansible.builtin.copy": {
            "dest": str(tmp_path / "finished.json"), "content": "{{ finished.results | to_json }}"}},
    ]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}],
                                       sort_keys=False))
    proc = subprocess.run([str(BIN / "ansible-playbook"), str(playbook)], capture_output=True, text=True,
                          timeout=300, env=ansible_env(cluster), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    finished = json.loads((tmp_path / "finished.json").read_text())
    assert [r.get("failed") for r in finished] == [True, True]
    assert [r["msg"] for r in finished] == [sync_result["msg"]] * 2
