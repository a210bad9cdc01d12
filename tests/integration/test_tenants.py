"""Tenants: a ServiceAccount bound to the admin, edit or view ClusterRole in its own namespace (a
RoleBinding, the AWX habit), authenticated with a bearer token as AWX passes it. applyset_verify and
applyset_info check the tenant's sets in the namespaces they record; what the credentials cannot
see is reduced coverage. And (issue 26, point 4) a set whose CRD's conversion webhook is down is
still uninstalled and counted: its kind is listed at the CRD's storage version.
"""

from __future__ import annotations

import threading
import time

import pytest
import urllib3
from module_runner import module_run
from faultproxy import FaultProxy
from test_rbac_secrets import Bearer, bound, cm, secret, service

MEMBERS = 5


def deployment(name):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}


def five_members():
    return [cm("a"), cm("b"), secret("s", {"k": "v"}), service("web"), deployment("d")]


def tenant(cluster, kube, namespace, tmp_path, role) -> Bearer:
    """A ServiceAccount bound to the ClusterRole ``role`` in ``namespace`` by a RoleBinding."""
    name = f"tenant-{role}"
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    return bound(cluster, kube, namespace, tmp_path, name, {"kind": "ClusterRole", "name": role})


def admin(cluster, module, args, **kwargs):
    rc, result, out = module_run(cluster, module, args, **kwargs)
    assert rc == 0, out
    return result


def as_tenant(bearer, cluster, tmp_path, module, args, **kwargs):
    return module_run(cluster, module, args, env=bearer.env(cluster, tmp_path), **kwargs)


def codes(result):
    return sorted(p["code"] for p in result["problems"])


# ----- admin and edit: verify, info, deploy and uninstall ------------------------------------------------------


@pytest.mark.parametrize("role", ["admin", "edit"])
def test_a_tenant_checks_its_set_with_reduced_coverage(cluster, kube, namespace, tmp_path, role):
    deployed = admin(cluster, "applyset_apply", {"parent": "set1", "namespace": namespace,
                                                 "definition": five_members()})
    set_id = deployed["applyset"]["id"]
    # A leak inside the tenant's namespace: a kind the hint does not record.
    kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts", {
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "leaked", "labels": {"applyset.kubernetes.io/part-of": set_id}}})
    bearer = tenant(cluster, kube, namespace, tmp_path, role)

    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_verify",
                                {"parent": "set1", "namespace": namespace, "fail_on_problems": False}, cli=True)
    assert rc == 0, out
    assert result["unlisted"] == [], result["unlisted"]
    assert result["applysets"][0]["member_count"] == MEMBERS + 1
    assert codes(result) == ["reduced_coverage", "unrecorded_group_kind"]
    reduced = next(p for p in result["problems"] if p["code"] == "reduced_coverage")
    assert reduced["severity"] == "warning"
    assert result["complete"] is False
    coverage = result["reduced_coverage"]
    assert coverage["namespaces"] == [namespace]
    kinds = [k["group_kind"] for k in coverage["kinds"]]
    assert "Namespace" in kinds and "CustomResourceDefinition.apiextensions.k8s.io" in kinds
    assert "[WARNING]: reduced coverage: the credentials may not list" in out
    leak = next(p for p in result["problems"] if p["code"] == "unrecorded_group_kind")
    assert [o["name"] for o in leak["objects"]] == ["leaked"]
    kube.delete(f"/api/v1/namespaces/{namespace}/serviceaccounts/leaked")

    # Without the leak the check is ok; with require_complete_scan, reduced coverage fails it.
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_verify",
                                {"parent": "set1", "namespace": namespace})
    assert rc == 0, out
    assert result["ok"] is True and result["applysets"][0]["member_count"] == MEMBERS
    assert codes(result) == ["reduced_coverage"]
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_verify",
                                {"parent": "set1", "namespace": namespace, "require_complete_scan": True})
    assert rc != 0, out
    assert "reduced_coverage" in result["msg"] and result["ok"] is False

    # Every set of the namespace.
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_verify", {"namespace": namespace})
    assert rc == 0, out
    assert [(s["parent"]["name"], s["member_count"]) for s in result["applysets"]] == [("set1", MEMBERS)]

    # applyset_info: the set, its members, and the parent types it could not look for.
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_info",
                                {"parent": "set1", "namespace": namespace, "member_count": True})
    assert rc == 0, out
    assert result["applysets"][0]["member_count"] == MEMBERS and result["complete"] is True
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_info",
                                {"namespace": namespace, "member_count": True})
    assert rc == 0, out
    assert [(s["parent"]["name"], s["member_count"]) for s in result["applysets"]] == [("set1", MEMBERS)]
    assert result["unlisted"] == []
    assert [k["group_kind"] for k in result["reduced_coverage"]["kinds"]] == [
        "CustomResourceDefinition.apiextensions.k8s.io"]

    # Deploy (check mode and real) and uninstall work as before.
    for check in (True, False):
        rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_apply",
                                    {"parent": "set1", "namespace": namespace, "definition": five_members()[:4],
                                     "guard": {"max_prune_percent": 100}}, check=check)
        assert rc == 0, out
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_apply",
                                {"parent": "set1", "namespace": namespace, "state": "absent"})
    assert rc == 0, out
    assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None


def test_edit_cannot_read_rbac_objects_so_a_set_that_records_them_is_checked_incompletely(
        cluster, kube, namespace, tmp_path):
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}
    admin(cluster, "applyset_apply", {"parent": "set1", "namespace": namespace, "definition": [cm("a"), role]})
    bearer = tenant(cluster, kube, namespace, tmp_path, "edit")
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_verify",
                                {"parent": "set1", "namespace": namespace})
    assert rc != 0, out
    assert codes(result) == ["incomplete_scan", "reduced_coverage"]
    assert [(u["group_kind"], u["namespace"]) for u in result["unlisted"]] == [
        ("Role.rbac.authorization.k8s.io", namespace)]
    incomplete = next(p for p in result["problems"] if p["code"] == "incomplete_scan")
    assert incomplete["fix"].startswith("give the credentials list on every kind")
    assert result["fixes"] == []  # nothing is dropped from the hint


# ----- view: read-only; check mode needs dry-run writes ----------------------------------------------------------


def test_view_reads_a_configmap_set_and_check_mode_says_it_needs_write_verbs(cluster, kube, namespace, tmp_path):
    admin(cluster, "applyset_apply", {"parent": "configmaps/set1", "namespace": namespace,
                                      "definition": [cm("a"), service("web")]})
    bearer = tenant(cluster, kube, namespace, tmp_path, "view")
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_verify",
                                {"parent": "configmaps/set1", "namespace": namespace})
    assert rc == 0, out
    assert result["applysets"][0]["member_count"] == 2 and codes(result) == ["reduced_coverage"]
    rc, result, out = as_tenant(bearer, cluster, tmp_path, "applyset_apply",
                                {"parent": "configmaps/set1", "namespace": namespace,
                                 "definition": [cm("a", v="changed"), service("web")]}, check=True)
    assert rc != 0, out
    print(result["msg"])
    failed = [o for o in result["objects"] if o["action"] == "failed"]
    assert failed, result["objects"]
    for obj in failed:
        plural = "configmaps" if obj["kind"] == "ConfigMap" else "services"
        assert obj["reason"].startswith(
            "check mode sends server-side dry runs, which the API server authorizes as the writes themselves: the "
            f"credentials need patch on {plural} in namespace {namespace} even to preview"), obj["reason"]


# ----- the request cost of a tenant's verify ------------------------------------------------------------------


class TenantCountingProxy(FaultProxy):
    """Forwards a tenant's own bearer token (no admin client certificate) and counts every request."""

    def __init__(self, kubeconfig, ca_cert):
        super().__init__(kubeconfig)
        self._pool = urllib3.PoolManager(maxsize=16, cert_reqs="CERT_REQUIRED", ca_certs=ca_cert, retries=False)
        self.seen = []
        self._count = threading.Lock()

    def _forward(self, method, path, headers, body):
        with self._count:
            self.seen.append(f"{method} {path.split('?')[0]}")
        keep = {k: v for k, v in headers.items()
                if k.lower() in ("content-type", "accept", "user-agent", "authorization")}
        return self._pool.request(method, self.upstream + path, body=body, headers=keep, timeout=60,
                                  preload_content=True)


def test_the_request_cost_of_a_tenants_verify(cluster, kube, namespace, tmp_path):
    admin(cluster, "applyset_apply", {"parent": "set1", "namespace": namespace, "definition": five_members()})
    bearer = tenant(cluster, kube, namespace, tmp_path, "admin")
    proxy = TenantCountingProxy(cluster.kubeconfig, bearer.ca_cert)
    try:
        env = bearer.env(cluster, tmp_path)
        env["K8S_AUTH_HOST"] = proxy.url
        rc, result, out = module_run(cluster, "applyset_verify", {"parent": "set1", "namespace": namespace}, env=env)
        assert rc == 0, out
        kinds = len({k["group_kind"] for k in result["reduced_coverage"]["kinds"] if k["namespace"] is None})
        lists = [r for r in proxy.seen if r.startswith("GET") and not r.endswith("/set1")
                 and r not in ("GET /api", "GET /apis")]
        in_namespace = [r for r in lists if f"/namespaces/{namespace}/" in r]
        print(f"tenant verify: {len(proxy.seen)} requests, {len(lists)} LISTs ({len(in_namespace)} in the "
              f"namespace), {kinds} kinds refused across all namespaces")
        # One LIST per listable kind across all namespaces, one more per refused namespaced kind in the
        # set's namespace, the parent GET and discovery: no retries of refusals.
        assert len(lists) - len(in_namespace) >= kinds
        assert len(proxy.seen) <= 2 * (len(lists) - len(in_namespace)) + 4
    finally:
        proxy.close()


# ----- a CRD whose conversion webhook is down (issue 26, point 4) ------------------------------------------------

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def widget_crd(group):
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema},
                                  {"name": "v2", "served": True, "storage": False, "schema": schema}],
                     "conversion": {"strategy": "None"}}}


def wait_served(kube, group, version, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, _body, _ = kube.request("GET", f"/apis/{group}/{version}/widgets")
        if status == 200:
            return
        time.sleep(0.3)
    raise AssertionError(f"{group}/{version} widgets never served")


def test_a_set_whose_conversion_webhook_is_down_is_counted_verified_and_uninstalled(cluster, kube, namespace):
    group = f"{namespace}.example.com"
    kube.create(CRDS, widget_crd(group))
    try:
        wait_served(kube, group, "v2")
        widgets = [{"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": f"w{i}"}, "spec": {"n": i}}
                   for i in (1, 2)]
        admin(cluster, "applyset_apply", {"parent": "set1", "namespace": namespace,
                                          "definition": [cm("a"), *widgets]})
        # The objects are stored at v1; now every conversion goes to a Service that does not exist.
        status, body, _ = kube.request("PATCH", f"{CRDS}/widgets.{group}", {"spec": {"conversion": {
            "strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
                "service": {"namespace": namespace, "name": "no-such-converter", "path": "/convert"}}}}}},
            content_type="application/merge-patch+json")
        assert status == 200, body
        deadline = time.monotonic() + 30
        while True:  # the server takes the new strategy up asynchronously
            status, body, _ = kube.request("GET", f"/apis/{group}/v2/namespaces/{namespace}/widgets")
            if status in (429, 500) or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        # kube-apiserver 1.34: 429 "storage is (re)initializing: ... conversion webhook ... failed".
        assert status in (429, 500) and "conversion webhook" in body["message"], (status, body)
        print("LIST at v2:", body.get("message") if isinstance(body, dict) else body)

        started = time.monotonic()
        rc, result, out = module_run(cluster, "applyset_info", {"parent": "set1", "namespace": namespace}, cli=True)
        print(f"info with the fallback: {time.monotonic() - started:.1f} s")
        assert rc == 0, out
        entry = result["applysets"][0]
        assert entry["member_count"] == 3 and result["complete"] is True
        assert {m["apiVersion"] for m in entry["members"] if m["kind"] == "Widget"} == {f"{group}/v1"}
        note = (f"Widget.{group}: listing at {group}/v2 failed (the conversion webhook of CustomResourceDefinition "
                f"widgets.{group} failed (service {namespace}/no-such-converter)); listed at {group}/v1 (the storage "
                "version of its CustomResourceDefinition) instead")
        assert f"[WARNING]: {note}" in out, out

        rc, result, out = module_run(cluster, "applyset_verify", {"parent": "set1", "namespace": namespace})
        assert rc == 0, out
        assert result["ok"] is True and result["applysets"][0]["member_count"] == 3

        rc, result, out = module_run(cluster, "applyset_apply", {"parent": "set1", "namespace": namespace,
                                                                 "state": "absent"})
        assert rc == 0, out
        print("uninstall requests:", result["requests"])
        assert sorted(o["name"] for o in result["objects"] if o["action"] == "pruned") == ["a", "w1", "w2"]
        status, body, _ = kube.request("GET", f"/apis/{group}/v1/namespaces/{namespace}/widgets")
        assert status == 200 and body["items"] == [], body
        assert kube.get(f"/api/v1/namespaces/{namespace}/secrets/set1") is None
    finally:
        kube.delete(f"{CRDS}/widgets.{group}")
