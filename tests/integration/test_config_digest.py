"""The config_digest option (issue 49, inputs/config_digest.py) on the real control plane, with
kube-controller-manager making the Deployment's ReplicaSets: a changed ConfigMap or Secret of the set
rolls the Deployment that reads it (a new ReplicaSet), a re-run with the same config writes nothing,
and the annotation holds a digest, never a value.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kubeapi import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))

from applyset import engine  # noqa: E402
from applyset.inputs import config_digest, manifests  # noqa: E402
from applyset.kube import client as core_kube  # noqa: E402
from applyset.run.options import Options  # noqa: E402


def objects(mode, password="s3cret"):
    pod = {"containers": [{"name": "web", "image": "registry.example/web:1",
                           "envFrom": [{"configMapRef": {"name": "shop-settings"}}],
                           "env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]}]}
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shop-settings"}, "data": {"mode": mode}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"}, "stringData": {"password": password}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
                "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}}]


def apply(cluster, namespace, docs, **options):
    run = engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), "shop", namespace,
                        Options.from_settings(config_digest=True, **options))
    return run.apply(manifests.load_definition(docs))


def replica_sets(kube, namespace):
    items = kube.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    return sorted(s["metadata"]["labels"].get("pod-template-hash") for s in items)


def digest_on(kube, namespace):
    deployment = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    return deployment["spec"]["template"]["metadata"]["annotations"][config_digest.ANNOTATION]


@pytest.mark.parametrize("change", ["configmap", "secret"])
def test_changed_config_rolls_the_deployment_and_the_same_config_writes_nothing(cluster, kube, namespace, change):
    apply(cluster, namespace, objects("fast"))
    first = wait_for(lambda: replica_sets(kube, namespace), timeout=60, what="the first ReplicaSet")
    digest = digest_on(kube, namespace)
    assert digest.startswith("sha256:") and "s3cret" not in digest and "fast" not in digest

    again = apply(cluster, namespace, objects("fast"))
    assert again.requests["writes"] == 0, again.requests
    assert digest_on(kube, namespace) == digest and replica_sets(kube, namespace) == first

    changed = objects("safe") if change == "configmap" else objects("fast", password="n3w")
    apply(cluster, namespace, changed)
    assert digest_on(kube, namespace) != digest
    rolled = wait_for(lambda: len(replica_sets(kube, namespace)) == 2 and replica_sets(kube, namespace),
                      timeout=60, what="a second ReplicaSet")
    assert set(first) < set(rolled), (first, rolled)


def test_the_check_mode_plan_shows_the_digest_and_without_the_option_nothing_is_annotated(cluster, kube, namespace):
    preview = apply(cluster, namespace, objects("fast"), dry_run=True, diff=True)
    assert kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web") is None
    after = next(d["after"] for d in preview.diff if d["after_header"].startswith("Deployment"))
    assert f"{config_digest.ANNOTATION}: sha256:" in after, after
    run = engine.Engine(core_kube.connect({"kubeconfig": cluster.kubeconfig}), "plain", namespace, Options.from_settings())
    run.apply(manifests.load_definition(objects("fast")))
    template = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]["template"]
    assert config_digest.ANNOTATION not in (template["metadata"].get("annotations") or {})
