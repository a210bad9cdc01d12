"""Concurrent runs: on one set they serialize (the second waits for the first and runs after it); different
sets do not interfere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from test_faults import PLURALS, labelled, obj

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.inputs import manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402

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
    # The run that did not get the claim first waited for the other, then ran (issue 36 item 1).
    assert len(succeeded) == 2, results
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


# ----- two ansible-playbook runs of one set started at the same moment (issue 36 item 1) ----------

# Rounds per route; APPLYSET_CONCURRENCY_ROUNDS=20 for the figures in docs/safety.md.
ROUNDS = int(os.environ.get("APPLYSET_CONCURRENCY_ROUNDS", "3"))
CLAIM_KEY = "applyset.kubernetes.ansible/lock"


def configmap(name, version="a", annotations=None):
    meta = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"version": version}}


def hook(name, when):
    return configmap(name, annotations={"helm.sh/hook": when, "helm.sh/hook-delete-policy": "before-hook-creation"})


BASE = [configmap(f"base-{i}") for i in range(4)]
HOOKS = [hook("migrate", "pre-install,pre-upgrade"), hook("smoke", "post-install,post-upgrade")]


def route_sets(route, round_no):
    """(what the set holds before the round, or None for a first deploy; the two runs' desired sets)."""
    left, right = configmap(f"left-{round_no}"), configmap(f"right-{round_no}")
    if route == "first-deploy":
        return None, BASE + [left], BASE + [right]
    if route == "change":  # each run adds one object (and prunes the other's)
        return BASE, BASE + [left], BASE + [right]
    if route == "prune":  # each run removes another object
        return BASE + [left, right], BASE + [left], BASE + [right]
    return BASE, BASE + [left] + HOOKS, BASE + [right] + HOOKS  # hooks: every run runs them


def playbook(tmp_path, side, namespace, parent, objects):
    out = tmp_path / f"{side}.json"
    out.unlink(missing_ok=True)
    path = tmp_path / f"{side}.yml"
    path.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "deploy", "register": "release", "ignore_errors": True, "applyset.kubernetes.applyset_apply": {
            "parent": f"secrets/{parent}", "namespace": namespace, "definition": objects}},
        {"ansible.builtin.copy": {"content": "{{ release | to_json }}", "dest": str(out)}},
    ]}]))
    return path, out


def member_names(objects):
    return {o["metadata"]["name"] for o in objects if "helm.sh/hook" not in (o["metadata"].get("annotations") or {})}


def two_at_once(cluster, tmp_path, namespace, parent, left, right):
    """Both playbooks started together; their registered results (left, right) and output."""
    from ansible_cli import BIN, ansible_env

    plays = [playbook(tmp_path, side, namespace, parent, objects) for side, objects in (("left", left),
                                                                                          ("right", right))]
    procs = [subprocess.Popen([str(BIN / "ansible-playbook"), str(path)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=ansible_env(cluster), cwd=tmp_path)
             for path, _ in plays]
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    results = [json.loads(out.read_text()) if out.exists() else {"failed": True, "msg": text[-2000:]}
               for (_, out), text in zip(plays, outputs)]
    return results, outputs


def inconsistency(kube, namespace, parent, results, left, right):
    """What is wrong with the set after the two runs (None: both succeeded, and the set is exactly the
    desired set of one of them, the one that ran last: it pruned what only the other wanted)."""
    failed = [r.get("msg", r) for r in results if r.get("failed")]
    if failed:
        return f"failed: {failed}"
    set_id = results[0]["applyset"]["id"]
    now = {name for _, _, name in labelled(kube, (namespace,), set_id)}
    last = next((i for i, objects in enumerate((left, right)) if member_names(objects) == now), None)
    if last is None:
        return f"the set holds {sorted(now)}, neither run's desired set"
    only_other = member_names((left, right)[1 - last]) - now
    pruned = {o["name"] for o in results[last]["objects"] if o["action"] == "pruned"}
    if not only_other <= pruned:
        return f"the run whose set stayed did not prune {sorted(only_other - pruned)}: it did not run last"
    annotations = kube.get(f"/api/v1/namespaces/{namespace}/secrets/{parent}")["metadata"]["annotations"]
    if annotations.get("applyset.kubernetes.io/contains-group-kinds") != "ConfigMap" or CLAIM_KEY in annotations:
        return f"the parent says {annotations}"
    return None


@pytest.mark.parametrize("route", ["first-deploy", "change", "prune", "hooks"])
def test_two_playbook_runs_of_one_set_started_together_both_succeed(cluster, kube, namespace, tmp_path, route):
    """Two ansible-playbook runs of one set started at the same moment, round after round, on each
    route that writes the parent: the run that loses the race for the claim waits for the other
    and runs against what it left; neither fails (issue 36 item 1)."""
    admin = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    parent = f"conc-{route}"
    problems = []
    for round_no in range(ROUNDS):
        before, left, right = route_sets(route, round_no)
        if before is None:
            engine.Engine(admin, parent, namespace, Options()).uninstall()
        else:
            engine.Engine(admin, parent, namespace, Options()).apply(manifests.load_definition(before))
        results, outputs = two_at_once(cluster, tmp_path, namespace, parent, left, right)
        problem = inconsistency(kube, namespace, parent, results, left, right)
        if problem:
            problems.append(f"round {round_no}: {problem}")
            print(f"round {round_no}: {problem}\n{outputs[0][-1500:]}\n{outputs[1][-1500:]}")
        elif route == "hooks":
            ran = [[(h["phase"], h["name"], h["action"]) for h in r["hooks"]] for r in results]
            assert all(("pre-apply", "migrate", "completed") in hooks for hooks in ran), ran
    print(f"two runs started together, {route}: {ROUNDS} rounds, {len(problems)} failed")
    assert not problems
