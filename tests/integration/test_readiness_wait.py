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

from applyset import health, kube as core_kube  # noqa: E402
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
    assert health.wait_ready(client, targets, timeout=90, interval=0.5) == []
    assert time.monotonic() - started < 90
    live = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    assert live["status"]["availableReplicas"] == 2


def test_unschedulable_deployment_times_out_with_the_reason(kube, namespace, client, resources):
    impossible = deployment("stuck", 3, node_selector={"applyset.example.com/no-such-node": "true"})
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", impossible)
    started = time.monotonic()
    with pytest.raises(WaitTimeout) as caught:
        health.wait_ready(client, [(resources("apps", "Deployment"), namespace, "stuck")], timeout=8, interval=0.5)
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
        assert health.wait_ready(client, [(crd_res, None, f"gadgets.{group}")], timeout=30, interval=0.2) == []
        gadgets = core_kube.Resource(group, "v1", "Gadget", "gadgets", True)
        path = f"/apis/{group}/v1/namespaces/{namespace}/gadgets"
        deadline = time.monotonic() + 30
        while kube.request("GET", path)[0] != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        kube.create(path, {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}})
        target = [(gadgets, namespace, "g")]
        assert health.wait_ready(client, target, timeout=0) == []
        with pytest.raises(WaitTimeout, match=f"Gadget {namespace}/g: no status reported yet"):
            health.wait_ready(client, target, timeout=1, interval=0.2, fail_closed=True)
        assert health.wait_ready(client, target, timeout=0, overrides={"Gadget": "metadata.name == 'g'"}) == []
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
        health.wait_gone(client, targets, timeout=1, interval=0.2)
    message = str(caught.value)
    assert f"1 of 2 objects not gone after 1s: ConfigMap {namespace}/held: being deleted; " \
           "finalizers: applyset.example.com/hold" in message
    kube.request("PATCH", f"/api/v1/namespaces/{namespace}/configmaps/held",
                 {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
    assert health.wait_gone(client, targets, timeout=30, interval=0.2) == []
