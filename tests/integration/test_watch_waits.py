"""Waits that watch (issue 38, item 4), against the real control plane.

A wait lists each (resource, namespace) once, then follows a watch from the list's
resourceVersion: readiness is noticed when it happens and a long wait costs a handful of
requests. Proven here with a custom resource whose status the test writes as its controller
would: the request count of a wait, reconnects after the server ends a watch (short
timeoutSeconds), a 410 from a resourceVersion the server no longer has, and a user who may list
but not watch (polling, and one warning). The core's own client waits; ``kube`` writes.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "plugins" / "module_utils"))

from applyset.kube import client as core_kube  # noqa: E402
from applyset.kube import watch as kube_watch  # noqa: E402
from applyset.spec import GroupKind, ObjectId  # noqa: E402
from applyset.wait import waiting, watching  # noqa: E402
from kubeapi import wait_for  # noqa: E402

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture(scope="module")
def group(kube):
    """A CRD of Widgets, served for the module's tests, deleted after."""
    name = f"w{uuid.uuid4().hex[:8]}.watch.example.com"
    kube.create(CRDS, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{name}"},
        "spec": {"group": name, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    })

    def established():
        crd = kube.get(f"{CRDS}/widgets.{name}")
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in (crd.get("status") or {}).get("conditions") or [])

    wait_for(established, 30, what="CRD Established")
    yield name
    kube.delete(f"{CRDS}/widgets.{name}")


def connect(cluster, group, **auth):
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig, **auth})
    for _ in range(40):  # discovery may lag the CRD a moment
        res = client.discover().for_group_kind(GroupKind(group, "Widget"))
        if res is not None:
            return client, res
        time.sleep(0.25)
    raise AssertionError("Widget not discovered")


def widget(name, ready: str):
    return {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "Testing"}]}}


def create_widgets(kube, group, namespace, names):
    for name in names:
        body = {**widget(name, "False"), "apiVersion": f"{group}/v1"}
        kube.create(f"/apis/{group}/v1/namespaces/{namespace}/widgets", body)


def make_ready_later(kube, group, namespace, names, after: float) -> dict:
    """Set each widget Ready after ``after`` seconds, in a thread; ``when['ready']`` says when."""
    when: dict = {}

    def later():
        time.sleep(after)
        for name in names:
            path = f"/apis/{group}/v1/namespaces/{namespace}/widgets/{name}"
            live = kube.get(path)
            live["status"] = widget(name, "True")["status"]
            kube.request("PUT", path, live)
        when["ready"] = time.monotonic()

    thread = threading.Thread(target=later, daemon=True)
    thread.start()
    when["thread"] = thread
    return when


def test_a_wait_on_one_custom_resource_lists_once_then_watches(cluster, kube, namespace, group):
    client, res = connect(cluster, group)
    create_widgets(kube, group, namespace, ["one"])
    when = make_ready_later(kube, group, namespace, ["one"], after=3)
    before = client.requests_sent
    assert waiting.wait_ready(client, [(res, namespace, "one")], timeout=15) == {}
    noticed = time.monotonic()
    sent = client.requests_sent - before
    when["thread"].join()
    print(f"\nwatch: ready noticed {1000 * (noticed - when['ready']):.0f} ms after the write; {sent} requests")
    # One LIST and one WATCH (polling sent a LIST a second: 17 for such a wait).
    assert sent <= 4
    assert noticed - when["ready"] < 1.0
    assert threading.active_count() < 20 and not [t for t in threading.enumerate() if t.name.startswith("applyset-watch")]


def test_a_watch_the_server_ends_is_opened_again_from_the_last_version(cluster, kube, namespace, group, monkeypatch):
    client, res = connect(cluster, group)
    create_widgets(kube, group, namespace, ["a", "b"])
    monkeypatch.setattr(watching, "MAX_WATCH_SECONDS", 1)  # the server ends each watch after 1 s
    when = make_ready_later(kube, group, namespace, ["a", "b"], after=4)
    before = client.requests_sent
    assert waiting.wait_ready(client, [(res, namespace, "a"), (res, namespace, "b")], timeout=15) == {}
    sent = client.requests_sent - before
    when["thread"].join()
    # One LIST, then a watch per second, each resumed from the last resourceVersion: no LIST again.
    assert 3 <= sent <= 9, sent


def test_a_resource_version_the_server_no_longer_has_is_listed_again(cluster, kube, namespace, group, monkeypatch):
    client, res = connect(cluster, group)
    create_widgets(kube, group, namespace, ["old"])
    lists = []
    real = kube_watch.list_with_version

    def first_list_says_too_old(client_, res_, ns, **kwargs):
        items, version = real(client_, res_, ns, **kwargs)
        lists.append(version)
        return items, ("1" if len(lists) == 1 else version)  # long compacted: the watch gets 410

    monkeypatch.setattr(kube_watch, "list_with_version", first_list_says_too_old)
    monkeypatch.setattr(watching, "list_with_version", first_list_says_too_old)
    when = make_ready_later(kube, group, namespace, ["old"], after=2)
    assert waiting.wait_ready(client, [(res, namespace, "old")], timeout=15) == {}
    when["thread"].join()
    assert len(lists) == 2, "the 410 made the wait list again, then watch from there"


def test_a_user_who_may_list_but_not_watch_is_polled_with_one_warning(cluster, kube, namespace, group):
    user = f"lister-{uuid.uuid4().hex[:6]}"
    kube.create(f"{RBAC}/namespaces/{namespace}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": user},
        "rules": [{"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list"]}]})
    kube.create(f"{RBAC}/namespaces/{namespace}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    admin, res = connect(cluster, group)
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig, "impersonate_user": user})
    client.discover()
    create_widgets(kube, group, namespace, ["p", "q"])
    warnings: list = []
    when = make_ready_later(kube, group, namespace, ["p"], after=2)
    assert waiting.wait_ready(client, [(res, namespace, "p")], timeout=15, warn=warnings.append) == {}
    when["thread"].join()
    when = make_ready_later(kube, group, namespace, ["q"], after=1)
    before = client.requests_sent
    assert waiting.wait_ready(client, [(res, namespace, "q")], timeout=15, warn=warnings.append) == {}
    when["thread"].join()
    assert len(warnings) == 1, warnings
    assert "instead of watching" in warnings[0] and f"widgets.{group}" in warnings[0]
    # The second wait knows: it polls at once, without asking to watch again.
    assert client.requests_sent - before >= 2


def test_a_wait_on_many_objects_ends_at_its_timeout_and_leaves_no_thread(cluster, kube, namespace, group):
    client, res = connect(cluster, group)
    names = [f"n{i}" for i in range(5)]
    create_widgets(kube, group, namespace, names)
    started = time.monotonic()
    unready = waiting.wait_ready(client, [(res, namespace, n) for n in names], timeout=3, raise_on_timeout=False)
    elapsed = time.monotonic() - started
    assert [target[2] for target in unready] == names
    assert 3 <= elapsed < 4, "a watch's read timeout never lets a wait overrun its deadline by a second"
    assert not [t for t in threading.enumerate() if t.name.startswith("applyset-watch")]


# ----- what failed: the failing container's log (issue 38, item 5) ---------------------------------


def test_a_crash_looping_deployment_asks_for_its_previous_containers_log(cluster, kube, namespace):
    """No kubelet runs here (kwok fakes the node and serves no logs), so no log has lines: this
    proves the request (tail, byte limit, previous=true after restarts, an Accept the server
    takes) against the real server, and what an unscheduled pod's log is (empty, not an error).
    tests/unit/wait/test_wait_reasons.py proves the lines when a log is served, and the note when
    pods/log is forbidden."""
    from applyset.errors import WaitTimeout
    from applyset.wait import reasons

    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "crashy"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "crashy"}},
                     "template": {"metadata": {"labels": {"app": "crashy"}},
                                  "spec": {"nodeSelector": {"applyset.example.com/nowhere": "true"},
                                           "containers": [{"name": "app", "image": "registry.invalid/app:1"}]}}}}
    kube.create(f"/apis/apps/v1/namespaces/{namespace}/deployments", body)
    pods = wait_for(lambda: kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector="app=crashy")["items"],
                    30, what="the Deployment's pod")
    pod = pods[0]["metadata"]["name"]
    # What the kubelet would report for a container that keeps crashing.
    kube.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod}/status", {"status": {"containerStatuses": [
        {"name": "app", "image": "registry.invalid/app:1", "imageID": "", "ready": False, "restartCount": 3,
         "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}}}]}},
        content_type="application/strategic-merge-patch+json")
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig})
    res = client.discover().for_group_kind(GroupKind("apps", "Deployment"))
    with pytest.raises(WaitTimeout) as caught:
        waiting.wait_ready(client, [(res, namespace, "crashy")], timeout=2)
    sent = []
    real = client.request

    def recording(method, path, **kwargs):
        sent.append((method, path, kwargs.get("query")))
        return real(method, path, **kwargs)

    client.request = recording
    err = reasons.explain(client, caught.value, {ObjectId("apps", "Deployment", namespace, "crashy"): body})
    logs = [s for s in sent if s[1].endswith("/log")]
    assert logs == [("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
                     {"container": "app", "tailLines": "20", "limitBytes": "4096", "previous": "true"})]
    container = err.details["unready"][0]["pods"][0]["containers"][0]
    # A pod with no node: the server answers an empty log (no kubelet to ask), not an error.
    assert container["reason"] == "CrashLoopBackOff" and container["log"] == [] and container["previous"] is True
    without = reasons.explain(client, caught.value, {ObjectId("apps", "Deployment", namespace, "crashy"): body}, logs=False)
    assert len([s for s in sent if s[1].endswith("/log")]) == 1
    assert "log" not in without.details["unready"][0]["pods"][0]["containers"][0]


def test_a_gated_set_for_a_user_who_may_not_watch_applies_with_one_warning(cluster, kube, namespace, group):
    """Through the engine: a ConfigMap that depends on a Widget, for a user who may not watch
    Widgets: the gate polls, the run succeeds, and its warnings say so once."""
    from applyset import engine
    from applyset.inputs import manifests
    from applyset.run.options import Options

    user = f"gated-{uuid.uuid4().hex[:6]}"
    kube.create(f"{RBAC}/namespaces/{namespace}/roles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": user},
        "rules": [{"apiGroups": [group], "resources": ["widgets"], "verbs": ["get", "list", "create", "patch", "update"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]})
    kube.create(f"{RBAC}/namespaces/{namespace}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": user},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    depends = f"{group}/namespaces/{namespace}/Widget/dep"
    definition = [{**widget("dep", "False"), "apiVersion": f"{group}/v1"},
                  {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
                   "metadata": {"name": "after", "annotations": {"config.kubernetes.io/depends-on": depends}}}]
    client = core_kube.connect({"kubeconfig": cluster.kubeconfig, "impersonate_user": user})
    eng = engine.Engine(client, "configmaps/gated", namespace, Options.from_settings(wait_timeout=30))

    def ready_once_applied():
        path = f"/apis/{group}/v1/namespaces/{namespace}/widgets/dep"
        wait_for(lambda: kube.get(path), 30, what="the widget applied")
        time.sleep(1)
        live = kube.get(path)
        live["status"] = widget("dep", "True")["status"]
        kube.request("PUT", path, live)

    thread = threading.Thread(target=ready_once_applied, daemon=True)
    thread.start()
    report = eng.apply(manifests.load_definition(definition))
    thread.join()
    assert kube.get(f"/api/v1/namespaces/{namespace}/configmaps/after") is not None
    polled = [w for w in report.warnings if "instead of watching" in w]
    assert len(polled) == 1, report.warnings
