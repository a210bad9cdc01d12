"""Listing ApplySets and their members (inventory.py), against an in-memory stand-in for KubeClient.

``StubClient`` is also used by test_fsck.py. It serves objects from memory, with the label
selectors the library sends (``key``, ``key=value``, ``key in (a,b)``) and a per-kind 403,
and records every LIST and apply; there is no HTTP anywhere.
"""

from __future__ import annotations


import pytest

from applyset.verify import inventory
from applyset import spec
from applyset.parent import model as parent_model
from applyset.errors import InputError
from applyset.spec import GroupKind, GroupResource
from applyset.wait.status import Readiness, Status

from stubclient import APPLYSET_CR, CONFIGMAP, CRD, SECRET, SERVICE, StubClient, crd_marking


def test_inspect_reads_a_kubectl_parent_without_judging_it():
    client = StubClient()
    applyset_id = client.parent(CONFIGMAP, "web", "shop", tooling="kubectl/v1.33.0", kinds="Deployment.apps,Service",
                                namespaces="extra")
    info = parent_model.inspect(CONFIGMAP, client.objects[0][1], client.discovery)
    assert info.expected_id == applyset_id and info.id_matches
    assert info.tool == "kubectl" and not info.is_ours
    assert info.group_kinds == {GroupKind("apps", "Deployment"), GroupKind("", "Service")}
    assert info.namespaces == {"shop", "extra"}
    assert info.hint_source == spec.ANNOTATION_GROUP_KINDS
    assert info.to_dict()["parent"] == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "web"}


def test_inspect_keeps_a_forged_id_and_a_missing_tooling():
    client = StubClient()
    client.parent(SECRET, "copy", "shop", tooling=None, live_id="applyset-someone-else-v1")
    info = parent_model.inspect(SECRET, client.objects[0][1], client.discovery)
    assert info.live_id == "applyset-someone-else-v1" and not info.id_matches
    assert info.tooling is None and info.tool is None


def test_inspect_maps_the_legacy_group_resources_through_discovery():
    client = StubClient()
    client.parent(SECRET, "old", "shop", tooling="kubectl/v1.28.15", kinds=None,
                  contains_group_resources="configmaps,deployments.apps,gone.example.com")
    info = parent_model.inspect(SECRET, client.objects[0][1], client.discovery)
    assert info.legacy_hint
    assert info.group_kinds == {GroupKind("", "ConfigMap"), GroupKind("apps", "Deployment")}
    assert info.unmapped_resources == {GroupResource("example.com", "gone")}


def test_inspect_reads_both_hint_annotations_when_both_are_present_a_wider_scope_than_kubectl():
    client = StubClient()
    client.parent(SECRET, "both", "shop", kinds="Service", contains_group_resources="configmaps,services")
    info = parent_model.inspect(SECRET, client.objects[0][1], client.discovery)
    assert info.group_kinds == {GroupKind("", "Service"), GroupKind("", "ConfigMap")}
    assert info.hint_source == spec.ANNOTATION_GROUP_KINDS and not info.legacy_hint and info.legacy_annotation
    assert info.legacy_only_group_kinds == {GroupKind("", "ConfigMap")}
    assert info.to_dict()["group_kinds"] == ["ConfigMap", "Service"]


def test_a_cluster_scoped_parent_has_only_its_additional_namespaces():
    client = StubClient()
    client.parent(APPLYSET_CR, "platform", kinds="ConfigMap", namespaces="a,b")
    info = parent_model.inspect(APPLYSET_CR, client.objects[0][1], client.discovery)
    assert info.namespaces == {"a", "b"} and info.namespace == ""
    assert info.display == "ApplySet.example.com platform"


# ----- finding parents ---------------------------------------------------------------------------


def test_find_sets_looks_at_secrets_configmaps_and_marked_custom_resources():
    client = StubClient()
    crd_marking(client, APPLYSET_CR)
    client.parent(SECRET, "b", "shop")
    client.parent(CONFIGMAP, "a", "shop", tooling="kubectl/v1.32.0")
    client.parent(APPLYSET_CR, "platform")
    client.add(SECRET, "plain", "shop")  # no id label: not a parent
    listing = inventory.find_sets(client, client.discovery)
    assert [(s.group_kind.kind, s.namespace, s.name) for s in listing.sets] == [
        ("ApplySet", "", "platform"), ("ConfigMap", "shop", "a"), ("Secret", "shop", "b")]
    assert listing.unlisted == [] and listing.warnings == []
    selectors = {(gk.kind, selector) for gk, _ns, selector, metadata_only in client.lists}
    assert ("Secret", spec.LABEL_ID) in selectors and ("ConfigMap", spec.LABEL_ID) in selectors
    assert ("CustomResourceDefinition", spec.LABEL_PARENT_TYPE) in selectors
    assert ("ApplySet", None) in selectors  # every custom resource of a parent type is a parent
    assert all(metadata_only for *_rest, metadata_only in client.lists)


def test_find_sets_in_a_namespace_leaves_out_cluster_scoped_parents():
    client = StubClient()
    crd_marking(client, APPLYSET_CR)
    client.parent(APPLYSET_CR, "platform")
    client.parent(SECRET, "here", "shop")
    client.parent(SECRET, "there", "other")
    listing = inventory.find_sets(client, client.discovery, "shop")
    assert [s.name for s in listing.sets] == ["here"]


def test_find_sets_reports_a_forbidden_crd_list_and_goes_on():
    client = StubClient(forbidden={CRD.group_kind})
    client.parent(SECRET, "b", "shop")
    listing = inventory.find_sets(client, client.discovery)
    assert [s.name for s in listing.sets] == ["b"]
    assert [str(u.group_kind) for u in listing.unlisted] == ["CustomResourceDefinition.apiextensions.k8s.io"]
    assert "403" in listing.unlisted[0].reason
    assert "custom resource parents were not looked for" in listing.warnings[0]


def test_find_sets_warns_about_a_marked_crd_that_is_not_served():
    client = StubClient()
    client.add(CRD, "gadgets.example.com", labels={spec.LABEL_PARENT_TYPE: "true"})
    listing = inventory.find_sets(client, client.discovery)
    assert "gadgets.example.com" in listing.warnings[0]


def test_get_set_resolves_the_parent_like_applyset_apply():
    client = StubClient()
    applyset_id = client.parent(CONFIGMAP, "web", "shop")
    info, res, name, namespace = inventory.get_set(client, client.discovery, "configmaps/web", "shop")
    assert info.expected_id == applyset_id and (res, name, namespace) == (CONFIGMAP, "web", "shop")
    missing = inventory.get_set(client, client.discovery, {"kind": "ConfigMap", "name": "nope"}, "shop")
    assert missing[0] is None and missing[2] == "nope"


def test_get_set_refuses_a_kind_that_cannot_be_a_parent():
    client = StubClient()
    with pytest.raises(Exception, match="not permitted as an ApplySet parent"):
        inventory.get_set(client, client.discovery, "deployments.apps/web", "shop")
    with pytest.raises(InputError, match="namespace is required"):
        inventory.get_set(client, client.discovery, "web", None)


# ----- members ------------------------------------------------------------------------------------


def _set(client, res, name, namespace=""):
    for held, obj in client.objects:
        if held == res and obj["metadata"]["name"] == name:
            return parent_model.inspect(res, obj, client.discovery)
    raise AssertionError(name)


def test_scope_of_is_what_a_prune_would_list():
    client = StubClient()
    client.parent(APPLYSET_CR, "platform", kinds="ConfigMap,Namespace,Widget.example.com,Gone.example.com",
                  namespaces="b,a")
    pairs = inventory.scope_of(_set(client, APPLYSET_CR, "platform"), client.discovery)
    assert [(res.kind, ns) for res, ns in pairs] == [
        ("ConfigMap", "a"), ("ConfigMap", "b"), ("Namespace", None), ("Widget", "a"), ("Widget", "b")]


def test_find_members_shares_one_list_per_kind_and_namespace_between_sets():
    client = StubClient()
    first = client.parent(SECRET, "one", "shop", kinds="ConfigMap")
    second = client.parent(SECRET, "two", "shop", kinds="ConfigMap,Service")
    client.member(CONFIGMAP, "b", "shop", first)
    client.member(CONFIGMAP, "a", "shop", first)
    client.member(CONFIGMAP, "c", "shop", second)
    client.member(SERVICE, "web", "shop", second)
    client.member(CONFIGMAP, "elsewhere", "other", first)  # outside the recorded scope
    client.lists.clear()
    sets = [_set(client, SECRET, "one"), _set(client, SECRET, "two")]
    found = inventory.find_members(client, client.discovery, sets)
    assert [m.name for m in found.by_id[first]] == ["a", "b"]
    assert [m.name for m in found.by_id[second]] == ["c", "web"]
    assert [(gk.kind, ns, selector) for gk, ns, selector, _ in client.lists] == [
        ("ConfigMap", "shop", f"{spec.LABEL_PART_OF} in ({','.join(sorted([first, second]))})"),
        ("Service", "shop", f"{spec.LABEL_PART_OF}={second}"),
    ]


def test_find_members_splits_long_id_lists(monkeypatch):
    monkeypatch.setattr(inventory, "IDS_PER_SELECTOR", 2)
    client = StubClient()
    for name in "abcde":
        client.parent(SECRET, name, "shop", kinds="ConfigMap")
    client.lists.clear()
    inventory.find_members(client, client.discovery, [_set(client, SECRET, n) for n in "abcde"])
    assert len(client.lists) == 3


def test_find_members_reports_a_forbidden_list():
    client = StubClient(forbidden={SERVICE.group_kind})
    client.parent(SECRET, "one", "shop", kinds="ConfigMap,Service")
    found = inventory.find_members(client, client.discovery, [_set(client, SECRET, "one")])
    assert [(str(u.group_kind), u.namespace) for u in found.unlisted] == [("Service", "shop")]


def test_full_objects_hide_secret_values():
    client = StubClient()
    applyset_id = client.parent(SECRET, "one", "shop", kinds="Secret")
    client.member(SECRET, "creds", "shop", applyset_id)
    found = inventory.find_members(client, client.discovery, [_set(client, SECRET, "one")], full_objects=True)
    entry = found.by_id[applyset_id][0].to_dict(full_object=True)
    assert entry["object"]["data"] == {"secret": "<hidden>"}
    assert entry["object"]["kind"] == "Secret" and entry["object"]["apiVersion"] == "v1"


# ----- the applyset_info run -----------------------------------------------------------------------


def test_describe_lists_sets_with_member_counts_sorted():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap")
    client.parent(CONFIGMAP, "alpha", "shop")
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    report = inventory.describe(client, member_count=True)
    result = report.to_dict()
    assert [(a["parent"]["name"], a["member_count"]) for a in result["applysets"]] == [("alpha", 0), ("shop", 1)]
    assert "members" not in result["applysets"][0]
    assert result["complete"] is True and result["unlisted"] == []


def test_describe_one_set_with_members_and_readiness():
    client = StubClient()
    applyset_id = client.parent(SECRET, "shop", "shop", kinds="ConfigMap,Service")
    client.member(SERVICE, "web", "shop", applyset_id)
    client.member(CONFIGMAP, "settings", "shop", applyset_id)
    seen = []

    def readiness(obj):
        seen.append(obj["kind"])
        return Readiness(Status.CURRENT, "fine", "built-in")

    report = inventory.describe(client, parent_spec="shop", namespace="shop", members=True, readiness=readiness)
    [entry] = report.to_dict()["applysets"]
    assert entry["member_count"] == 2
    assert entry["members"] == [
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "settings",
         "uid": "uid-ConfigMap-shop-settings", "ready": True, "reason": "fine", "readiness_rule": "built-in"},
        {"apiVersion": "v1", "kind": "Service", "namespace": "shop", "name": "web",
         "uid": "uid-Service-shop-web", "ready": True, "reason": "fine", "readiness_rule": "built-in"},
    ]
    assert seen == ["ConfigMap", "Service"]


def test_describe_a_missing_parent_gives_no_set_and_says_so():
    client = StubClient()
    report = inventory.describe(client, parent_spec="nope", namespace="shop", members=True)
    assert report.applysets == []
    assert report.warnings == ["the ApplySet parent Secret nope in namespace shop does not exist, so applysets is "
                               "empty; check the parent's kind, name and namespace"]


def test_set_info_carries_the_newest_managed_fields_time_and_the_claim():
    client = StubClient()
    client.parent(SECRET, "shop", "shop", kinds="")
    meta = client.objects[-1][1]["metadata"]
    meta["annotations"][spec.ANNOTATION_CLAIM] = '{"run": "host/1/ab", "expires": 12.5}'
    meta["managedFields"] = [
        {"manager": "kubectl-client-side-apply", "time": "2024-01-02T03:04:05Z"},
        {"manager": "applyset.kubernetes-applyset", "time": "2025-06-01T12:00:00Z"},
        {"manager": "no-time"}]
    [entry] = inventory.describe(client).to_dict()["applysets"]
    assert entry["last_written"] == "2025-06-01T12:00:00Z"
    assert entry["claim"] == {"run": "host/1/ab", "expires": 12.5}
    client.parent(SECRET, "plain", "shop")
    assert [e["last_written"] for e in inventory.describe(client).to_dict()["applysets"]] == [None, "2025-06-01T12:00:00Z"]
