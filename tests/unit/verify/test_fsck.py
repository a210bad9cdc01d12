"""Verification problems and hint repair (fsck.py), against the in-memory StubClient."""

from __future__ import annotations

import json
import time

import pytest
from stubclient import (APPLYSET_CR, CONFIGMAP, CRD, DEPLOYMENT, NAMESPACE, SECRET, SERVICE, STANDARD,
                            TOKEN_REVIEW, WIDGET, StubClient, crd_marking)

from applyset.verify import fsck
from applyset.verify import repair as fsck_repair
from applyset.verify import checks as fsck_checks
from applyset.verify import scan as fsck_scan
from applyset import spec
from applyset.parent import model as parent_model
from applyset.kube.discovery import Discovery
from applyset.spec import GroupKind

KINDS = spec.ANNOTATION_GROUP_KINDS
NAMESPACES = spec.ANNOTATION_ADDITIONAL_NAMESPACES


def codes(problems):
    return sorted(p.code for p in problems)


def run(client, **kwargs):
    return fsck.verify(client, **kwargs)


def problem(report, code):
    found = [p for p in report.problems if p.code == code]
    assert len(found) == 1, (code, [p.to_dict() for p in report.problems])
    return found[0]


# ----- the scan -------------------------------------------------------------------------------------


def test_listable_resources_take_one_preferred_version_per_kind_and_skip_unlistable_ones():
    old_deployment = DEPLOYMENT.__class__(**{**DEPLOYMENT.__dict__, "version": "v1beta1"})
    discovery = Discovery([*STANDARD, old_deployment])
    listed = fsck_scan.listable_resources(discovery)
    assert TOKEN_REVIEW not in listed
    assert [r.version for r in listed if r.kind == "Deployment"] == ["v1"]
    assert len({r.group_kind for r in listed}) == len(listed)


def test_scan_lists_each_kind_once_across_all_namespaces():
    client = StubClient(forbidden={SERVICE.group_kind})
    client.member(CONFIGMAP, "a", "x", "applyset-one-v1")
    client.member(CONFIGMAP, "b", "y", "applyset-two-v1")
    found = fsck_scan.scan(client, client.discovery)
    assert {(gk.kind, ns, selector) for gk, ns, selector, _ in client.lists} == {
        (r.kind, None, spec.LABEL_PART_OF) for r in fsck_scan.listable_resources(client.discovery)}
    assert all(metadata_only for *_rest, metadata_only in client.lists)
    assert sorted(found.by_id()) == ["applyset-one-v1", "applyset-two-v1"]
    assert SERVICE.group_kind not in found.listed and CONFIGMAP.group_kind in found.listed
    assert [str(u.group_kind) for u in found.unlisted] == ["Service"]


def test_scan_for_one_set_selects_its_id():
    client = StubClient()
    fsck_scan.scan(client, client.discovery, "applyset-one-v1")
    assert {selector for _gk, _ns, selector, _ in client.lists} == {f"{spec.LABEL_PART_OF}=applyset-one-v1"}


# ----- problems of the parent -------------------------------------------------------------------------


def test_a_healthy_set_has_no_problem():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Service")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    client.member(SERVICE, "web", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop")
    assert report.problems == [] and report.ok and report.complete and report.fixes == []
    assert report.to_dict()["applysets"][0]["member_count"] == 2


def test_forged_id_is_an_error_that_is_never_repaired():
    client = StubClient()
    victim = client.parent(SECRET, "victim", "shop", kinds="ConfigMap")
    client.parent(SECRET, "forger", "shop", kinds="", live_id=victim)
    client.member(CONFIGMAP, "settings", "shop", victim)
    report = run(client, parent_spec="forger", namespace="shop", fix=True)
    assert codes(report.problems) == ["id_mismatch"]
    mismatch = report.problems[0]
    assert mismatch.severity == "error" and not mismatch.fixable and not mismatch.fixed
    assert victim in mismatch.message and "impersonate" in mismatch.message
    assert mismatch.objects == [{"apiVersion": "v1", "kind": "Secret", "namespace": "shop", "name": "forger"}]
    assert client.applied == [] and not report.ok


def test_missing_id_and_tooling_are_errors():
    client = StubClient()
    client.parent(CONFIGMAP, "bare", "shop", tooling=None, live_id="")
    report = run(client, parent_spec="configmaps/bare", namespace="shop", fix=True)
    assert codes(report.problems) == ["id_missing", "tooling_missing"]
    assert spec.compute_id("bare", "shop", "ConfigMap", "") in problem(report, "id_missing").fix
    assert client.applied == []


def test_missing_tooling_still_checks_the_hints_but_is_not_repaired():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", tooling=None, kinds="ConfigMap")
    client.member(SERVICE, "web", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True)
    assert codes(report.problems) == ["stale_group_kind", "tooling_missing", "unrecorded_group_kind"]
    assert not problem(report, "unrecorded_group_kind").fixable
    assert report.fixes == [] and client.applied == []


def test_missing_parent_names_the_objects_that_still_carry_its_id():
    client = StubClient()
    applyset_id = spec.compute_id("gone", "shop", "Secret", "")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="gone", namespace="shop")
    missing = problem(report, "parent_missing")
    assert missing.severity == "error" and missing.applyset_id == applyset_id
    assert [o["name"] for o in missing.objects] == ["settings"]
    assert "1 object(s) still carry its id" in missing.message


def test_hint_missing_and_legacy_hint():
    client = StubClient()
    client.parent(SECRET, "none", "shop", kinds=None)
    client.parent(SECRET, "old", "shop", tooling="kubectl/v1.28.15", kinds=None,
                  contains_group_resources="configmaps,gone.example.com")
    assert codes(run(client, parent_spec="none", namespace="shop").problems) == ["hint_missing"]
    old = run(client, parent_spec="old", namespace="shop")
    assert codes(old.problems) == ["legacy_hint", "stale_group_kind", "unserved_group_kind"]
    assert "gone.example.com" in problem(old, "unserved_group_kind").message


def test_unserved_group_kind_suggests_the_kind_of_a_resource_name():
    client = StubClient()
    client.parent(SECRET, "shop", "shop", kinds="Gone.example.com,deployments.apps")
    report = run(client, parent_spec="shop", namespace="shop")
    messages = sorted(p.message for p in report.problems if p.code == "unserved_group_kind")
    assert len(messages) == 2
    assert "no CRD or APIService defines it, so it cannot hold objects" in messages[0]
    assert "the entry for it is Deployment.apps" in messages[1]
    assert all(p.fixable and p.severity == "error" for p in report.problems)


@pytest.mark.parametrize("kinds, namespaces, canonical", [
    ("Service,ConfigMap", "", True),
    ("ConfigMap,ConfigMap", "", True),
    ("ConfigMap, Service", "", True),
    ("ConfigMap", "shop", True),  # the parent's own namespace is implied
    ("ConfigMap", "b,a", True),
    ("ConfigMap", ",a", True),
    ("ConfigMap,Service", "a,b", False),
    ("ConfigMap", None, False),  # absent means empty
])
def test_hint_annotations_must_be_sorted_and_minimal(kinds, namespaces, canonical):
    client = StubClient()
    client.parent(SECRET, "shop", "shop", kinds=kinds, namespaces=namespaces)
    info = parent_model.inspect(SECRET, client.objects[0][1], client.discovery)
    problems = fsck_checks.check_hint_annotations(info, client.discovery)
    assert ("hint_not_canonical" in codes(problems)) is canonical


# ----- problems of the members ---------------------------------------------------------------------------


def test_members_outside_the_hints_are_leaks():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    client.member(SERVICE, "web", "shop", applyset_id)
    client.member(CONFIGMAP, "far", "elsewhere", applyset_id)
    client.member(NAMESPACE, "made-by-set", None, applyset_id)  # cluster-scoped: no namespace to record
    report = run(client, parent_spec="shop", namespace="shop")
    assert codes(report.problems) == ["unrecorded_group_kind", "unrecorded_group_kind", "unrecorded_namespace"]
    namespace_problem = problem(report, "unrecorded_namespace")
    assert [o["name"] for o in namespace_problem.objects] == ["far"]
    assert "elsewhere" in namespace_problem.message and namespace_problem.fixable
    [fix] = report.fixes
    assert fix.after == {KINDS: "ConfigMap,Namespace,Service", NAMESPACES: "elsewhere"}
    assert not report.ok


def test_namespaced_members_of_a_cluster_scoped_parent_need_recorded_namespaces():
    client = StubClient()
    crd_marking(client, APPLYSET_CR)
    applyset_id = client.parent(APPLYSET_CR, "platform", kinds="ConfigMap", namespaces="a")
    client.member(CONFIGMAP, "one", "a", applyset_id)
    client.member(CONFIGMAP, "two", "b", applyset_id)
    report = run(client, parent_spec="applysets.example.com/platform")
    assert codes(report.problems) == ["unrecorded_namespace"]
    assert report.fixes[0].after[NAMESPACES] == "a,b"


def test_members_controlled_by_another_object_are_reported_but_not_by_the_parent():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    parent_uid = client.objects[0][1]["metadata"]["uid"]
    client.member(CONFIGMAP, "copied", "shop", applyset_id,
                  ownerReferences=[{"kind": "Redis", "name": "cache", "uid": "u1", "controller": True}])
    client.member(CONFIGMAP, "owned-not-controlled", "shop", applyset_id,
                  ownerReferences=[{"kind": "Redis", "name": "cache", "uid": "u1"}])
    client.member(CONFIGMAP, "by-parent", "shop", applyset_id,
                  ownerReferences=[{"kind": "Secret", "name": "shop", "uid": parent_uid, "controller": True}])
    report = run(client, parent_spec="shop", namespace="shop")
    controlled = problem(report, "foreign_controller")
    assert controlled.severity == "warning" and not controlled.fixable
    assert [o["name"] for o in controlled.objects] == ["copied"]
    assert "controller Redis cache" in controlled.message
    assert report.ok  # warnings only


ENDPOINTS = SERVICE.__class__(group="", version="v1", kind="Endpoints", plural="endpoints", namespaced=True,
                              verbs=SERVICE.verbs)
ENDPOINT_SLICE = SERVICE.__class__(group="discovery.k8s.io", version="v1", kind="EndpointSlice",
                                   plural="endpointslices", namespaced=True, verbs=SERVICE.verbs)


def test_what_controllers_derive_from_members_is_neither_a_leak_nor_recorded():
    # The endpoint controllers copy a Service's labels, part-of included, onto what they make.
    client = StubClient(resources=[*STANDARD, ENDPOINTS, ENDPOINT_SLICE])
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="Service")
    web = client.member(SERVICE, "web", "shop", applyset_id)
    client.member(ENDPOINT_SLICE, "web-x7k2p", "shop", applyset_id, ownerReferences=[
        {"kind": "Service", "name": "web", "uid": web["metadata"]["uid"], "controller": True}])
    client.member(ENDPOINTS, "web", "shop", applyset_id)  # no owner reference, same name
    report = run(client, parent_spec="shop", namespace="shop")
    assert report.problems == [] and report.fixes == []
    # Listed apart, and not counted as members.
    [entry] = report.to_dict()["applysets"]
    assert entry["member_count"] == 1
    assert [(o["kind"], o["name"]) for o in entry["derived"]] == [("Endpoints", "web"), ("EndpointSlice", "web-x7k2p")]


def test_an_endpoints_object_of_no_member_service_is_a_leak():
    client = StubClient(resources=[*STANDARD, ENDPOINTS])
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="Service")
    client.member(SERVICE, "web", "shop", applyset_id)
    client.member(ENDPOINTS, "external-db", "shop", applyset_id)
    assert codes(run(client, parent_spec="shop", namespace="shop").problems) == ["unrecorded_group_kind"]


def test_objects_controlled_from_outside_the_set_are_only_a_warning_and_never_recorded():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    client.member(SERVICE, "redis", "elsewhere", applyset_id, ownerReferences=[
        {"kind": "Redis", "name": "cache", "uid": "u1", "controller": True}])
    report = run(client, parent_spec="shop", namespace="shop")
    assert codes(report.problems) == ["foreign_controller"] and report.fixes == []


def test_stale_hints_are_warnings_and_the_fix_drops_them():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Deployment.apps", namespaces="gone")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop")
    assert codes(report.problems) == ["stale_group_kind", "stale_namespace"]
    assert all(p.severity == "warning" and p.fixable for p in report.problems) and report.ok
    assert report.fixes[0].after == {KINDS: "ConfigMap", NAMESPACES: ""}


def test_what_could_not_be_listed_is_never_called_stale_nor_dropped():
    client = StubClient(forbidden={DEPLOYMENT.group_kind})
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Deployment.apps,Service",
                                namespaces="gone")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop")
    # Refused across all namespaces and in the recorded ones: incomplete, and reduced coverage besides.
    assert codes(report.problems) == ["incomplete_scan", "reduced_coverage", "stale_group_kind"]  # Service only
    assert "Deployment.apps" in problem(report, "incomplete_scan").message
    assert [(str(u.group_kind), u.namespace) for u in report.unlisted] == [("Deployment.apps", "gone"),
                                                                          ("Deployment.apps", "shop")]
    assert report.fixes[0].after == {KINDS: "ConfigMap,Deployment.apps", NAMESPACES: "gone"}
    assert not report.complete and not report.ok


def test_identical_unlisted_entries_are_reported_once():
    client = StubClient(forbidden={CRD.group_kind})
    report = run(client)
    assert [str(u.group_kind) for u in report.unlisted] == ["CustomResourceDefinition.apiextensions.k8s.io"]
    # With a namespace, the refusal only reduces the coverage, and is named once too.
    report = run(client, namespace="shop")
    assert report.unlisted == [] and report.to_dict()["reduced_coverage"]["kinds"] == [
        {"group_kind": "CustomResourceDefinition.apiextensions.k8s.io", "namespace": None,
         "reason": 'HTTP 403: customresourcedefinitions is forbidden: cannot list resource "customresourcedefinitions"'}]


# ----- all sets and orphans ---------------------------------------------------------------------------------


def test_orphans_are_objects_whose_id_has_no_parent_anywhere():
    client = StubClient()
    crd_marking(client, APPLYSET_CR)
    platform = client.parent(APPLYSET_CR, "platform", kinds="ConfigMap", namespaces="shop")
    client.member(CONFIGMAP, "of-platform", "shop", platform)
    client.member(CONFIGMAP, "lost", "shop", "applyset-lost-v1")
    client.member(CONFIGMAP, "lost-elsewhere", "other", "applyset-lost-v1")
    client.member(NAMESPACE, "lost-cluster-wide", None, "applyset-lost-v1")
    in_shop = run(client, namespace="shop")
    orphan = problem(in_shop, "orphan")
    assert [o["name"] for o in orphan.objects] == ["lost"]
    assert orphan.parent is None and orphan.applyset_id == "applyset-lost-v1"
    assert in_shop.sets == []  # the platform's parent is not in the namespace, but it is no orphan
    everywhere = run(client)
    assert [o["name"] for o in problem(everywhere, "orphan").objects] == [  # by kind, namespace, name
        "lost-elsewhere", "lost", "lost-cluster-wide"]


def test_orphans_are_not_claimed_when_parents_could_not_all_be_listed():
    client = StubClient(forbidden={CRD.group_kind})
    client.member(CONFIGMAP, "maybe-lost", "shop", "applyset-unknown-v1")
    report = run(client)
    assert "orphan" not in codes(report.problems)
    assert any("orphans were not looked for" in w for w in report.warnings)


def test_problems_are_sorted_by_set_then_severity_then_code():
    client = StubClient()
    second = client.parent(SECRET, "b", "shop", kinds="Deployment.apps")
    client.parent(SECRET, "a", "shop", kinds="Gone.example.com,Service")
    client.member(CONFIGMAP, "x", "shop", second)
    client.member(CONFIGMAP, "lost", "shop", "applyset-lost-v1")
    report = run(client, namespace="shop")
    assert [(p.parent["name"] if p.parent else None, p.code) for p in report.problems] == [
        ("a", "unserved_group_kind"), ("a", "stale_group_kind"),
        ("b", "unrecorded_group_kind"), ("b", "stale_group_kind"),
        (None, "orphan"),
    ]
    assert report.to_dict() == run(client, namespace="shop").to_dict()


# ----- repair ------------------------------------------------------------------------------------------------


def test_fix_writes_canonical_hints_with_the_sets_own_tooling_and_a_precondition():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="Service,ConfigMap", namespaces="shop,gone")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    client.member(DEPLOYMENT, "web", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True)
    [(res, body, kwargs)] = client.applied
    assert res == SECRET
    assert body["metadata"]["labels"] == {spec.LABEL_ID: applyset_id}
    assert body["metadata"]["annotations"] == {
        spec.ANNOTATION_TOOLING: "applyset.kubernetes/0.1.0",
        KINDS: "ConfigMap,Deployment.apps",
        NAMESPACES: "",
    }
    assert body["metadata"]["resourceVersion"] == "7"
    assert kwargs == {"field_manager": "applyset.kubernetes-applyset", "force": True, "dry_run": False}
    assert report.changed and report.ok
    assert all(p.fixed for p in report.problems)
    assert sorted(p.code for p in report.problems) == [
        "hint_not_canonical", "stale_group_kind", "stale_namespace", "unrecorded_group_kind"]


def test_fix_in_check_mode_is_a_server_side_dry_run():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    client.member(SERVICE, "web", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True, dry_run=True)
    assert client.applied[0][2]["dry_run"] is True
    assert report.fixes[0].applied and report.changed


def test_fix_refuses_another_tools_set_unless_allowed_and_then_writes_as_that_tool():
    client = StubClient()
    applyset_id = client.parent(CONFIGMAP, "kset", "shop", tooling="kubectl/v1.33.0", kinds="ConfigMap")
    client.member(SERVICE, "web", "shop", applyset_id)
    refused = run(client, parent_spec="configmaps/kset", namespace="shop", fix=True)
    assert client.applied == [] and not refused.ok
    assert "managed by kubectl" in refused.fixes[0].refused
    assert problem(refused, "unrecorded_group_kind").fixable
    allowed = run(client, parent_spec="configmaps/kset", namespace="shop", fix=True, allow_foreign=True)
    [(_res, body, kwargs)] = client.applied
    assert body["metadata"]["annotations"][spec.ANNOTATION_TOOLING] == "kubectl/v1.33.0"
    assert kwargs["field_manager"] == "kubectl-applyset"
    assert allowed.ok


def test_fix_of_a_legacy_set_writes_contains_group_kinds():
    client = StubClient()
    client.parent(SECRET, "old", "shop", tooling="kubectl/v1.28.15", kinds=None,
                  contains_group_resources="configmaps")
    applyset_id = spec.compute_id("old", "shop", "Secret", "")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="old", namespace="shop", fix=True, allow_foreign=True)
    assert report.fixes[0].before == {spec.ANNOTATION_GROUP_RESOURCES: "configmaps", NAMESPACES: ""}
    assert report.fixes[0].after == {KINDS: "ConfigMap", NAMESPACES: ""}
    assert problem(report, "legacy_hint").fixed


def test_a_conflicting_write_is_reported_and_nothing_counts_as_fixed():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    client.member(SERVICE, "web", "shop", applyset_id)
    client.conflict = True
    report = run(client, parent_spec="shop", namespace="shop", fix=True)
    [error] = report.fix_errors
    assert "changed during verification" in error.message and error.obj == "parent Secret shop/shop"
    assert not any(p.fixed for p in report.problems) and not report.changed


def test_plan_fix_is_none_when_the_hints_are_right():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap", namespaces=None)
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    info = parent_model.inspect(SECRET, client.objects[0][1], client.discovery)
    found = fsck_scan.scan(client, client.discovery, applyset_id)
    assert fsck_repair.plan_fix(info, found.members, found, client.discovery) is None


def test_fix_body_reuses_the_parent_body_of_the_engine():
    client = StubClient()
    client.parent(WIDGET, "w", "shop", tooling="other.example/tool/v2")
    info = parent_model.inspect(WIDGET, client.objects[0][1], client.discovery)
    fix = fsck_repair.HintFix(info, {GroupKind("", "ConfigMap")}, {"shop", "b"})
    body = fsck_repair.fix_body(fix)
    assert body["apiVersion"] == "example.com/v1" and body["kind"] == "Widget"
    assert body["metadata"]["namespace"] == "shop"
    assert body["metadata"]["annotations"][NAMESPACES] == "b"
    assert fsck_repair.field_manager_for(info) == "other.example/tool-applyset"


@pytest.mark.parametrize("expires_in, refused", [(60, True), (-60, False)])
def test_fix_waits_for_a_running_deploy_but_not_for_an_expired_claim(expires_in, refused):
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    claim = json.dumps({"run": "host/1/abc", "expires": time.time() + expires_in})
    client.objects[0][1]["metadata"]["annotations"][spec.ANNOTATION_CLAIM] = claim
    client.member(SERVICE, "web", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True)
    assert (client.applied == []) is refused
    if refused:
        assert "host/1/abc" in report.fixes[0].refused
        assert any("changing the set right now" in w for w in report.warnings)
    else:
        # The body leaves the expired claim out (server-side apply drops it if our manager applied it).
        assert spec.ANNOTATION_CLAIM not in client.applied[0][1]["metadata"]["annotations"]



# ----- kinds the server does not serve right now (issue 17) ------------------------------------------

def _unserved_widget_crd(client, served=False):
    crd = client.add(CRD, "widgets.example.com")
    crd["spec"] = {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
                   "versions": [{"name": "v1", "served": served}]}


def test_an_unserved_kind_whose_crd_exists_is_reported_and_never_dropped_by_a_fix():
    resources = [r for r in STANDARD if r != WIDGET]  # the CRD's only version is served: false
    client = StubClient(resources=resources)
    _unserved_widget_crd(client)
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Service,Widget.example.com",
                                namespaces="extra")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True)
    unlistable = problem(report, "unlistable_group_kind")
    assert "widgets.example.com exists but serves no version" in unlistable.message
    assert not unlistable.fixable and not unlistable.fixed and not report.ok
    # The fix drops the stale Service but keeps Widget and every recorded namespace.
    assert report.fixes[0].after == {KINDS: "ConfigMap,Widget.example.com", NAMESPACES: "extra"}


def test_an_unserved_kind_without_any_crd_or_apiservice_is_dropped():
    resources = [r for r in STANDARD if r != WIDGET]
    client = StubClient(resources=resources)
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Widget.example.com")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop")
    assert codes(report.problems) == ["unserved_group_kind"]
    assert report.fixes[0].after == {KINDS: "ConfigMap", NAMESPACES: ""}


def test_a_legacy_entry_that_may_hold_objects_blocks_the_repair():
    resources = [r for r in STANDARD if r != WIDGET]
    client = StubClient(resources=resources)
    _unserved_widget_crd(client)
    client.parent(SECRET, "old", "shop", tooling="kubectl/v1.28.15", kinds=None,
                  contains_group_resources="configmaps,widgets.example.com")
    report = run(client, parent_spec="old", namespace="shop", fix=True, allow_foreign=True)
    assert "unlistable_group_kind" in codes(report.problems)
    assert report.fixes == [] and client.applied == []


def test_the_legacy_annotation_beside_contains_group_kinds_is_reported_and_removed_by_a_fix():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap", contains_group_resources="configmaps")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True)
    assert codes(report.problems) == ["legacy_annotation"]
    assert problem(report, "legacy_annotation").fixed
    [(_res, body, _kwargs)] = client.applied
    assert spec.ANNOTATION_GROUP_RESOURCES not in body["metadata"]["annotations"]


def test_kinds_only_the_legacy_annotation_names_are_recorded_and_the_fix_moves_them_into_the_kinds():
    """One reading of the hints (the engine's): both annotations count, so a member of a kind only
    contains-group-resources names is no leak; kubectl 1.29+ would miss it, so it is an error."""
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", tooling="kubectl/v1.33.0", kinds="Service",
                                contains_group_resources="configmaps,services")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    client.member(SERVICE, "web", "shop", applyset_id)
    report = run(client, parent_spec="shop", namespace="shop", fix=True, allow_foreign=True)
    assert codes(report.problems) == ["legacy_annotation"]
    legacy = problem(report, "legacy_annotation")
    assert legacy.severity == "error" and "names ConfigMap that" in legacy.message and legacy.fixed
    [(_res, body, _kwargs)] = client.applied
    annotations = body["metadata"]["annotations"]
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Service"
    assert spec.ANNOTATION_GROUP_RESOURCES not in annotations
    assert annotations[spec.ANNOTATION_TOOLING] == "kubectl/v1.33.0"


# ----- a kind that vanishes during the scan (issue 10 point 5) ---------------------------------------

class VanishingClient(StubClient):
    """WIDGET's LIST answers 404, as when its CRD is deleted between discovery and the LIST."""

    def __init__(self, still_served):
        super().__init__()
        self.still_served = still_served
        self.discoveries = 0

    def discover(self):
        self.discoveries += 1
        if self.discoveries == 1 or self.still_served:
            return self.discovery
        return Discovery([r for r in STANDARD if r != WIDGET])

    def list(self, res, namespace=None, **kwargs):
        if res.group_kind == WIDGET.group_kind:
            from applyset.errors import ApiError
            raise ApiError("the server could not find the requested resource", status=404, reason="NotFound")
        return super().list(res, namespace, **kwargs)


def test_a_kind_deleted_during_the_scan_leaves_the_scan_complete():
    client = VanishingClient(still_served=False)
    found = fsck_scan.scan(client, client.discover())
    assert found.unlisted == [] and WIDGET.group_kind in found.listed
    assert client.discoveries == 2


def test_a_404_of_a_kind_still_served_is_reported_as_unlisted():
    client = VanishingClient(still_served=True)
    found = fsck_scan.scan(client, client.discover())
    assert [u.group_kind for u in found.unlisted] == [WIDGET.group_kind]
