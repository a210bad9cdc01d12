"""Prove that the test cluster is a real Kubernetes control plane.

Each test exercises one behaviour the product relies on and that a fake
server would be unlikely to get right: CRD establishment, server-side apply
ownership and conflicts, dry run, metadata-only lists, controllers through
kwok, namespace finalization, and kubectl's own ApplySet pruning.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess

import pytest
import yaml
from kubeapi import wait_for

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


def test_version_is_the_pinned_release(kube, cluster):
    version = kube.get("/version")
    if cluster.local is not None:
        from local_cluster.build import KUBERNETES_VERSION

        assert version["gitVersion"] == KUBERNETES_VERSION
    assert int(version["minor"]) >= 27


def test_crd_becomes_established_and_serves_custom_resources(kube, namespace):
    group = f"smoke{secrets.token_hex(3)}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
                        }
                    },
                }
            ],
        },
    }
    kube.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    try:
        def established():
            live = kube.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
            return any(
                c["type"] == "Established" and c["status"] == "True"
                for c in (live.get("status") or {}).get("conditions") or []
            )

        wait_for(established, timeout=30, what="CRD Established")
        path = f"/apis/{group}/v1/namespaces/{namespace}/widgets"
        wait_for(lambda: kube.request("GET", path)[0] == 200, timeout=30, what="CR endpoint served")
        created = kube.create(
            path, {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
        )
        assert created["spec"]["size"] == 3
        assert kube.get(f"{path}/w1")["metadata"]["uid"] == created["metadata"]["uid"]
    finally:
        kube.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")


def test_server_side_apply_tracks_managers_and_reports_conflicts(kube, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps/ssa"
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"key": "one"}}
    status, body, _ = kube.apply(path, obj, field_manager="first")
    assert status == 201, body
    managers = {entry["manager"]: entry for entry in body["metadata"]["managedFields"]}
    assert managers["first"]["operation"] == "Apply"
    assert "f:key" in json.dumps(managers["first"]["fieldsV1"])

    status, body, _ = kube.apply(path, dict(obj, data={"key": "two"}), field_manager="second")
    assert status == 409, body
    assert body["reason"] == "Conflict"
    causes = body["details"]["causes"]
    assert any(c["field"] == ".data.key" and "first" in c["message"] for c in causes), causes

    status, body, _ = kube.apply(path, dict(obj, data={"key": "two"}), field_manager="second", force=True)
    assert status == 200 and body["data"]["key"] == "two"


def test_dry_run_writes_nothing(kube, namespace):
    path = f"/api/v1/namespaces/{namespace}/configmaps/dry"
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}, "data": {"a": "b"}}
    status, body, _ = kube.apply(path, obj, field_manager="smoke", dry_run=True)
    assert status == 201 and body["data"] == {"a": "b"}
    assert kube.get(path) is None

    kube.apply(path, obj, field_manager="smoke")
    before = kube.get(path)
    status, _, _ = kube.request("DELETE", path, query={"dryRun": "All"})
    assert status == 200
    after = kube.get(path)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_label_selector_list_returns_partial_object_metadata(kube, namespace):
    for i in range(5):
        labels = {"member": "yes"} if i % 2 == 0 else {"member": "no"}
        kube.create(
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}", "labels": labels}, "data": {"big": "x" * 1000}},
        )
    status, body, _ = kube.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        query={"labelSelector": "member=yes", "limit": "2"},
        accept=METADATA_LIST,
    )
    assert status == 200
    assert body["kind"] == "PartialObjectMetadataList"
    names = [item["metadata"]["name"] for item in body["items"]]
    assert "data" not in body["items"][0]
    cont = body["metadata"].get("continue")
    assert len(names) == 2 and cont, "limit=2 must paginate"
    status, body, _ = kube.request(
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        query={"labelSelector": "member=yes", "limit": "2", "continue": cont},
        accept=METADATA_LIST,
    )
    names += [item["metadata"]["name"] for item in body["items"]]
    assert sorted(names) == ["cm0", "cm2", "cm4"]


def test_deployment_becomes_ready_through_kwok(kube, namespace):
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment)

    def ready():
        status = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").get("status", {})
        return status.get("readyReplicas") == 2 and status.get("availableReplicas") == 2

    wait_for(ready, timeout=90, what="Deployment web 2/2 ready")
    pods = kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector="app=web")["items"]
    assert len(pods) == 2
    assert all(p["status"]["phase"] == "Running" and p["spec"]["nodeName"] for p in pods)


def test_namespace_deletion_completes(kube):
    name = f"t-delete-{secrets.token_hex(3)}"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    kube.create(
        f"/api/v1/namespaces/{name}/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "content"}},
    )
    kube.delete(f"/api/v1/namespaces/{name}")
    wait_for(lambda: kube.get(f"/api/v1/namespaces/{name}") is None, timeout=90, what=f"namespace {name} gone")


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_applyset_prune_works(cluster, kube, namespace, tmp_path):
    def apply(names):
        manifest = yaml.safe_dump_all(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}, "data": {"n": n}} for n in names
        )
        proc = subprocess.run(
            ["kubectl", "apply", "-n", namespace, "--server-side", "--prune", "--applyset=smoke-set", "-f", "-"],
            input=manifest,
            capture_output=True,
            text=True,
            env=cluster.env(KUBECTL_APPLYSET="true"),
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    apply(["cm1", "cm2"])
    out = apply(["cm1"])
    assert "configmap/cm2 pruned" in out
    remaining = [i["metadata"]["name"] for i in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]]
    assert "cm1" in remaining and "cm2" not in remaining
    parent = kube.get(f"/api/v1/namespaces/{namespace}/secrets/smoke-set")
    assert parent["metadata"]["annotations"]["applyset.kubernetes.io/contains-group-kinds"] == "ConfigMap"
    assert parent["metadata"]["labels"]["applyset.kubernetes.io/id"].startswith("applyset-")
