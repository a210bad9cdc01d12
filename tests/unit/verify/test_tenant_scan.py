"""applyset_verify and applyset_info with a tenant's credentials: LISTs allowed only in the tenant's
namespaces (a ServiceAccount bound to admin or edit by a RoleBinding), against the StubClient of
test_inventory.py. Members are counted and leaks found in the recorded namespaces; what the
credentials cannot see is reduced coverage: a warning, an error only with require_complete.
Also: info and verify list a recorded kind at another version when the preferred one fails.
"""

from __future__ import annotations

from stubclient import (CONFIGMAP, CRD, DEPLOYMENT, NAMESPACE, SECRET, SERVICE, STANDARD, WIDGET, StubClient,
                            resource)

from applyset.verify import fsck, inventory
from applyset import spec
from applyset.errors import ApiError

KINDS = spec.ANNOTATION_GROUP_KINDS
NAMESPACES = spec.ANNOTATION_ADDITIONAL_NAMESPACES


def codes(report):
    return sorted(p.code for p in report.problems)


def tenant_set(client, members=("a", "b"), namespaces="", kinds="ConfigMap,Deployment.apps"):
    applyset_id = client.parent(SECRET, "shop", "shop", kinds=kinds, namespaces=namespaces)
    for name in members:
        client.member(CONFIGMAP, name, "shop", applyset_id)
    client.member(DEPLOYMENT, "web", "shop", applyset_id)
    return applyset_id


# ----- verify ----------------------------------------------------------------------------------------------


def test_a_tenant_counts_members_and_gets_reduced_coverage_as_a_warning():
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    assert report.member_counts == {report.sets[0].expected_id: 3}
    assert codes(report) == ["reduced_coverage"]
    found = report.problems[0]
    assert found.severity == "warning"
    assert report.ok and not report.complete and report.unlisted == []
    result = report.to_dict()
    assert result["applysets"][0]["ok"] is True and result["applysets"][0]["member_count"] == 3
    coverage = result["reduced_coverage"]
    assert coverage["namespaces"] == ["shop"]
    assert [k["group_kind"] for k in coverage["kinds"]] == sorted(str(r.group_kind) for r in STANDARD
                                                                  if "list" in r.verbs)
    # The warning names the kinds and where namespaced ones were looked for.
    assert report.warnings == [found.message]
    assert found.message.startswith("reduced coverage: the credentials may not list 8 kind(s) across all namespaces "
                                    "(ApplySet.example.com, ConfigMap, CustomResourceDefinition.apiextensions.k8s.io, "
                                    "Deployment.apps, Namespace, Secret, Service, Widget.example.com); namespaced "
                                    "ones were looked for only in shop, cluster-scoped ones not at all")
    # Each namespaced kind once across all namespaces, then once in the recorded namespace.
    namespaced = [r for r in STANDARD if r.namespaced and "list" in r.verbs]
    assert sorted(ns for _gk, ns, _sel, _meta in client.lists if ns) == ["shop"] * len(namespaced)


def test_require_complete_makes_reduced_coverage_an_error():
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    report = fsck.verify(client, parent_spec="shop", namespace="shop", require_complete=True)
    found = report.problems[0]
    assert found.code == "reduced_coverage" and found.severity == "error"
    assert not report.ok and report.remaining_errors == [found]
    assert report.to_dict()["applysets"][0]["ok"] is False
    assert "require_complete_scan: false" in found.fix


def test_a_full_scan_has_no_reduced_coverage():
    client = StubClient()
    tenant_set(client)
    report = fsck.verify(client, parent_spec="shop", namespace="shop", require_complete=True)
    assert report.problems == [] and report.ok and report.complete
    assert report.to_dict()["reduced_coverage"] == {"kinds": [], "namespaces": []}


def test_a_tenant_finds_leaks_and_stale_hints_in_the_recorded_namespaces_and_the_fix_keeps_what_it_cannot_see():
    client = StubClient(tenant_of={"shop", "extra"})
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Deployment.apps", namespaces="extra")
    client.member(CONFIGMAP, "a", "shop", applyset_id)
    client.member(SERVICE, "leaked", "extra", applyset_id)  # a kind the hint does not record
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    assert codes(report) == ["reduced_coverage", "stale_group_kind", "unrecorded_group_kind"]
    stale = next(p for p in report.problems if p.code == "stale_group_kind")
    assert "Deployment.apps" in stale.message
    assert report.fixes[0].after == {KINDS: "ConfigMap,Service", NAMESPACES: "extra"}
    assert report.member_counts[applyset_id] == 2


def test_a_recorded_kind_the_tenant_cannot_list_in_its_namespace_leaves_the_check_incomplete():
    # The edit ClusterRole cannot read RBAC objects: a set that records Roles cannot be checked in full.
    role = resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
    client = StubClient(resources=STANDARD + [role], tenant_of={"shop"}, forbidden={role.group_kind})
    applyset_id = tenant_set(client, kinds="ConfigMap,Deployment.apps,Role.rbac.authorization.k8s.io")
    client.member(role, "reader", "shop", applyset_id)
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    assert codes(report) == ["incomplete_scan", "reduced_coverage"]
    assert [(str(u.group_kind), u.namespace) for u in report.unlisted] == [("Role.rbac.authorization.k8s.io", "shop")]
    incomplete = next(p for p in report.problems if p.code == "incomplete_scan")
    assert incomplete.fix.startswith("give the credentials list on every kind across all namespaces")
    assert not report.ok
    # Never called stale, never dropped.
    assert all(f.after[KINDS].count("Role.rbac.authorization.k8s.io") == 1 for f in report.fixes)


def test_a_recorded_cluster_scoped_kind_the_tenant_cannot_list_leaves_the_check_incomplete():
    client = StubClient(tenant_of={"shop"})
    applyset_id = tenant_set(client, kinds="ConfigMap,Deployment.apps,Namespace")
    client.member(NAMESPACE, "shop", None, applyset_id)
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    assert [str(u.group_kind) for u in report.unlisted] == ["Namespace"]
    assert "Namespace" not in [k["group_kind"] for k in report.to_dict()["reduced_coverage"]["kinds"]]
    assert not report.ok and "stale_group_kind" not in codes(report)


def test_every_set_of_a_namespace_for_a_tenant():
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    report = fsck.verify(client, namespace="shop")
    assert [s.name for s in report.sets] == ["shop"] and list(report.member_counts.values()) == [3]
    assert codes(report) == ["reduced_coverage"] and report.ok
    assert "orphans were not looked for" in " ".join(report.warnings)
    kinds = [k["group_kind"] for k in report.to_dict()["reduced_coverage"]["kinds"]]
    assert "CustomResourceDefinition.apiextensions.k8s.io" in kinds and "Secret" in kinds


def test_the_whole_cluster_asked_for_stays_incomplete_for_a_tenant():
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    report = fsck.verify(client, require_complete=False)
    assert "incomplete_scan" in codes(report) and "reduced_coverage" not in codes(report)
    assert not report.ok and report.sets == []


def test_a_missing_parent_is_looked_for_in_its_namespace():
    client = StubClient(tenant_of={"shop"})
    applyset_id = spec.compute_id("gone", "shop", "Secret", "")
    client.member(CONFIGMAP, "left", "shop", applyset_id)
    report = fsck.verify(client, parent_spec="gone", namespace="shop")
    missing = next(p for p in report.problems if p.code == "parent_missing")
    assert [o["name"] for o in missing.objects] == ["left"]
    assert "reduced_coverage" in codes(report)


# ----- info ------------------------------------------------------------------------------------------------


def test_info_for_a_tenant_lists_its_namespaces_sets_and_counts_members():
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    report = inventory.describe(client, namespace="shop", member_count=True)
    result = report.to_dict()
    assert [(s["parent"]["name"], s["member_count"]) for s in result["applysets"]] == [("shop", 3)]
    assert result["unlisted"] == [] and result["complete"] is False
    assert [k["group_kind"] for k in result["reduced_coverage"]["kinds"]] == [
        "CustomResourceDefinition.apiextensions.k8s.io"]
    assert any("custom resource parents were not looked for" in w for w in report.warnings)


def test_info_without_a_namespace_tells_a_tenant_to_give_one():
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    report = inventory.describe(client, member_count=True)
    assert report.applysets == [] and report.unlisted
    assert any("set namespace to list the sets of one namespace" in w for w in report.warnings)


# ----- info and verify: another version when the preferred one fails -----------------------------------------


WIDGET_V2 = resource("example.com", "v2", "Widget", "widgets")
CONVERSION = ApiError('conversion webhook for example.com/v1, Kind=Widget failed: Post '
                      '"https://convert.infra.svc:443/convert": service "convert" not found', status=500)


def widget_set():
    client = StubClient(resources=[WIDGET_V2] + STANDARD)  # v2 preferred, v1 (WIDGET) served too
    crd = client.add(CRD, "widgets.example.com")
    crd["spec"] = {"versions": [{"name": "v2", "served": True, "storage": False},
                                {"name": "v1", "served": True, "storage": True}]}
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="Widget.example.com")
    client.member(WIDGET, "w1", "shop", applyset_id)
    client.failing[(WIDGET.group_kind, "v2")] = CONVERSION
    return client, applyset_id


def test_info_counts_members_listed_at_the_storage_version():
    client, _ = widget_set()
    report = inventory.describe(client, parent_spec="shop", namespace="shop", members=True)
    entry = report.applysets[0]
    assert entry["member_count"] == 1 and entry["members"][0]["apiVersion"] == "example.com/v1"
    assert report.complete
    assert report.warnings == [
        "Widget.example.com: listing at example.com/v2 failed (the conversion webhook of CustomResourceDefinition "
        "widgets.example.com failed (service infra/convert)); listed at example.com/v1 (the storage version of its "
        "CustomResourceDefinition) instead"]


def test_verify_counts_members_listed_at_the_storage_version():
    client, applyset_id = widget_set()
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    assert report.member_counts[applyset_id] == 1 and report.ok and report.complete
    assert any("listed at example.com/v1" in w for w in report.warnings)


def test_a_kind_no_version_lists_is_incomplete_with_the_webhook_named_not_the_credentials():
    client, _ = widget_set()
    client.failing[(WIDGET.group_kind, "v1")] = CONVERSION
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    incomplete = next(p for p in report.problems if p.code == "incomplete_scan")
    assert "credentials" not in incomplete.fix.split(";")[0]
    assert incomplete.fix.startswith("Widget.example.com: the conversion webhook of CustomResourceDefinition "
                                     "widgets.example.com failed (service infra/convert); make the conversion webhook")
    assert "stale_group_kind" not in codes(report)


def test_a_kind_the_set_does_not_record_and_the_tenant_cannot_list_even_in_its_namespace_only_reduces_coverage():
    # admin and edit cannot list PodTemplates or events.k8s.io Events in their namespace either.
    client = StubClient(tenant_of={"shop"}, forbidden={SERVICE.group_kind})
    tenant_set(client)
    report = fsck.verify(client, parent_spec="shop", namespace="shop")
    assert report.unlisted == [] and report.ok and codes(report) == ["reduced_coverage"]
    assert {"group_kind": "Service", "namespace": "shop", "reason": 'HTTP 403: services is forbidden: cannot list '
            'resource "services"'} in report.to_dict()["reduced_coverage"]["kinds"]
    assert "only in shop (but not Service, which they may not list there either)" in report.problems[0].message


def test_the_messages_docs_troubleshooting_quotes():
    # One literal per fragment of the quotes in docs/troubleshooting.md (test_connection_errors_unit checks).
    client = StubClient(tenant_of={"shop"})
    tenant_set(client)
    message = fsck.verify(client, parent_spec="shop", namespace="shop").problems[0].message
    for fragment in ("reduced coverage: the credentials may not list", "kind(s) across all namespaces (",
                     "); namespaced ones were looked for only in",
                     "cluster-scoped ones not at all, so members that leaked into other namespaces or into those kinds, and orphans, could go unnoticed (see reduced_coverage)"):  # noqa: E501
        assert fragment in message, fragment
