"""Taking over a `kubectl apply --prune -l app=shop` set (issue 10 point 4), against the real cluster."""

from __future__ import annotations

import subprocess

import yaml
from ansible_cli import ansible_env
from test_apply import PART_OF, apply, hints, names

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"


def cm(name, namespace, **labels):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "shop", **labels}},
            "data": {"v": name}}


def legacy_apply(cluster, namespace, objects):
    """The old way: client-side apply with a label-selector prune."""
    proc = subprocess.run([KUBECTL, "apply", "-n", namespace, "--prune", "-l", "app=shop", "-f", "-"],
                          input=yaml.safe_dump_all(objects), capture_output=True, text=True, timeout=120,
                          env=ansible_env(cluster))
    assert proc.returncode == 0, proc.stderr


def test_a_legacy_prune_set_is_taken_over_and_what_left_the_manifests_is_pruned(cluster, kube, namespace):
    kept = ["a", "d", "e", "f"]
    legacy_apply(cluster, namespace, [cm(name, namespace) for name in ["a", "b", "c", "d", "e", "f"]])
    # Matches the selector but was not made by kubectl apply: kubectl's prune never touched it.
    kube.create(f"/api/v1/namespaces/{namespace}/configmaps", cm("by-hand", namespace))
    desired = [cm(name, namespace) for name in kept]
    option = {"selector": "app=shop"}

    rc, result, out = apply(cluster, namespace, desired, adopt_legacy=option, check=True)
    assert rc == 0, out
    assert result["applyset"]["adopted"] == [f"ConfigMap {namespace}/{n}" for n in "abcdef"]
    assert sorted(o["name"] for o in result["objects"] if o["action"] == "pruned") == ["b", "c"]
    assert names(kube, namespace) == ["a", "b", "by-hand", "c", "d", "e", "f"]  # check mode changed nothing
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None

    rc, result, out = apply(cluster, namespace, desired, adopt_legacy=option)
    assert rc == 0, out
    pruned = {o["name"]: o.get("reason", "") for o in result["objects"] if o["action"] == "pruned"}
    assert sorted(pruned) == ["b", "c"] and "legacy prune set (app=shop)" in pruned["b"]
    assert names(kube, namespace) == ["a", "by-hand", "d", "e", "f"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/a")["metadata"]["labels"][PART_OF] == \
        result["applyset"]["id"]
    assert PART_OF not in kube.get(f"/api/v1/namespaces/{namespace}/configmaps/by-hand")["metadata"]["labels"]
    assert hints(kube, namespace)[1]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap"

    # A second run with the option changes nothing more.
    rc, result, out = apply(cluster, namespace, desired, adopt_legacy=option)
    assert rc == 0 and not result["changed"], out


def test_objects_helm_manages_are_refused_with_the_release_named_and_nothing_changes(cluster, kube, namespace):
    chart = cm("chart", namespace, **{"app.kubernetes.io/managed-by": "Helm"})
    chart["metadata"]["annotations"] = {"meta.helm.sh/release-name": "shop-old",
                                        "meta.helm.sh/release-namespace": namespace}
    legacy_apply(cluster, namespace, [cm("a", namespace), chart])
    rc, result, out = apply(cluster, namespace, [cm("a", namespace)], adopt_legacy={"selector": "app=shop"})
    assert rc != 0
    assert f"Helm release {namespace}/shop-old" in result["msg"] and "allow_helm" in result["msg"]
    assert names(kube, namespace) == ["a", "chart"]
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None

    rc, result, out = apply(cluster, namespace, [cm("a", namespace)],
                            adopt_legacy={"selector": "app=shop", "allow_helm": True})
    assert rc == 0, out
    assert names(kube, namespace) == ["a"]
