"""Readiness waiting against the real control plane (kwok runs the Pods).

The core's own client is used to wait (that is what is under test); the
independent test client ``kube`` creates and deletes the objects.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))

from applyset.wait import readiness
from applyset.wait import waiting
from applyset.kube import client as core_kube  # noqa: E402
from applyset.kube import discovery
from applyset.errors import WaitTimeout  # noqa: E402
from applyset.spec import GroupKind  # noqa: E402


@pytest.fixture(scope="module")
def client(cluster):
    return core_kube.connect({"kubeconfig": cluster.kubeconfig})


@pytest.fixture(scope="module")
def resources(client):
    discovery = client.discover()

    def lookup(group, kind):
        return discovery.for_group_kind(GroupKind(group, kind))

    return lookup


def deployment(name, replicas, node_selector=None):
    pod_spec = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def test_deployment_and_its_configmap_become_ready(kube, namespace, client, resources):
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("web", 2))
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}})
    targets = [
        (resources("apps", "Deployment"), namespace, "web"),
        (resources("", "ConfigMap"), namespace, "settings"),
        (resources("", "Namespace"), None, namespace),
    ]
    started = time.monotonic()
    assert waiting.wait_ready(client, targets, timeout=90, interval=0.5) == {}
    assert time.monotonic() - started < 90
    live = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live["status"]["availableReplicas"] == 2


def test_unschedulable_deployment_times_out_with_the_reason(kube, namespace, client, resources):
    impossible = deployment("stuck", 3, node_selector={"applyset.example.com/no-such-node": "true"})
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", impossible)
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_ready(client, [(resources("apps", "Deployment"), namespace, "stuck")], timeout=8, interval=0.5)
    elapsed = time.monotonic() - started
    assert 8 <= elapsed < 15, "the wait is bounded by its timeout"
    assert f"Deployment {namespace}/stuck: 0/3 replicas available" in str(caught.value)
    assert caught.value.details["unready"][0]["name"] == "stuck"


def test_fail_closed_custom_resource_without_status_times_out(kube, namespace, client):
    # A CRD with a status subresource whose resources no controller ever updates.
    group = f"{namespace}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"gadgets.{group}"},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    kube.create(crds, crd)
    try:
        crd_res = client.discover().for_group_kind(GroupKind("apiextensions.k8s.io", "CustomResourceDefinition"))
        assert waiting.wait_ready(client, [(crd_res, None, f"gadgets.{group}")], timeout=30, interval=0.2) == {}
        gadgets = discovery.Resource(group, "v1", "Gadget", "gadgets", True)
        path = f"/apis/{group}/v1/namespaces/{namespace}/gadgets"
        deadline = time.monotonic() + 30
        while kube.request("GET", path)[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        kube.create(path, {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}})
        target = [(gadgets, namespace, "g")]
        assert waiting.wait_ready(client, target, timeout=0) == {}
        with pytest.raises(WaitTimeout, match=f"Gadget {namespace}/g: no status reported yet"):
            waiting.wait_ready(client, target, timeout=1, interval=0.2, fail_closed=True)
        assert waiting.wait_ready(client, target, timeout=0, overrides={"Gadget": "metadata.name == 'g'"}) == {}
    finally:
        kube.delete(f"{crds}/gadgets.{group}")


def test_wait_gone_after_delete(kube, namespace, client, resources):
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "held", "finalizers": ["applyset.example.com/hold"]}})
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps",
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}})
    configmaps = resources("", "ConfigMap")
    targets = [(configmaps, namespace, "held"), (configmaps, namespace, "plain")]
    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/held")
    kube.delete(f"/api/v1/namespaces/{namespace}/configmaps/plain")
    # The finalizer holds one object back: the timeout names it and says why.
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_gone(client, targets, timeout=1, interval=0.2)
    message = str(caught.value)
    assert f"1 of 2 objects not gone after 1s: ConfigMap {namespace}/held: being deleted; " \
           "finalizers: applyset.example.com/hold" in message
    kube.request("PATCH", f"/api/v1/namespaces/{namespace}/configmaps/held",
                 {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    assert waiting.wait_gone(client, targets, timeout=30, interval=0.2) == {}


# ----- objects that go away: Jobs removed by their TTL, objects deleted under the wait -----------

from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.inputs import manifests  # noqa: E402


def job(name, *, ttl=None, never_scheduled=False, deadline=None):
    pod_spec = {"restartPolicy": "Never", "containers": [{"name": "run", "image": "busybox:1.36"}]}
    if never_scheduled:
        pod_spec["nodeSelector"] = {"applyset.example.com/no-such-node": "true"}
    spec = {"backoffLimit": 0, "template": {"spec": pod_spec}}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def wait_until_gone(kube, path, timeout=60):
    deadline = time.monotonic() + timeout
    while kube.request("GET", path)[0] != 404:
        assert time.monotonic() < deadline, f"{path} still exists after {timeout}s"
        time.sleep(0.2)


def created(kube, namespace, obj):
    """Create a Job, returning it as the server has it (with its UID), the way apply returns it."""
    return kube.create(f"/apis/batch/v1/namespaces/{namespace}/jobs", obj)


def test_jobs_with_ttl_zero_complete_and_the_wait_succeeds(cluster, kube, namespace):
    # Issue #16 point 4: Jobs that delete themselves once complete. Either the wait sees
    # the Job complete (even while the TTL controller is deleting it) or finds it gone and
    # reads its final event; both are success, and neither waits out the timeout.
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    run = engine.Engine(client, "jobs", namespace, Options.from_settings(wait=True, wait_timeout=120))
    started = time.monotonic()
    run.apply(manifests.load_definition([job(f"migrate-{i}", ttl=0) for i in range(3)]))  # raises on failure
    elapsed = time.monotonic() - started
    print(f"3 Jobs with ttlSecondsAfterFinished: 0 applied and waited for in {elapsed:.1f}s")
    for i in range(3):  # they really are removed by the TTL controller
        wait_until_gone(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs/migrate-{i}")


def test_a_ttl_job_already_gone_is_judged_by_its_final_event(kube, namespace, client, resources):
    live = created(kube, namespace, job("done", ttl=0))
    wait_until_gone(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs/done")
    target = (resources("batch", "Job"), namespace, "done")
    started = time.monotonic()
    assert waiting.wait_ready(client, [target], timeout=60, interval=0.5, applied={target: live}) == {}
    assert time.monotonic() - started < 60


def test_a_ttl_job_that_failed_and_is_gone_is_reported_failed(kube, namespace, client, resources):
    # Never scheduled, so its deadline fails it; then its TTL removes it.
    live = created(kube, namespace, job("late", ttl=0, never_scheduled=True, deadline=1))
    wait_until_gone(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs/late")
    target = (resources("batch", "Job"), namespace, "late")
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_ready(client, [target], timeout=60, interval=0.5, applied={target: live})
    message = str(caught.value)
    assert "cannot become ready" in message
    assert f"Job {namespace}/late: failed: DeadlineExceeded" in message
    assert "then removed by its ttlSecondsAfterFinished (0s)" in message


def test_a_job_deleted_while_waiting_is_reported_as_deleted(kube, namespace, client, resources):
    live = created(kube, namespace, job("stuck", never_scheduled=True))
    target = (resources("batch", "Job"), namespace, "stuck")
    kube.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/stuck")
    wait_until_gone(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs/stuck")
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_ready(client, [target], timeout=60, interval=0.5, applied={target: live})
    assert f"Job {namespace}/stuck: deleted while waiting: the object applied (uid {live['metadata']['uid']}) " \
           "is gone" in str(caught.value)
    # Recreated under the same name: still not the object that was applied.
    created(kube, namespace, job("stuck", never_scheduled=True))
    with pytest.raises(WaitTimeout, match="a new object with uid .* took its name"):
        waiting.wait_ready(client, [target], timeout=60, interval=0.5, applied={target: live})


def test_a_suspended_job_has_nothing_to_wait_for(kube, namespace, client, resources):
    # As a queue (Kueue) creates them: nothing runs until it is resumed.
    suspended = job("queued")
    suspended["spec"]["suspend"] = True
    live = created(kube, namespace, suspended)
    target = (resources("batch", "Job"), namespace, "queued")
    assert waiting.wait_ready(client, [target], timeout=30, interval=0.5, applied={target: live}) == {}
    found = readiness.verdict(kube.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/queued"))
    assert found.ready and found.message.startswith("suspended")
