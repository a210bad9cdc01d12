"""The requests in flight back off when the real API server's priority and fairness says no.

Each test tightens priority and fairness for one user of its own only: a PriorityLevelConfiguration
with a single nominal share, no borrowing and ``Reject`` (the server answers 429 with a
Retry-After when its few seats are taken), and a FlowSchema that sends that user's requests there.
The run impersonates the user, who may do anything in the test's namespace. Both objects are
deleted afterwards, so other tests on the same cluster never meet them.

The controller's rules themselves are unit-tested at the HTTP boundary: tests/unit/kube/test_flow_control.py.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time
from pathlib import Path

import pytest
from kubeapi import wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "plugins" / "module_utils"))
from applyset import engine  # noqa: E402
from applyset.run.options import Options
from applyset.kube import client as kube  # noqa: E402
from applyset.inputs import manifests  # noqa: E402

APF = "/apis/flowcontrol.apiserver.k8s.io/v1"


@pytest.fixture
def tight_user(kube, namespace):
    """A user whose requests get one nominal share of the server's seats, rejected (429) beyond them."""
    name = f"applyset-apf-{secrets.token_hex(3)}"
    kube.create(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}]})
    kube.create(f"{APF}/prioritylevelconfigurations", {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                                "borrowingLimitPercent": 0, "limitResponse": {"type": "Reject"}}}})
    kube.create(f"{APF}/flowschemas", {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": name},
        "spec": {"priorityLevelConfiguration": {"name": name}, "matchingPrecedence": 200,
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": name}}],
                            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                               "namespaces": ["*"], "clusterScope": True}],
                            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}})
    try:
        # The server's flow-control configuration follows the objects within a moment: wait until
        # the FlowSchema is no longer dangling, then until the user's requests are classified by it.
        wait_for(lambda: any(c.get("type") == "Dangling" and c.get("status") == "False"
                             for c in ((kube.get(f"{APF}/flowschemas/{name}") or {}).get("status") or {})
                             .get("conditions") or []), timeout=60, what=f"FlowSchema {name} in use")
        yield name
    finally:
        kube.delete(f"{APF}/flowschemas/{name}")
        kube.delete(f"{APF}/prioritylevelconfigurations/{name}")
        kube.delete(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/{name}")


def traced_client(cluster, user, parallelism=None):
    """A client impersonating ``user``; every attempt's start, answer time, status and Retry-After."""
    client = kube.connect({"kubeconfig": cluster.kubeconfig, "impersonate_user": user}, parallelism=parallelism,
                          retry_seconds=120)
    trace, lock = [], threading.Lock()
    pool_request = client._pool.request

    def request(*args, **kwargs):
        started = time.monotonic()
        resp = pool_request(*args, **kwargs)
        with lock:
            trace.append((started, time.monotonic(), resp.status, resp.headers.get("Retry-After")))
        return resp

    client._pool.request = request
    return client, trace


def configmaps(namespace, count):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"apf-{i:04d}", "namespace": namespace},
             "data": {"k": "v" * 2000, "i": str(i)}} for i in range(count)]


def apply(client, namespace, count, **options):
    loaded = manifests.load_definition(configmaps(namespace, count))
    return engine.Engine(client, "apf-set", namespace, Options.from_settings(**options)).apply(loaded)


def test_a_rejecting_server_halves_the_requests_in_flight_waits_out_retry_after_and_loses_nothing(
        cluster, kube, namespace, tight_user):
    client, trace = traced_client(cluster, tight_user)
    report = apply(client, namespace, 300)
    rejected = [t for t in trace if t[2] == 429]
    assert rejected, "the server never answered 429: priority and fairness was not tight enough"
    assert client.flow.pushbacks == len([t for t in trace if t[2] in (429, 503)])
    print(f"429s: {len(rejected)} of {len(trace)} requests; requests in flight: from {client.flow.start}, "
          f"down to {client.flow.low}, up to {client.flow.peak}, {client.flow.limit} at the end")
    assert client.flow.low < client.flow.start  # halved on the rejections
    # Nothing lost: every object was created, each rejection sent again.
    assert sum(1 for o in report.objects if o.action == "created") == 300
    names = {item["metadata"]["name"] for item in kube.get(f"/api/v1/namespaces/{namespace}/configmaps")["items"]}
    assert {f"apf-{i:04d}" for i in range(300)} <= names
    assert report.requests["sent"] == len(trace) > 300
    # Retry-After: no request of this client went out while one it had been given was running.
    holds = [(answered, answered + float(after)) for _, answered, status, after in rejected if after]
    assert holds, "the server's 429s carried no Retry-After"
    for started, _, _, _ in trace:
        assert not any(begin + 0.05 < started < end - 0.05 for begin, end in holds), (started, holds)


def test_one_request_at_a_time_stays_within_the_seats_and_is_never_rejected(cluster, kube, namespace, tight_user):
    client, trace = traced_client(cluster, tight_user, parallelism=1)
    report = apply(client, namespace, 40)
    assert not [t for t in trace if t[2] == 429]
    assert client.flow.peak == 1 and client.flow.pushbacks == 0
    assert sum(1 for o in report.objects if o.action == "created") == 40
    assert report.requests["round_trips"] == report.requests["sent"]  # one after another
