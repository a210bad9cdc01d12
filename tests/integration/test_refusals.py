"""What a person is told when the cluster refuses, and a stalled API server, against the real
control plane (issue 26, points 3 and 5)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from module_runner import module_run
from kubeapi import KubeAPI, wait_for

VAP_PATH = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
BINDING_PATH = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"


@pytest.fixture
def refused_prefix(kube):
    """A ValidatingAdmissionPolicy (and its binding) that denies creating namespaces whose name
    starts with the returned prefix, as a policy controller refusing new namespaces does."""
    prefix = f"refused-{secrets.token_hex(3)}-"
    name = prefix + "policy"
    kube.create(VAP_PATH, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["namespaces"]}]},
                 "validations": [{"expression": f"!object.metadata.name.startsWith('{prefix}')",
                                  "message": "new namespaces need the platform team's approval"}]}})
    kube.create(BINDING_PATH, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}})

    def enforced():
        status, body, _w = kube.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix + "probe"}}, query={"dryRun": "All"})
        return status >= 400 and "denied request" in str(body)  # 422 Invalid, as the server answers

    wait_for(enforced, timeout=30, what="the policy to be enforced")
    yield prefix
    kube.delete(f"{BINDING_PATH}/{name}")
    kube.delete(f"{VAP_PATH}/{name}")


def test_a_namespace_refused_by_a_policy_is_reported_with_the_policy_and_its_message(cluster, kube, refused_prefix):
    ns = refused_prefix + "shop"
    definition = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": ns},
                   "data": {"k": "v"}}]
    rc, result, out = module_run(cluster, "applyset_apply", {"parent": "shop", "namespace": ns,
                                                             "definition": definition})
    assert rc != 0, out
    msg = result["msg"]
    assert f"could not create namespace {ns} for the parent" in msg, msg
    assert "ValidatingAdmissionPolicy" in msg and refused_prefix + "policy" in msg, msg
    assert "new namespaces need the platform team's approval" in msg, msg
    assert "admission webhook or policy refused the namespace" in msg, msg
    assert kube.get(f"/api/v1/namespaces/{ns}") is None  # nothing was created


@pytest.fixture
def own_control_plane():
    """A control plane of this test's own: stopping its API server disturbs no other test."""
    from cluster_info import ClusterInfo
    from local_cluster.cluster import LocalCluster

    local = LocalCluster(state_dir=Path(tempfile.mkdtemp(prefix="applyset-stall-")))
    local.up(log=lambda msg: print(msg, file=sys.stderr))
    try:
        yield ClusterInfo(kubeconfig=str(local.kubeconfig), local=local)
    finally:
        local.down(log=lambda msg: print(msg, file=sys.stderr))
        shutil.rmtree(local.state_dir, ignore_errors=True)


def test_a_run_outlives_an_api_server_stopped_for_45_seconds(own_control_plane, tmp_path):
    cluster = own_control_plane
    kube = KubeAPI(cluster.kubeconfig)
    namespace = "stalled"
    kube.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    [pid] = [p.pid for p in cluster.local.processes if p.name == "kube-apiserver"]
    count = 2000
    src = tmp_path / "many.yaml"
    src.write_text("".join(f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i:04d}}}\ndata: {{i: '{i}'}}\n"
                           for i in range(count)))
    stopped, finished = threading.Event(), threading.Event()

    def applying() -> bool:
        return finished.is_set() or len(kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]) > 50

    def stall():
        # Once the run is applying (some members exist), stop the server for 45 s.
        wait_for(applying, timeout=300, interval=0.05, what="the run to start applying")
        if finished.is_set():
            return
        os.kill(pid, signal.SIGSTOP)
        stopped.set()
        try:
            time.sleep(45)
        finally:
            os.kill(pid, signal.SIGCONT)

    staller = threading.Thread(target=stall, daemon=True)
    staller.start()
    try:
        rc, result, out = module_run(cluster, "applyset_apply", {
            "parent": "set1", "namespace": namespace, "src": str(src)}, timeout=900)
    finally:
        finished.set()
        staller.join(timeout=120)
        os.kill(pid, signal.SIGCONT)
    assert stopped.is_set(), "the server was never stopped: the run finished first"
    assert rc == 0, out
    assert result["summary"]["created"] == count, result["summary"]
    print(f"requests: {result['requests']}", file=sys.stderr)
    items = kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]
    assert len([i for i in items if i["metadata"]["name"].startswith("c")]) == count
