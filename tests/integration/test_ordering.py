"""Order inside a set against the real control plane (kwok runs the Pods, the Job controller runs
the Jobs): depends-on gates, sync waves, prune after ready, prune in reverse order, cycles.

The core library is driven directly (engine.Engine); the independent test client ``kube`` reads
what the cluster holds.
"""

from __future__ import annotations

import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset import errors
from applyset.kube import client as core_kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.errors import InputError, WaitTimeout  # noqa: E402

DEPENDS_ON = "config.kubernetes.io/depends-on"
WAVE = "argocd.argoproj.io/sync-wave"
UNSCHEDULABLE = {"applyset.example.com/no-such-node": "true"}


@pytest.fixture(scope="module")
def client(cluster):
    """The kubeconfig; each run connects anew, so that its request counts are its own."""
    return cluster.kubeconfig


def job(name, annotations=None, seconds=None):
    container = {"name": "run", "image": "busybox:1.36"}
    if seconds:
        container["command"] = ["sleep", str(seconds)]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}}}


def deployment(name, annotations=None, config=None, node_selector=None):
    pod_spec = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    if config:
        pod_spec["volumes"] = [{"name": "config", "configMap": {"name": config}}]
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}}


def configmap(name, annotations=None, finalizers=None):
    meta = {"name": name, "annotations": annotations or {}}
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"name": name}}


def run(client, namespace, objects, **options):
    options.setdefault("wait_timeout", 90)
    eng = engine.Engine(core_kube.connect({"kubeconfig": client}), "configmaps/order-set", namespace, Options.from_settings(**options))
    return eng.apply(manifests.load_definition(objects))


def stamp(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")


def exists(kube, path) -> bool:
    return kube.request("GET", path)[0] == 200


def test_a_migration_job_completes_before_the_deployment_that_depends_on_it_is_created(kube, namespace, client):
    web = deployment("web", {DEPENDS_ON: f"batch/namespaces/{namespace}/Job/migrate"})
    started = time.monotonic()
    report = run(client, namespace, [web, job("migrate", seconds=2)])
    print(f"gated apply (Job 2 s, then Deployment): {time.monotonic() - started:.1f}s, "
          f"{report.requests['sent']} requests, {report.requests['writes']} writes")
    migrate = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate")
    created = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["metadata"]["creationTimestamp"]
    assert stamp(migrate["status"]["completionTime"]) <= stamp(created)
    assert report.order == [f"Deployment {namespace}/web waits for Job {namespace}/migrate to be applied and ready "
                            f"({DEPENDS_ON})"]
    # A no-op re-run of the set: no write, nothing changed, no gate waited for.
    started = time.monotonic()
    again = run(client, namespace, [web, job("migrate", seconds=2)])
    print(f"no-op re-run with a dependency: {time.monotonic() - started:.2f}s, {again.requests['sent']} requests, "
          f"{again.requests['writes']} writes")
    assert again.requests["writes"] == 0 and not again.changed


def test_a_sync_wave_minus_one_job_completes_before_wave_zero_objects_exist(kube, namespace, client):
    objects = [configmap("settings"), deployment("web"), job("migrate", {WAVE: "-1"}, seconds=2)]
    report = run(client, namespace, objects)
    migrate = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate")
    for path in (f"/api/v1/namespaces/{namespace}/configmaps/settings",
                 f"/apis/apps/v1/namespaces/{namespace}/deployments/web"):
        assert stamp(migrate["status"]["completionTime"]) <= stamp(kube.get(path)["metadata"]["creationTimestamp"])
    assert report.order[0] == f"sync wave -1: Job {namespace}/migrate; applied and ready before the next wave"


def test_a_gate_that_times_out_applies_nothing_after_it_and_names_what_it_waited_for(kube, namespace, client):
    stuck = deployment("stuck", node_selector=UNSCHEDULABLE)
    after = configmap("after", {DEPENDS_ON: f"apps/namespaces/{namespace}/Deployment/stuck"})
    free = configmap("free")
    with pytest.raises(WaitTimeout) as caught:
        run(client, namespace, [stuck, after, free], wait_timeout=4)
    message = str(caught.value)
    assert f"ConfigMap {namespace}/after waits for Deployment {namespace}/stuck (depends-on)" in message
    assert "0/1 replicas available" in message
    assert not exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/after")
    assert exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/free"), "what does not wait goes on"
    parent = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/order-set")
    assert "applyset.kubernetes.ansible/lock" not in parent["metadata"]["annotations"]


def test_a_gate_on_a_job_that_cannot_create_its_pod_says_why(kube, namespace, client):
    """The Job's pod is refused (its ServiceAccount does not exist): the gate's error names the Job
    controller's FailedCreate event, as the members' wait does (wait_reasons)."""
    migrate = job("migrate")
    migrate["spec"]["template"]["spec"]["serviceAccountName"] = "no-such-account"
    after = configmap("after", {DEPENDS_ON: f"batch/namespaces/{namespace}/Job/migrate"})
    with pytest.raises(WaitTimeout) as caught:
        run(client, namespace, [migrate, after], wait_timeout=4)
    message = str(caught.value)
    assert f"ConfigMap {namespace}/after waits for Job {namespace}/migrate" in message, message
    assert "why: Job" in message and 'FailedCreate' in message and '"no-such-account" not found' in message, message
    assert caught.value.details["unready"][0]["events"][0]["reason"] == "FailedCreate"
    assert not exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/after")


def test_a_renamed_configmap_is_pruned_only_once_the_new_rollout_is_ready(kube, namespace, client):
    run(client, namespace, [configmap("cfg-1"), deployment("web", config="cfg-1")], wait=True)
    with pytest.raises(WaitTimeout) as caught:
        run(client, namespace, [configmap("cfg-2"), deployment("web", config="cfg-2", node_selector=UNSCHEDULABLE)],
            wait=True, wait_timeout=5)
    assert "nothing was pruned" in str(caught.value)
    old = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/cfg-1")
    parent = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/order-set")
    assert old["metadata"]["labels"]["applyset.kubernetes.io/part-of"] == parent["metadata"]["labels"][
        "applyset.kubernetes.io/id"]
    annotations = parent["metadata"]["annotations"]
    assert "ConfigMap" in annotations["applyset.kubernetes.io/contains-group-kinds"].split(",")
    assert "applyset.kubernetes.ansible/lock" not in annotations
    # The next good run prunes it.
    report = run(client, namespace, [configmap("cfg-2"), deployment("web", config="cfg-2")], wait=True)
    assert [o.name for o in report.objects if o.action == "pruned"] == ["cfg-1"]
    assert not exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/cfg-1")


def test_prune_early_goes_before_the_wait(kube, namespace, client):
    early = configmap("early", {"applyset.kubernetes.ansible/prune-timing": "early"})
    run(client, namespace, [configmap("late"), early, configmap("stay")], wait=True)
    with pytest.raises(WaitTimeout):
        run(client, namespace, [configmap("stay"), deployment("web", node_selector=UNSCHEDULABLE)],
            wait=True, wait_timeout=3, max_prune_percent=100)
    assert not exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/early")
    assert exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/late")


def test_a_dependency_is_pruned_only_after_its_dependent_is_gone(kube, namespace, client):
    hold = "applyset.example.com/hold"
    user = configmap("user", {DEPENDS_ON: f"/namespaces/{namespace}/ConfigMap/base"}, finalizers=[hold])
    run(client, namespace, [configmap("base"), user, configmap("stay")])
    base_path = f"/api/v1/namespaces/{namespace}/configmaps/base"
    user_path = f"/api/v1/namespaces/{namespace}/configmaps/user"
    seen = []

    def release_after_a_while():
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            seen.append((exists(kube, user_path), exists(kube, base_path)))
            time.sleep(0.2)
        kube.request("PATCH", user_path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")

    watcher = threading.Thread(target=release_after_a_while)
    watcher.start()
    try:
        report = run(client, namespace, [configmap("stay")], max_prune_percent=100)
    finally:
        watcher.join()
    assert sorted(o.name for o in report.objects if o.action == "pruned") == ["base", "user"]
    assert seen and all(base for _user, base in seen), "base stayed while its dependent was still there"
    assert not exists(kube, base_path) and not exists(kube, user_path)


def test_a_cycle_is_refused_before_any_write(kube, namespace, client):
    before = kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]
    a = configmap("a", {DEPENDS_ON: f"/namespaces/{namespace}/ConfigMap/b"})
    b = configmap("b", {DEPENDS_ON: f"/namespaces/{namespace}/ConfigMap/a"})
    with pytest.raises(InputError) as caught:
        run(client, namespace, [a, b])
    assert f"ConfigMap {namespace}/a waits for ConfigMap {namespace}/b (depends-on)" in str(caught.value)
    assert f"ConfigMap {namespace}/b waits for ConfigMap {namespace}/a (depends-on)" in str(caught.value)
    assert caught.value.report.requests["writes"] == 0
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"] == before


def test_a_dependency_neither_in_the_set_nor_on_the_cluster_is_refused(kube, namespace, client):
    web = configmap("web", {DEPENDS_ON: f"batch/namespaces/{namespace}/Job/nowhere"})
    with pytest.raises(InputError) as caught:
        run(client, namespace, [web])
    assert f"ConfigMap {namespace}/web depends on Job {namespace}/nowhere" in str(caught.value)
    assert "neither in the set nor on the cluster" in str(caught.value)
    assert not exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/order-set")


def test_a_dependency_outside_the_set_is_waited_for(kube, namespace, client):
    kube.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", job("outside", seconds=2))
    web = configmap("web", {DEPENDS_ON: f"batch/namespaces/{namespace}/Job/outside"})
    report = run(client, namespace, [web])
    outside = kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/outside")
    created = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/web")["metadata"]["creationTimestamp"]
    assert stamp(outside["status"]["completionTime"]) <= stamp(created)
    assert "(outside the set)" in report.order[0]


def test_the_order_says_an_object_outside_the_set_is_waited_for_not_applied(kube, namespace, client):
    # Issue 36, item 10: this run never applies an object outside the set; it only waits for it.
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps", configmap("outside"))
    web = configmap("web", {DEPENDS_ON: f"/namespaces/{namespace}/ConfigMap/outside"})
    report = run(client, namespace, [web])
    assert report.order == [f"ConfigMap {namespace}/web waits for ConfigMap {namespace}/outside (outside the set) "
                            f"to be ready: waited for, not applied ({DEPENDS_ON})"]


def test_members_not_tried_after_a_failure_in_an_ordered_set_are_listed_in_plan_order(kube, namespace, client):
    # Issue 36, item 7: what waits for a failed member is never tried, and says so, in its place.
    refused = {**configmap("first"), "bogus": 1}
    waiting = configmap("second", {DEPENDS_ON: f"/namespaces/{namespace}/ConfigMap/first"})
    with pytest.raises(errors.ApplySetError) as caught:
        run(client, namespace, [refused, waiting, configmap("third")])
    listed = [(o.name, o.action) for o in caught.value.report.objects]
    assert listed == [("first", "failed"), ("second", "skipped"), ("third", "created")], listed
    assert caught.value.report.objects[1].reason.startswith("not tried: an earlier member failed")
    assert sum(caught.value.report.summary().values()) == 3
    assert not exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/second")


def test_check_mode_shows_the_order_and_writes_nothing(kube, namespace, client):
    web = deployment("web", {DEPENDS_ON: f"batch/namespaces/{namespace}/Job/migrate"})
    report = run(client, namespace, [web, job("migrate"), configmap("first", {WAVE: "-2"})], dry_run=True, wait=True)
    assert report.order == [
        f"sync wave -2: ConfigMap {namespace}/first; applied and ready before the next wave",
        f"sync wave 0: Deployment {namespace}/web, Job {namespace}/migrate",
        f"Deployment {namespace}/web waits for Job {namespace}/migrate to be applied and ready ({DEPENDS_ON})",
        "prune once every applied object is ready (wait: true)"]
    assert not exists(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate")


def test_a_run_killed_during_the_wait_before_prune_leaves_the_union_and_the_next_run_prunes(kube, namespace, client):
    import json
    import subprocess

    run(client, namespace, [configmap("cfg-1"), deployment("web", config="cfg-1")], wait=True)
    job_input = {"auth": {"kubeconfig": client}, "parent": "configmaps/order-set", "namespace": namespace,
                 "definition": [configmap("cfg-2"), deployment("web", config="cfg-2", node_selector=UNSCHEDULABLE)],
                 "options": {"wait": True, "wait_timeout": 120, "claim_ttl": 3}}
    driver = Path(__file__).resolve().parent / "engine_driver.py"
    proc = subprocess.Popen([sys.executable, str(driver)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdin.write(json.dumps(job_input))
    proc.stdin.close()
    web = f"/apis/apps/v1/namespaces/{namespace}/deployments/web"
    deadline = time.monotonic() + 60
    # The Deployment is the last member applied: once it is, the run is in the wait before the prune.
    while not (exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/cfg-2")
               and kube.get(web)["spec"]["template"]["spec"].get("nodeSelector") == UNSCHEDULABLE):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before its wait"
    proc.kill()
    proc.wait()
    parent = kube.get(f"/api/v1/namespaces/{namespace}/configmaps/order-set")
    assert "ConfigMap" in parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"]
    assert exists(kube, f"/api/v1/namespaces/{namespace}/configmaps/cfg-1"), "nothing pruned before the wait ended"
    # The killed run's claim (claim_ttl 3 s) still stands: this run waits for it to expire (claim_wait).
    report = run(client, namespace, [configmap("cfg-2"), deployment("web", config="cfg-2")], wait=True)
    assert [o.name for o in report.objects if o.action == "pruned"] == ["cfg-1"]


def test_the_cost_of_a_gate(kube, namespace, client):
    """Figures, not assertions on time: the same Job and Deployment with and without a gate."""
    figures = {}
    for gated in (False, True):
        suffix = "g" if gated else "p"
        annotations = {DEPENDS_ON: f"batch/namespaces/{namespace}/Job/migrate-{suffix}"} if gated else {}
        objects = [deployment(f"web-{suffix}", annotations), job(f"migrate-{suffix}")]
        started = time.monotonic()
        eng = engine.Engine(core_kube.connect({"kubeconfig": client}), f"configmaps/cost-{suffix}", namespace,
                            Options.from_settings(wait_timeout=90))
        report = eng.apply(manifests.load_definition(objects))
        figures[gated] = (time.monotonic() - started, report.requests["sent"], report.requests["writes"])
        started = time.monotonic()
        eng = engine.Engine(core_kube.connect({"kubeconfig": client}), f"configmaps/cost-{suffix}", namespace,
                            Options.from_settings(wait_timeout=90))
        again = eng.apply(manifests.load_definition(objects))
        figures[(gated, "no-op")] = (time.monotonic() - started, again.requests["sent"], again.requests["writes"])
    for name, (seconds, sent, writes) in figures.items():
        print(f"cost {name}: {seconds:.2f}s, {sent} requests, {writes} writes")
    assert figures[(True, "no-op")][2] == 0
