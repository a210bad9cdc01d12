"""``helm.take_over`` through the engine (fakeapi.py): Helm's entries merged into ours, the objects
the manifests dropped pruned, the records retired last; Helm's objects refused otherwise; a record
that cannot be deleted named with the fix, after the objects became members."""

from applyset import spec
from applyset.parent import helm_release
from applyset.run.options import DEFAULT_FIELD_MANAGER, HelmSettings

from fakeapi import ID, actions, cm, load, run

RECORD = "sh.helm.release.v1.shop.v1"
RECORD_PATH = f"/api/v1/namespaces/shop/secrets/{RECORD}"
MANIFEST = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\n" \
    "metadata:\n  name: b\n"
OWNED_BY_HELM = {helm_release.RELEASE_NAME: "shop", helm_release.RELEASE_NAMESPACE: "shop"}


def helm_installed(api, status="deployed"):
    """What helm install (Helm 3) leaves: ConfigMaps a and b, owned by its Update entry, and the record."""
    for name in ("a", "b"):
        api.add({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": name, "only-helm": "x"}, "metadata": {
            "name": name, "namespace": "shop", "annotations": dict(OWNED_BY_HELM),
            "managedFields": [{"manager": "helm", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:data": {"f:k": {}, "f:only-helm": {}}, "f:metadata": {"f:annotations": {
                                   f"f:{key}": {} for key in OWNED_BY_HELM}}}}]}})
    release = {"name": "shop", "namespace": "shop", "version": 1, "info": {"status": status},
               "chart": {"metadata": {"name": "shop", "version": "1.0.0"}}, "manifest": MANIFEST}
    api.add({"apiVersion": "v1", "kind": "Secret", "type": helm_release.RELEASE_TYPE,
             "metadata": {"name": RECORD, "namespace": "shop",
                          "labels": {"owner": "helm", "name": "shop", "status": status, "version": "1"}},
             "data": {"release": helm_release.encode(release)}})


def test_a_release_is_taken_over_its_dropped_object_pruned_and_its_record_retired(api):
    helm_installed(api)
    uid = api.object("v1", "ConfigMap", "a", "shop")["metadata"]["uid"]
    report, error = run(api, "apply", load(cm("a")), helm=HelmSettings(release="shop", take_over=True))
    assert error is None, error
    assert actions(report) == {"ConfigMap shop/a": "configured", "ConfigMap shop/b": "pruned"}
    pruned = next(o for o in report.objects if o.name == "b")
    assert pruned.reason == "taken over from Helm release shop/shop and no longer in the manifests"
    live = api.object("v1", "ConfigMap", "a", "shop")
    assert live["metadata"]["uid"] == uid and live["data"] == {"k": "a"}  # what only Helm set went
    assert [e["manager"] for e in live["metadata"]["managedFields"]] == [DEFAULT_FIELD_MANAGER]
    assert live["metadata"]["labels"][spec.LABEL_PART_OF] == ID
    assert api.object("v1", "Secret", RECORD, "shop") is None
    taken = report.applyset["helm_take_over"]
    assert taken["adopted"] == ["ConfigMap shop/a"] and taken["dropped"] == ["ConfigMap shop/b"] and taken["retired"]
    # The record goes last, after every member write.
    deletes = [r.path for r in api.writes() if r.method == "DELETE"]
    assert deletes[-1].startswith(RECORD_PATH)
    # The plan an approver sees says so: the dropped object adopted and pruned, the release retired.
    plan = report.to_dict()["plan"]
    assert {e["action"] for e in plan if e["object"] == "ConfigMap shop/b"} == {"adopt", "prune"}
    retired = next(e for e in plan if e["object"] == "Helm release shop/shop")
    assert retired == {"object": "Helm release shop/shop", "action": "retire-helm-release", "revision": 1,
                       "status": "deployed"}


def test_without_take_over_helms_objects_are_refused_before_any_write(api):
    helm_installed(api)
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and "ConfigMap shop/a belongs to Helm release shop/shop" in str(error)
    assert "helm.take_over: true" in error.fix and api.writes() == []


def test_a_pending_release_is_refused_before_any_write(api):
    helm_installed(api, status="pending-upgrade")
    report, error = run(api, "apply", load(cm("a")), helm=HelmSettings(release="shop", take_over=True))
    assert error is not None and "Helm release shop/shop is pending-upgrade" in str(error)
    assert api.writes() == []


def test_a_record_that_cannot_be_deleted_is_named_with_the_fix_after_the_objects_became_members(api):
    helm_installed(api)
    api.fail("DELETE", RECORD_PATH, 403, "secrets is forbidden", reason="Forbidden", times=None)
    report, error = run(api, "apply", load(cm("a"), cm("b")), helm=HelmSettings(release="shop", take_over=True))
    assert error is not None and f"its record {RECORD} could not be deleted" in str(error)
    assert "grant this user delete on secrets" in error.fix
    assert api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"][spec.LABEL_PART_OF] == ID
    assert api.object("v1", "Secret", RECORD, "shop") is not None
    assert not report.applyset["helm_take_over"]["retired"]
