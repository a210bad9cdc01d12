"""When Helm's objects are refused, and Helm's field managers (rules/helm_takeover.py); and Helm's
ownership merged into ours (csa.merge_releases, as the take-over uses it)."""

from __future__ import annotations

from dataclasses import dataclass

from applyset.parent import helm_release
from applyset.rules import csa
from applyset.rules import helm_takeover as rules

OURS = "applyset.kubernetes"
HELM_ANNOTATIONS = {"f:metadata": {"f:annotations": {".": {}, "f:meta.helm.sh/release-name": {},
                                                     "f:meta.helm.sh/release-namespace": {}}}}


@dataclass(frozen=True)
class Member:
    key: str
    ref: str


def release(name="shop", namespace="shop", status="deployed"):
    return helm_release.Release(name, namespace, 3, status, {}, "", ())


def owned_by(name, namespace="shop"):
    return {"annotations": {helm_release.RELEASE_NAME: name, helm_release.RELEASE_NAMESPACE: namespace}}


def test_members_whose_live_object_names_a_release_are_grouped_by_it():
    members = [Member("a", "ConfigMap shop/a"), Member("b", "ConfigMap shop/b"), Member("c", "ConfigMap shop/c")]
    live = {"a": owned_by("shop"), "b": {"annotations": {}}, "c": owned_by("shop")}
    assert rules.owners(members, live) == {("shop", "shop"): ["ConfigMap shop/a", "ConfigMap shop/c"]}


def test_helm_objects_are_refused_without_take_over_naming_the_release_and_the_fix():
    owned = {("shop", "shop"): ["ConfigMap shop/a"]}
    refusal = rules.refuse(owned, {("shop", "shop"): release()}, rules.Wanted(False, None, None))
    assert refusal.message.startswith("ConfigMap shop/a belongs to Helm release shop/shop;")
    assert "helm.take_over: true with helm.release_name: shop" in refusal.fix


def test_a_release_of_another_name_is_refused_and_one_helm_forgot_is_not():
    owned = {("web", "shop"): ["ConfigMap shop/a", "ConfigMap shop/b"]}
    wanted = rules.Wanted(True, "shop", "shop")
    refusal = rules.refuse(owned, {("web", "shop"): release("web")}, wanted)
    assert "ConfigMap shop/a and 1 more object belong to Helm release shop/web (this run takes over release " \
        "shop/shop)" in refusal.message
    # Helm keeps no record of it (uninstalled with a keep policy, or taken over): nobody owns it.
    assert rules.refuse(owned, {("web", "shop"): None}, wanted) is None


def test_the_release_taken_over_passes_unless_helm_is_in_the_middle_of_it():
    owned = {("shop", "shop"): ["ConfigMap shop/a"]}
    wanted = rules.Wanted(True, "shop", "shop")
    assert rules.refuse(owned, {("shop", "shop"): release()}, wanted) is None
    for status in sorted(helm_release.PENDING):
        refusal = rules.refuse(owned, {("shop", "shop"): release(status=status)}, wanted)
        assert f"Helm release shop/shop is {status} (revision 3)" in refusal.message
        assert rules.pending_refusal(release(status=status)).message == refusal.message
    assert rules.pending_refusal(release()) is None


def test_helms_field_managers_are_those_that_own_its_release_annotation():
    fields = [
        {"manager": "helm", "operation": "Update", "fieldsV1": HELM_ANNOTATIONS},
        {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:data": {"f:x": {}}}},
        {"manager": "helm", "operation": "Update", "subresource": "status", "fieldsV1": HELM_ANNOTATIONS},
    ]
    assert rules.helm_managers(fields) == {"helm"}
    assert rules.helm_managers(None) == set()


def entry(manager, operation, fields, api_version="v1"):
    return {"manager": manager, "operation": operation, "apiVersion": api_version, "fieldsType": "FieldsV1",
            "fieldsV1": fields}


def test_helm_3_update_and_helm_4_apply_entries_join_ours_whole_and_others_stay():
    helm_fields = {**HELM_ANNOTATIONS, "f:data": {".": {}, "f:greeting": {}}}
    for operation in ("Update", "Apply"):  # Helm 3 writes client-side, Helm 4 applies server-side
        fields = [entry("helm", operation, helm_fields),
                  entry("kubectl-label", "Update", {"f:metadata": {"f:labels": {"f:team": {}}}}),
                  entry("helm", operation, {"f:spec": {}}, api_version="v2")]  # another version: not merged
        migration = csa.merge_releases(fields, OURS, {"helm"}, "v1")
        assert migration.releases == ["helm"]
        managers = [(e["manager"], e["operation"], e["apiVersion"]) for e in migration.managed_fields]
        assert managers == [("kubectl-label", "Update", "v1"), ("helm", operation, "v2"), (OURS, "Apply", "v1")]
        ours = csa.field_paths(migration.managed_fields[-1]["fieldsV1"])
        assert ("f:metadata", "f:annotations", "f:meta.helm.sh/release-name") in ours
        assert ("f:data", "f:greeting") in ours
        assert csa.patch(migration, "42")[1] == {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"}
