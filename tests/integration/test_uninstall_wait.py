"""Uninstall waits until the members are gone (issue #16 point 5), like ``kubectl delete``.

A set of CRDs and custom resources, one of them held by a finalizer that a stand-in
controller removes once it sees the deletion: ``state: absent`` with ``wait`` returns
only when every CRD and resource is gone, and an install right after works.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))

from ansible_cli import run_playbook  # noqa: E402
from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.kube import client as core_kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402
from applyset.errors import ApplySetError  # noqa: E402
from kubeapi import wait_for  # noqa: E402

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FINALIZER = "applyset.example.com/cleanup"


def crd(group, kind):
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    }


KINDS = ("Widget", "Gadget", "Sprocket")


def stack(group, finalizer=True):
    """Three CRDs, two resources of each kind (one held by a finalizer), and a ConfigMap."""
    objs = [crd(group, kind) for kind in KINDS]
    for kind in KINDS:
        for i in range(2):
            meta = {"name": f"{kind.lower()}-{i}"}
            if finalizer and kind == "Widget" and i == 0:
                meta["finalizers"] = [FINALIZER]
            objs.append({"apiVersion": f"{group}/v1", "kind": kind, "metadata": meta, "spec": {"size": i}})
    objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}})
    return objs


def paths(group, namespace):
    result = [f"{CRDS}/{kind.lower()}s.{group}" for kind in KINDS]
    result += [f"/apis/{group}/v1/namespaces/{namespace}/{kind.lower()}s/{kind.lower()}-{i}"
               for kind in KINDS for i in range(2)]
    return result + [f"/api/v1/namespaces/{namespace}/configmaps/settings"]


class FinalizerController(threading.Thread):
    """Removes our finalizer from a resource once it is marked for deletion, as its controller would."""

    def __init__(self, kube, path):
        super().__init__(daemon=True)
        self.kube, self.path, self.stop, self.removed_at = kube, path, threading.Event(), None

    def run(self):
        while not self.stop.is_set():
            status, body, _ = self.kube.request("GET", self.path)
            if status == 200 and body["metadata"].get("deletionTimestamp"):
                self.kube.request("PATCH", self.path, {"metadata": {"finalizers": None}},
                                  content_type="application/merge-patch+json")
                self.removed_at = time.monotonic()
                return
            self.stop.wait(0.3)


def release(kube, path):
    kube.request("PATCH", path, {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")


def cleanup(kube, group, namespace):
    release(kube, f"/apis/{group}/v1/namespaces/{namespace}/widgets/widget-0")
    for kind in KINDS:
        kube.delete(f"{CRDS}/{kind.lower()}s.{group}")


def run(cluster, namespace, **options):
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    options.setdefault("allow_prune_kinds", frozenset({"CustomResourceDefinition"}))
    return engine.Engine(client, "stack", namespace, Options.from_settings(**options))


def test_uninstall_waits_for_finalizers_and_crds_then_reinstall_works(cluster, kube, namespace):
    group = f"u{secrets.token_hex(3)}.example.com"
    held = f"/apis/{group}/v1/namespaces/{namespace}/widgets/widget-0"
    try:
        run(cluster, namespace, wait=True, wait_timeout=120).apply(manifests.load_definition(stack(group)))

        controller = FinalizerController(kube, held)
        controller.start()
        started = time.monotonic()
        report = run(cluster, namespace, wait=True, wait_timeout=120).uninstall()
        returned_at = time.monotonic()
        controller.stop.set()
        controller.join()
        assert sorted(o.action for o in report.objects) == ["pruned"] * 10
        # Returned only after the finalizer was released, and nothing of the set is left.
        assert controller.removed_at is not None and controller.removed_at <= returned_at
        left = [p for p in paths(group, namespace) if kube.request("GET", p)[0] != 404]
        assert left == []
        print(f"uninstall with wait: {returned_at - started:.1f}s")

        # Install again at once: nothing of the old set is in the way.
        started = time.monotonic()
        report = run(cluster, namespace, wait=True, wait_timeout=120).apply(manifests.load_definition(stack(group)))
        assert sorted({o.action for o in report.objects}) == ["created"]
        print(f"reinstall right after: {time.monotonic() - started:.1f}s")
        assert kube.get(held)["spec"] == {"size": 0}
        crd_status = kube.get(f"{CRDS}/widgets.{group}")["status"]
        assert any(c["type"] == "Established" and c["status"] == "True" for c in crd_status["conditions"])
    finally:
        cleanup(kube, group, namespace)


def test_uninstall_timeout_lists_what_remains_and_the_finalizers_holding_it(cluster, kube, namespace):
    group = f"u{secrets.token_hex(3)}.example.com"
    try:
        run(cluster, namespace).apply(manifests.load_definition(stack(group)))
        with pytest.raises(ApplySetError) as caught:
            run(cluster, namespace, wait=True, wait_timeout=3).uninstall()
        error = caught.value
        assert [o.action for o in error.report.objects].count("pruned") == 10
        message = str(error)
        assert f"Widget {namespace}/widget-0: being deleted; finalizers: {FINALIZER}" in message
        # The CRD waits for its last resource: the API server's cleanup finalizer holds it.
        assert f"CustomResourceDefinition widgets.{group}: being deleted; finalizers: " \
               "customresourcecleanup.apiextensions.k8s.io" in message
        assert "not gone after 3s" in message
        unready = {(u["kind"], u["name"]) for u in error.details["unready"]}
        assert unready == {("Widget", "widget-0"), ("CustomResourceDefinition", f"widgets.{group}")}
    finally:
        cleanup(kube, group, namespace)
    wait_for(lambda: kube.request("GET", f"{CRDS}/widgets.{group}")[0] == 404, timeout=60, what="CRD gone")


def test_without_wait_uninstall_returns_while_members_are_still_being_deleted(cluster, kube, namespace):
    # The behaviour the issue reported, still there on request (wait: false).
    group = f"u{secrets.token_hex(3)}.example.com"
    held = f"/apis/{group}/v1/namespaces/{namespace}/widgets/widget-0"
    try:
        run(cluster, namespace).apply(manifests.load_definition(stack(group)))
        run(cluster, namespace, wait=False).uninstall()
        assert kube.get(held)["metadata"].get("deletionTimestamp")
    finally:
        cleanup(kube, group, namespace)


def test_uninstall_role_waits_by_default(cluster, kube, namespace, tmp_path):
    group = f"u{secrets.token_hex(3)}.example.com"
    held = f"/apis/{group}/v1/namespaces/{namespace}/widgets/widget-0"
    playbook = tmp_path / "cycle.yml"
    playbook.write_text(f"""
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: applyset.kubernetes.uninstall
      vars:
        uninstall_app: stack
        uninstall_namespace: {namespace}
        uninstall_allow_prune_kinds: [CustomResourceDefinition]
        uninstall_wait_timeout: 120
""")
    try:
        run(cluster, namespace).apply(manifests.load_definition(stack(group)))
        controller = FinalizerController(kube, held)
        controller.start()
        proc = run_playbook(cluster, playbook)
        controller.stop.set()
        controller.join()
        assert proc.returncode == 0, proc.stdout + proc.stderr
        left = [p for p in paths(group, namespace) if kube.request("GET", p)[0] != 404]
        assert left == []
    finally:
        cleanup(kube, group, namespace)
