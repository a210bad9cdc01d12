"""Taking over objects that client-side tools wrote (issue 10 point 3), against the real cluster.

Each case: an object written by another tool with fields ``a``, ``b`` and label ``tier``; then
our set takes it with a manifest that sets fewer fields. What the tool recorded as its intent
(client-side apply) is migrated whole, as ``kubectl apply --server-side`` does, so the fields the
manifest leaves out are removed at once. What imperative tools wrote is migrated where our
manifest sets it too, so removing such a field from the manifest later really removes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from ansible_cli import BIN, REPO_ROOT, ansible_env
from test_apply import apply

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.{}"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ANSIBLE_PKG = "ansible>=12,<13"  # the community package whose kubernetes.core matches ansible-core 2.19
CACHE = Path(os.environ.get("APPLYSET_CACHE_DIR", Path.home() / ".cache" / "applyset-kubernetes")) / "wheels"


def config_map(namespace, data, labels=None):
    meta = {"name": "app", "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def kubectl(cluster, version, *args, stdin=None, env=None):
    proc = subprocess.run([KUBECTL.format(version), *args], input=stdin, capture_output=True, text=True,
                          timeout=120, env={**ansible_env(cluster), **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def live(kube, namespace, name="app"):
    return kube.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")


def managers(obj):
    return sorted({m["manager"] for m in obj["metadata"].get("managedFields") or []})


@pytest.mark.parametrize("version", [27, 30, 33])
def test_a_client_side_kubectl_apply_is_migrated_whole(cluster, kube, namespace, version):
    manifest = yaml.safe_dump(config_map(namespace, {"a": "1", "b": "2"}, {"tier": "web"}))
    kubectl(cluster, version, "apply", "-f", "-", stdin=manifest)
    rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})], parent="set1")
    assert rc == 0, out
    assert "took over all fields of kubectl-client-side-apply" in out
    obj = live(kube, namespace)
    assert obj["data"] == {"a": "1"} and "tier" not in (obj["metadata"].get("labels") or {})
    assert LAST_APPLIED not in (obj["metadata"].get("annotations") or {})
    assert "kubectl-client-side-apply" not in managers(obj)
    # The next run has nothing left to move.
    rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})], parent="set1")
    assert rc == 0 and not result["changed"], out


def test_check_mode_says_what_a_real_run_would_take_over(cluster, kube, namespace):
    manifest = yaml.safe_dump(config_map(namespace, {"a": "1", "b": "2"}))
    kubectl(cluster, 33, "apply", "-f", "-", stdin=manifest)
    rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})], check=True)
    assert rc == 0, out
    assert "a real run takes over all fields of kubectl-client-side-apply" in out
    assert live(kube, namespace)["data"] == {"a": "1", "b": "2"}


IMPERATIVE = {
    "create": lambda c, ns, m: kubectl(c, 33, "create", "-f", "-", stdin=m),
    "replace": lambda c, ns, m: (kubectl(c, 33, "create", "-f", "-", stdin=m.replace('"0"', '"x"')),
                                 kubectl(c, 33, "replace", "-f", "-", stdin=m)),
    "patch": lambda c, ns, m: (kubectl(c, 33, "create", "configmap", "app", "-n", ns, "--from-literal=a=1"),
                               kubectl(c, 33, "patch", "configmap", "app", "-n", ns, "--type=merge", "-p",
                                       json.dumps({"data": {"b": "2", "c": "0"},
                                                   "metadata": {"labels": {"tier": "web"}}}))),
    "edit": lambda c, ns, m: (kubectl(c, 33, "create", "configmap", "app", "-n", ns, "--from-literal=a=1",
                                      "--from-literal=b=2", "--from-literal=c=x"),
                              kubectl(c, 33, "label", "configmap", "app", "-n", ns, "tier=web"),
                              kubectl(c, 33, "edit", "configmap", "app", "-n", ns,
                                      env={"KUBE_EDITOR": "sed -i -e 's/c: x/c: \"0\"/'"})),
}


@pytest.mark.parametrize("tool", sorted(IMPERATIVE))
def test_fields_an_imperative_kubectl_command_wrote_become_ours_where_the_manifest_sets_them(
        cluster, kube, namespace, tool):
    full = config_map(namespace, {"a": "1", "b": "2", "c": "0"}, {"tier": "web"})
    IMPERATIVE[tool](cluster, namespace, json.dumps(full))
    rc, result, out = apply(cluster, namespace, [full])
    assert rc == 0, out
    assert "took over the fields the manifest sets from kubectl-" in out, out
    # Now ours alone: leaving them out of the manifest removes them.
    rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})])
    assert rc == 0, out
    obj = live(kube, namespace)
    assert obj["data"] == {"a": "1"}, obj["data"]
    assert "tier" not in (obj["metadata"].get("labels") or {})


def test_fields_only_an_imperative_command_set_stay_theirs(cluster, kube, namespace):
    kubectl(cluster, 33, "create", "-f", "-", stdin=json.dumps(config_map(namespace, {"a": "1", "b": "2"})))
    kubectl(cluster, 33, "label", "configmap", "app", "-n", namespace, "owner=alice")
    rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})])
    assert rc == 0, out
    obj = live(kube, namespace)
    assert obj["data"] == {"a": "1", "b": "2"}  # b was never in our manifest: not ours to remove
    assert obj["metadata"]["labels"]["owner"] == "alice"


def deployment(namespace, env, containers):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                         {"name": name, "image": "registry.example/web:1",
                          "env": [{"name": k, "value": v} for k, v in env.items()]} for name in containers]}}}}


def test_a_deployment_applied_client_side_loses_removed_env_vars_and_containers(cluster, kube, namespace):
    kubectl(cluster, 33, "apply", "-f", "-",
            stdin=yaml.safe_dump(deployment(namespace, {"A": "1", "B": "2"}, ["web", "sidecar"])))
    rc, result, out = apply(cluster, namespace, [deployment(namespace, {"A": "1"}, ["web"])])
    assert rc == 0, out
    spec = kube.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["containers"]] == ["web"]
    assert spec["containers"][0]["env"] == [{"name": "A", "value": "1"}]


# ----- kubernetes.core ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kubernetes_core(tmp_path_factory):
    """kubernetes.core from the community `ansible` package on PyPI (no Galaxy here), unpacked alone."""
    CACHE.mkdir(parents=True, exist_ok=True)
    wheels = sorted(CACHE.glob("ansible-12.*-py3-none-any.whl"))
    if not wheels:
        proc = subprocess.run([sys.executable, "-m", "pip", "download", ANSIBLE_PKG, "--no-deps", "-q",
                               "-d", str(CACHE)], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"could not download {ANSIBLE_PKG} from PyPI: {proc.stderr}"
        wheels = sorted(CACHE.glob("ansible-12.*-py3-none-any.whl"))
    dest = tmp_path_factory.mktemp("kubernetes-core")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        wheel.extractall(dest, members=[n for n in wheel.namelist()
                                        if n.startswith("ansible_collections/kubernetes/core/")])
    return f"{dest}:{REPO_ROOT / '.state' / 'collections'}"


def k8s_module(cluster, collections_path, definition, **options):
    env = ansible_env(cluster, ANSIBLE_COLLECTIONS_PATH=collections_path)
    args = {"kubeconfig": cluster.kubeconfig, "definition": definition, **options}
    proc = subprocess.run([str(BIN / "ansible"), "localhost", "-m", "kubernetes.core.k8s", "-a", json.dumps(args)],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("mode", ["create", "apply", "patch", "replace"])
def test_objects_written_by_kubernetes_core_are_taken_over(cluster, kube, namespace, kubernetes_core, mode):
    full = config_map(namespace, {"a": "1", "b": "2"}, {"tier": "web"})
    if mode == "create":
        k8s_module(cluster, kubernetes_core, full)
    elif mode == "apply":
        k8s_module(cluster, kubernetes_core, full, apply=True)
    elif mode == "patch":  # the default on an existing object: a strategic merge patch
        k8s_module(cluster, kubernetes_core, config_map(namespace, {"a": "1"}))
        k8s_module(cluster, kubernetes_core, full)
    else:
        k8s_module(cluster, kubernetes_core, config_map(namespace, {"a": "x"}))
        k8s_module(cluster, kubernetes_core, full, force=True)
    assert "OpenAPI-Generator" in managers(live(kube, namespace))
    if mode == "apply":  # client-side apply: its intent is migrated whole, at once
        rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})])
    else:  # imperative: what the manifest sets becomes ours, then removing it from the manifest works
        rc, result, out = apply(cluster, namespace, [full])
        assert rc == 0, out
        rc, result, out = apply(cluster, namespace, [config_map(namespace, {"a": "1"})])
    assert rc == 0, out
    obj = live(kube, namespace)
    assert obj["data"] == {"a": "1"} and "tier" not in (obj["metadata"].get("labels") or {})
