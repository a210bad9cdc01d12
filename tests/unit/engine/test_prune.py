"""Prune decisions through the engine (fakeapi.py): what left the set is deleted with its UID as
precondition, what is kept, skipped or never a candidate, the blast-radius guard, and failed or
raced deletes that keep the parent's union."""

from applyset import spec
from applyset.errors import GuardError, InputError

from fakeapi import ID, actions, cm, deploy, deployed, first_index, load, parent_annotations, parent_writes, run


def test_a_member_left_out_is_pruned_with_its_uid_as_precondition(api):
    deployed(api, cm("a"), cm("b"), deploy("web"))
    uid = api.object("apps/v1", "Deployment", "web", "shop")["metadata"]["uid"]
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert actions(report)["Deployment shop/web"] == "pruned"
    (delete,) = [r for r in api.requests if r.method == "DELETE"]
    assert delete.path == "/apis/apps/v1/namespaces/shop/deployments/web"
    assert delete.body["preconditions"] == {"uid": uid}
    assert api.object("apps/v1", "Deployment", "web", "shop") is None
    # The superset was recorded before the prune, the exact set after it.
    claim = next(r for r in parent_writes(api) if r.method == "PATCH")
    assert claim.body["metadata"]["annotations"][spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"
    assert first_index(api, lambda r: r is claim) < first_index(api, lambda r: r is delete)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_prune_off_keeps_what_left_the_set_and_the_hint(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "apply", load(cm("a")), prune=False)
    assert error is None
    assert "Deployment shop/web" not in actions(report)
    assert api.object("apps/v1", "Deployment", "web", "shop") is not None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"


def test_an_object_with_a_keep_annotation_leaves_the_set_but_stays(api):
    deployed(api, cm("a"), cm("b", meta={"annotations": {spec.ANNOTATION_KEEP: "disabled"}}))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert actions(report)["ConfigMap shop/b"] == "kept"
    kept = api.object("v1", "ConfigMap", "b", "shop")
    assert spec.LABEL_PART_OF not in (kept["metadata"].get("labels") or {})
    assert not any(r.method == "DELETE" for r in api.requests)


def test_an_object_kept_by_annotation_that_cannot_be_unlabelled_fails(api):
    deployed(api, cm("a"), cm("b", meta={"annotations": {spec.ANNOTATION_KEEP: "disabled"}}))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/b", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and "could not be pruned" in str(error)
    assert actions(report)["ConfigMap shop/b"] == "failed"
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"  # b's kind is still desired


def test_an_object_another_controller_owns_is_never_pruned(api):
    deployed(api, cm("a"), cm("b"))
    api.update("v1", "ConfigMap", "b", "shop", lambda o: o["metadata"].__setitem__("ownerReferences", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "owner", "uid": "u-owner", "controller": True}]))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert actions(report)["ConfigMap shop/b"] == "skipped"
    assert api.object("v1", "ConfigMap", "b", "shop") is not None
    assert not any(r.method == "DELETE" for r in api.requests)


def test_an_object_of_another_set_or_unlabelled_is_never_a_prune_candidate(api):
    deployed(api, cm("a"), cm("b"))
    api.add(cm("stranger", "shop"))
    api.add(cm("other", "shop", meta={"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}}))
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert set(actions(report)) == {"ConfigMap shop/a", "ConfigMap shop/b"}
    assert not any(r.method == "DELETE" for r in api.requests)


def test_an_object_this_run_applies_is_never_pruned_even_if_listed_as_a_candidate(api):
    """kubectl's visitedUids: the prune is decided again with the UIDs the applies returned. Here
    the Event e1 appears between the run's two LISTs (a retried request of an earlier run created
    it): the LIST of v1 Events missed it, the LIST of events.k8s.io Events found it as a member
    not desired. The run's own apply of e1 then returns the same UID, so it is not deleted."""
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "shop", "namespace": "shop", "labels": {spec.LABEL_ID: ID},
        "annotations": {spec.ANNOTATION_TOOLING: spec.tooling_value(),
                        spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Event.events.k8s.io"}}})
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
             "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "shop"}, "reason": "Deployed"}
    api.before("GET", "/apis/events.k8s.io/v1/namespaces/shop/events", lambda _r: api.add(
        {**event, "metadata": {"name": "e1", "namespace": "shop", "labels": {spec.LABEL_PART_OF: ID}}}))
    report, error = run(api, "apply", load(cm("a"), event), max_prune_percent=100)
    assert error is None
    assert "pruned" not in actions(report).values()
    assert not any(r.method == "DELETE" for r in api.requests)
    assert api.object("v1", "Event", "e1", "shop") is not None

# ----- the blast-radius guard ----------------------------------------------------------------


def test_the_blast_radius_guard_refuses_before_any_write(api):
    deployed(api, cm("a"), cm("b"), cm("c"))
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, GuardError)
    assert "2 of the set's 3 objects" in str(error) and "max_prune_percent" in error.fix
    assert sorted(error.details["would_prune"]) == ["ConfigMap shop/b", "ConfigMap shop/c"]
    assert api.writes() == []
    report, error = run(api, "apply", load(cm("a")), max_prune_percent=100)
    assert error is None and actions(report)["ConfigMap shop/c"] == "pruned"


def test_an_empty_set_is_refused_unless_allowed(api):
    deployed(api, cm("a"))
    report, error = run(api, "apply", [])
    assert isinstance(error, GuardError) and "allow_empty" in error.fix
    assert api.writes() == []
    report, error = run(api, "apply", [], allow_empty=True)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "pruned"}
    assert api.object("v1", "ConfigMap", "a", "shop") is None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == ""


def test_an_empty_set_without_prune_is_an_input_error(api):
    report, error = run(api, "apply", [], prune=False)
    assert isinstance(error, InputError) and "no objects" in str(error)
    assert api.writes() == []


def test_protected_kinds_are_not_pruned_unless_allowed(api):
    api.requests.clear()
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "scratch"}}
    deployed(api, ns, cm("a"), cm("b"), cm("c"))
    report, error = run(api, "apply", load(cm("a"), cm("b"), cm("c")))
    assert isinstance(error, GuardError) and "protected objects: Namespace scratch" in str(error)
    assert api.writes() == []
    report, error = run(api, "apply", load(cm("a"), cm("b"), cm("c")), allow_prune_kinds=frozenset({"Namespace"}))
    assert error is None and actions(report)["Namespace scratch"] == "pruned"

# ----- failed or raced deletes ---------------------------------------------------------------


def test_a_failed_prune_keeps_the_parents_union(api):
    deployed(api, cm("a"), deploy("web"))
    api.fail("DELETE", "/apis/apps/v1/namespaces/shop/deployments/web", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and "could not be pruned" in str(error)
    assert actions(report)["Deployment shop/web"] == "failed"
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"


def test_a_member_gone_or_replaced_meanwhile_is_not_deleted(api):
    deployed(api, cm("a"), cm("b"), cm("c"), cm("d"))
    api.fail("DELETE", "/api/v1/namespaces/shop/configmaps/c", 404, "gone", reason="NotFound")
    api.fail("DELETE", "/api/v1/namespaces/shop/configmaps/d", 409, "uid mismatch", reason="Conflict")
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert actions(report)["ConfigMap shop/c"] == "pruned"
    assert [o.reason for o in report.objects if o.name == "c"] == ["already gone"]
    assert actions(report)["ConfigMap shop/d"] == "skipped"
