"""The engine's safety rules, run through its public API against the in-memory fake (fakeapi.py).

Each test states one rule of DESIGN.md ("Rules that keep it correct") and checks it on what the
run reports and on the requests it sent. tests/integration proves the same against a real API
server; these tests pin the logic down in milliseconds, failures included.
"""

import json

import pytest
from applyset import spec
from applyset.run.options import DEFAULT_FIELD_MANAGER
from applyset.errors import GuardError, InputError, InputErrors, NamespaceMissingError, ParentError

from fakeapi import (ID, PARENT_PATH, FakeApi, actions, cm, deploy, deployed, first_index, is_parent_write, load,
                     make_engine, member_writes, outcome, parent_annotations, parent_writes, run)

@pytest.fixture
def api():
    fake = FakeApi()
    fake.add_namespace("shop")
    return fake


# ----- apply ---------------------------------------------------------------------------------


def test_first_apply_writes_the_parent_before_any_member(api):
    report, error = run(api, "apply", load(cm("a"), deploy("web")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "created", "Deployment shop/web": "created"}
    parent_first = first_index(api, is_parent_write)
    member_first = first_index(api, lambda r: r.is_write and not is_parent_write(r))
    assert parent_first < member_first
    # The claim write (before the members) records the union; the claim is written, then dropped.
    claim = next(r for r in parent_writes(api) if r.method == "PATCH")
    assert spec.ANNOTATION_CLAIM in claim.body["metadata"]["annotations"]
    assert claim.body["metadata"]["annotations"][spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"
    parent = api.object("v1", "ConfigMap", "shop", "shop")
    assert parent["metadata"]["labels"] == {spec.LABEL_ID: ID}
    assert spec.ANNOTATION_CLAIM not in parent["metadata"]["annotations"]
    assert parent["metadata"]["annotations"][spec.ANNOTATION_TOOLING] == spec.tooling_value()
    assert api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"] == {spec.LABEL_PART_OF: ID}
    # One server-side apply per member, nothing else sent to them.
    assert [(r.method, r.path) for r in member_writes(api)] == [
        ("PATCH", "/api/v1/namespaces/shop/configmaps/a"), ("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web")]
    assert report.changed and report.applyset["id"] == ID


def test_reapplying_the_same_set_changes_nothing(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "apply", load(cm("a"), deploy("web")))
    assert error is None
    assert set(actions(report).values()) == {"unchanged"}
    assert not report.changed
    assert not any(r.method == "DELETE" for r in api.requests)


def test_a_changed_member_is_configured(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "apply", load(cm("a"), deploy("web", replicas=3)))
    assert error is None
    assert actions(report)["Deployment shop/web"] == "configured"
    assert api.object("apps/v1", "Deployment", "web", "shop")["spec"]["replicas"] == 3


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


# ----- check mode ----------------------------------------------------------------------------


def test_check_mode_sends_only_dry_runs_and_never_writes_the_parent(api):
    report, error = run(api, "apply", load(cm("a"), deploy("web")), dry_run=True)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "created", "Deployment shop/web": "created"}
    assert api.writes() and all(r.dry_run for r in api.writes())
    assert parent_writes(api) == []
    assert api.object("v1", "ConfigMap", "shop", "shop") is None
    assert api.object("v1", "ConfigMap", "a", "shop") is None
    assert report.parent_changed and report.dry_run
    assert report.applyset["group_kinds"] == ["ConfigMap", "Deployment.apps"]


def test_check_mode_previews_a_prune_without_deleting(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "apply", load(cm("a")), dry_run=True, diff=True)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "Deployment shop/web": "pruned"}
    assert all(r.dry_run for r in api.writes()) and parent_writes(api) == []
    assert api.object("apps/v1", "Deployment", "web", "shop") is not None
    assert [d["after_header"] for d in report.diff] == ["(absent)"]
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"


def test_diff_shows_before_and_after_of_a_change(api):
    deployed(api, cm("a"))
    report, error = run(api, "apply", load(cm("a", k="new")), diff=True)
    assert error is None
    (entry,) = report.diff
    assert entry["before_header"] == entry["after_header"] == "ConfigMap shop/a"
    assert "k: a" in entry["before"] and "k: new" in entry["after"]
    assert "resourceVersion" not in entry["after"]


# ----- uninstall and disband -----------------------------------------------------------------


def test_uninstall_deletes_members_then_the_parent(api):
    deployed(api, cm("a"), deploy("web"))
    api.add(cm("stranger", "shop"))
    report, error = run(api, "uninstall")
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "pruned", "Deployment shop/web": "pruned"}
    deletes = [r.path for r in api.requests if r.method == "DELETE"]
    assert deletes[-1] == PARENT_PATH and len(deletes) == 3
    assert api.names("v1", "ConfigMap") == ["stranger"]
    assert api.objects("apps/v1", "Deployment") == []


def test_an_uninstall_whose_claim_is_refused_for_a_parent_written_meanwhile_starts_over(api):
    """The parent was written between the uninstall's read and its claim (another run's release,
    say): the uninstall reads it again and goes on; nothing was deleted by the first attempt."""
    deployed(api, cm("a"))

    def someone_else_writes(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))

    api.before("PATCH", PARENT_PATH, someone_else_writes)
    report, error = run(api, "uninstall")
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "pruned"}
    assert len(api.sent("PATCH", PARENT_PATH)) == 2  # the refused claim, then the claim
    assert api.object("v1", "ConfigMap", "shop", "shop") is None


def test_uninstall_in_check_mode_deletes_nothing(api):
    deployed(api, cm("a"))
    report, error = run(api, "uninstall", dry_run=True)
    assert error is None and actions(report) == {"ConfigMap shop/a": "pruned"}
    assert all(r.dry_run for r in api.writes())
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None


def test_uninstall_of_a_missing_set_is_a_no_op(api):
    report, error = run(api, "uninstall")
    assert error is None and not report.changed
    assert any("does not exist" in w for w in report.warnings)
    assert api.writes() == []


def test_uninstall_keeps_the_parent_when_a_member_cannot_be_deleted(api):
    deployed(api, cm("a"), cm("b"))
    api.fail("DELETE", "/api/v1/namespaces/shop/configmaps/b", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "uninstall")
    assert error is not None and "parent is kept" in str(error)
    assert actions(report)["ConfigMap shop/b"] == "failed"
    parent = api.object("v1", "ConfigMap", "shop", "shop")
    assert parent is not None and spec.ANNOTATION_CLAIM not in parent["metadata"]["annotations"]


def test_disband_leaves_members_without_the_label_and_deletes_the_parent(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "disband")
    assert error is None
    assert set(actions(report).values()) == {"disbanded"}
    assert not any(r.method == "DELETE" and r.path != PARENT_PATH for r in api.requests)
    assert api.object("v1", "ConfigMap", "shop", "shop") is None
    for obj in api.objects("v1", "ConfigMap") + api.objects("apps/v1", "Deployment"):
        assert spec.LABEL_PART_OF not in (obj["metadata"].get("labels") or {})


def test_disband_that_cannot_unlabel_keeps_the_parent(api):
    deployed(api, cm("a"))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "disband")
    assert error is not None and "parent is kept" in str(error)
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None


def test_disband_of_a_missing_set_is_a_no_op(api):
    report, error = run(api, "disband")
    assert error is None and any("nothing to disband" in w for w in report.warnings)
    assert api.writes() == []


# ----- the parent: id, tooling, takeover -----------------------------------------------------


def existing_parent(api, labels=None, annotations=None):
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "shop", "namespace": "shop", "labels": labels if labels is not None else {spec.LABEL_ID: ID},
        "annotations": annotations if annotations is not None else {
            spec.ANNOTATION_TOOLING: spec.tooling_value(), spec.ANNOTATION_GROUP_KINDS: "ConfigMap"}}})


def test_a_parent_with_a_wrong_id_is_refused_before_any_write(api):
    existing_parent(api, labels={spec.LABEL_ID: "applyset-forged-v1"})
    report, error = run(api, "apply", load(cm("a")), takeover=True)
    assert isinstance(error, ParentError) and "incorrect value for label" in str(error)
    assert "impersonation" in error.fix
    assert api.writes() == []


def test_a_parent_of_another_tool_is_refused_unless_taken_over(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: "kubectl/v1.30.0",
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap"})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and 'managed by tooling "kubectl"' in str(error)
    assert "takeover" in error.fix and api.writes() == []
    report, error = run(api, "apply", load(cm("a")), takeover=True)
    assert error is None
    assert parent_annotations(api)[spec.ANNOTATION_TOOLING] == spec.tooling_value()
    assert report.applyset["tooling"] == spec.tooling_value()


def test_a_parent_without_tooling_or_id_is_refused(api):
    existing_parent(api, annotations={spec.ANNOTATION_GROUP_KINDS: "ConfigMap"})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "missing required annotation" in str(error)
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"].update(
        labels={}, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value()}))
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "does not have required label" in str(error)
    assert api.writes() == []


def test_a_parent_without_the_group_kinds_hint_is_refused_unless_taken_over(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value()})
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "contains-group-kinds" in str(error)
    assert api.writes() == []
    report, error = run(api, "apply", load(cm("a")), takeover=True)
    assert error is None


def test_a_parent_that_is_also_a_member_is_refused(api):
    report, error = run(api, "apply", load(cm("shop")))
    assert isinstance(error, InputError) and "cannot be a member" in str(error)
    assert api.writes() == []


def test_a_parent_written_by_someone_else_before_the_claim_starts_the_run_over(api):
    """Someone wrote the parent between the run's read and its claim: the claim's write is refused
    (a stale resourceVersion) before any member is written, so the run lost a race, not met a
    conflict. It reads the parent again and goes on from what is there now (issue 36 item 1)."""
    deployed(api, cm("a"))

    def someone_else_writes(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))

    api.before("PATCH", PARENT_PATH, someone_else_writes)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "created"}
    # read by each attempt, and once after the 409 (to tell a lost answer to our own write from it)
    assert len(api.sent("GET", PARENT_PATH)) == 3
    claims = [i for i, r in enumerate(api.requests) if is_parent_write(r)]
    assert first_index(api, lambda r: r.is_write and not is_parent_write(r)) > claims[1]  # after the second claim
    assert parent_annotations(api)["x"] == "y" and spec.ANNOTATION_CLAIM not in parent_annotations(api)


def test_a_parent_written_under_the_run_at_every_claim_stops_it_after_a_bounded_number_of_tries(api):
    """A parent written before each of the run's claims (something that takes no claim): the run
    starts over ``RACES_BEFORE_GIVING_UP`` times at most, then fails with the conflict, no member written."""
    from applyset.steps.claim import RACES_BEFORE_GIVING_UP

    deployed(api, cm("a"))

    def someone_else_writes(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(x="y"))

    api.before("PATCH", PARENT_PATH, someone_else_writes, times=None)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert isinstance(error, ParentError) and "changed by someone else" in str(error)
    assert member_writes(api) == []
    assert len(api.sent("PATCH", PARENT_PATH)) == RACES_BEFORE_GIVING_UP


def test_legacy_group_resources_hint_is_read_and_dropped(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_RESOURCES: "configmaps,deployments.apps"})
    api.add(cm("b", "shop", meta={"labels": {spec.LABEL_PART_OF: ID}}))
    api.add({**deploy("old"), "metadata": {"name": "old", "namespace": "shop", "labels": {spec.LABEL_PART_OF: ID}}})
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    assert actions(report)["Deployment shop/old"] == "pruned"
    annotations = parent_annotations(api)
    assert spec.ANNOTATION_GROUP_RESOURCES not in annotations
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_recorded_kind_no_one_serves_any_more_leaves_the_hint(api):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Widget.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("no CRD or APIService defines any more" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_recorded_kind_whose_crd_still_exists_stays_in_the_hint(api):
    api.add(crd("widgets", "Widget", served=False))
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Widget.example.com"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("does not serve right now" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Widget.example.com"
    report, error = run(api, "uninstall")
    assert error is not None and "cannot be listed" in str(error)
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None


# ----- apply order: phases ---------------------------------------------------------------------


def svc(name):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}


def event(name):
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name}, "reason": "Test"}


def applied_batches(monkeypatch, eng):
    """Record each client.map call of the member applies as the list of refs it was given."""
    batches, real_map = [], eng.client.map

    def recording_map(func, items):
        items = list(items)
        if items and hasattr(items[0], "ref"):
            batches.append([m.ref for m in items])
        return real_map(func, items)

    monkeypatch.setattr(eng.client, "map", recording_map)
    return batches


def test_members_are_applied_in_phases_with_barriers_only_where_needed(api, monkeypatch):
    eng = make_engine(api, parallelism=4)
    batches = applied_batches(monkeypatch, eng)
    manifests = load(event("e1"), deploy("web"), svc("front"), cm("a"),
                     {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "more"}},
                     crd("widgets", "Widget"), cm("b"))
    report, error = outcome(eng, "apply", manifests)
    assert error is None
    assert batches == [["CustomResourceDefinition widgets.example.com"], ["Namespace more"],
                       ["ConfigMap shop/a", "ConfigMap shop/b", "Service shop/front"],
                       ["Deployment shop/web", "Event shop/e1"]]
    # The report keeps rank order, then input order, whatever the parallelism.
    assert [o.ref for o in report.objects] == [
        "CustomResourceDefinition widgets.example.com", "Namespace more", "ConfigMap shop/a", "ConfigMap shop/b",
        "Service shop/front", "Deployment shop/web", "Event shop/e1"]


def test_a_failed_configuration_member_stops_the_workloads_but_not_its_own_phase(api):
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 422, "a is invalid", reason="Invalid", times=None)
    report, error = run(api, "apply", load(deploy("web"), event("e1"), cm("a"), svc("front")))
    assert error is not None and "ConfigMap shop/a: a is invalid" in str(error)
    assert actions(report) == {"ConfigMap shop/a": "failed", "Service shop/front": "created",
                               "Deployment shop/web": "skipped", "Event shop/e1": "skipped"}
    assert [o.ref for o in report.objects][2:] == ["Deployment shop/web", "Event shop/e1"]  # plan order
    assert all(o.reason.startswith("not tried: an earlier member failed") for o in report.objects[2:])
    assert report.summary()["skipped"] == 2 and sum(report.summary().values()) == 4
    assert not any(r.is_write and ("/deployments/" in r.path or "/events/" in r.path) for r in api.requests)
    assert api.object("apps/v1", "Deployment", "web", "shop") is None


def test_a_failed_workload_does_not_stop_what_goes_with_it(api):
    # An HPA, PDB, Ingress or custom resource names its target and does not need it to exist.
    api.fail("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web", 422, "web is invalid", reason="Invalid",
             times=None)
    report, error = run(api, "apply", load(event("e1"), deploy("web"), cm("a")))
    assert error is not None and "nothing was pruned" in str(error)
    assert actions(report) == {"ConfigMap shop/a": "created", "Deployment shop/web": "failed",
                               "Event shop/e1": "created"}


# ----- custom resource parents and CRDs ------------------------------------------------------


def crd(plural, kind, group="example.com", scope="Namespaced", served=True, labels=None):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", **({"labels": labels} if labels else {})},
            "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind},
                     "versions": [{"name": "v1", "served": served, "storage": True}]}}


def test_a_crd_and_its_custom_resources_in_one_run(api):
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget, cm("a")))
    assert error is None
    assert actions(report) == {"CustomResourceDefinition widgets.example.com": "created",
                               "ConfigMap shop/a": "created", "Widget shop/w1": "created"}
    crd_write = first_index(api, lambda r: r.is_write and "customresourcedefinitions" in r.path)
    widget_write = first_index(api, lambda r: r.is_write and "/widgets/" in r.path)
    assert crd_write < widget_write
    # The CRD is read back (its Established wait) before its first custom resource is sent.
    crd_read = first_index(api, lambda r: r.method == "GET"
                           and r.path.endswith("/customresourcedefinitions/widgets.example.com"))
    assert crd_write < crd_read < widget_write
    assert api.object("example.com/v1", "Widget", "w1", "shop") is not None


def test_check_mode_with_a_crd_of_the_set_does_not_dry_run_its_resources(api):
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget), dry_run=True)
    assert error is None and actions(report)["Widget shop/w1"] == "created"
    assert not any("/widgets/" in r.path for r in api.requests)


def test_a_crd_that_never_gets_established_stops_before_its_resources(api):
    api.establish_crds = False
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget), crd_timeout=0)
    assert error is not None and "not Established" in str(error)
    assert not any(r.is_write and "/widgets/" in r.path for r in api.requests)


def custom_parent_kind(api, labelled=True):
    from fakeapi import DEFAULT_KINDS, Kind
    api.kinds = list(DEFAULT_KINDS) + [Kind("example.com", "v1", "ApplySet", "applysets", False)]
    api.add(crd("applysets", "ApplySet", scope="Cluster",
                labels={spec.LABEL_PARENT_TYPE: "true"} if labelled else None))


def test_a_custom_resource_parent_is_created_from_its_definition(api):
    custom_parent_kind(api)
    definition = {"apiVersion": "example.com/v1", "kind": "ApplySet", "metadata": {"name": "shop"}, "spec": {}}
    report, error = outcome(make_engine(api, parent=definition, namespace="shop"), "apply", load(cm("a")))
    assert error is None
    live = api.object("example.com/v1", "ApplySet", "shop")
    assert live["metadata"]["labels"][spec.LABEL_ID] == spec.compute_id("shop", "", "ApplySet", "example.com")
    assert live["metadata"]["annotations"][spec.ANNOTATION_ADDITIONAL_NAMESPACES] == "shop"


def test_a_custom_resource_parent_needs_its_definition_and_a_labelled_crd(api):
    custom_parent_kind(api)
    report, error = outcome(make_engine(api, parent="applysets.example.com/shop", namespace="shop"), "apply",
                            load(cm("a")))
    assert isinstance(error, ParentError) and "cannot be created automatically" in str(error)
    custom_parent_kind(api, labelled=False)
    report, error = outcome(make_engine(api, parent="applysets.example.com/shop", namespace="shop"), "apply",
                            load(cm("a")))
    assert isinstance(error, ParentError) and "not permitted as an ApplySet parent" in str(error)
    assert "kubectl label crd applysets.example.com" in error.fix
    assert api.writes() == []


@pytest.mark.parametrize("parent, expected", [
    ("nosuchthings/shop", 'the server has no resource "nosuchthings"'),
    ({"kind": "Gadget", "name": "x"}, "does not serve the parent kind Gadget"),
    ({"kind": "Secret"}, "the parent has no name"),
    (42, "parent must be a string or a dict"),
    ("deployments.apps/shop", "not permitted as an ApplySet parent"),
])
def test_a_bad_parent_reference_is_an_input_error(api, parent, expected):
    report, error = outcome(make_engine(api, parent=parent), "apply", load(cm("a")))
    assert error is not None and expected in str(error)
    assert api.writes() == []


def test_a_namespaced_parent_needs_a_namespace_and_a_cluster_one_none(api):
    report, error = outcome(make_engine(api, parent="configmaps/shop", namespace=None), "apply",
                            load(cm("a", "shop")))
    assert isinstance(error, InputError) and "namespace is required" in str(error)
    custom_parent_kind(api)
    report, error = outcome(make_engine(api, parent={"apiVersion": "example.com/v1", "kind": "ApplySet",
                                                     "name": "x", "namespace": "shop"}), "apply", load(cm("a")))
    assert isinstance(error, InputError) and "cluster-scoped" in str(error)


# ----- the claim: one run at a time -----------------------------------------------------------


def claim_of(run_id, expires):
    return json.dumps({"run": run_id, "expires": expires})


def claimed_parent(api, expires):
    existing_parent(api, annotations={spec.ANNOTATION_TOOLING: spec.tooling_value(),
                                      spec.ANNOTATION_GROUP_KINDS: "ConfigMap",
                                      spec.ANNOTATION_CLAIM: claim_of("other-host/1/abcd", expires)})


def test_another_runs_unexpired_claim_refuses_the_run_after_the_wait(api):
    claimed_parent(api, expires=4102444800)  # 2100
    report, error = run(api, "apply", load(cm("a")), claim_wait=0)
    assert error is not None and "another run (other-host/1/abcd)" in str(error)
    assert api.writes() == []


def test_an_expired_claim_is_taken_over(api):
    claimed_parent(api, expires=1000)  # 1970
    report, error = run(api, "apply", load(cm("a")), claim_wait=0)
    assert error is None
    assert spec.ANNOTATION_CLAIM not in parent_annotations(api)


def test_the_run_waits_until_the_other_claim_is_released(api, monkeypatch):
    from applyset.steps import claim
    claimed_parent(api, expires=4102444800)
    sleeps = []
    monkeypatch.setattr(claim.time, "sleep", sleeps.append)

    def other_run_finishes(_request):
        if len(api.sent("GET", PARENT_PATH)) == 2:
            api.update("v1", "ConfigMap", "shop", "shop",
                       lambda o: o["metadata"]["annotations"].pop(spec.ANNOTATION_CLAIM))

    api.before("GET", PARENT_PATH, other_run_finishes, times=None)
    report, error = run(api, "apply", load(cm("a")), claim_wait=30)
    assert error is None and actions(report) == {"ConfigMap shop/a": "created"}
    assert len(sleeps) == 1


def test_check_mode_previews_despite_another_runs_claim(api):
    claimed_parent(api, expires=4102444800)
    report, error = run(api, "apply", load(cm("a")), dry_run=True, claim_wait=0)
    assert error is None
    assert any("another run (other-host/1/abcd)" in w for w in report.warnings)


# ----- failures: nothing pruned, the parent keeps the union ----------------------------------


def test_a_failed_member_apply_prunes_nothing_and_the_parent_keeps_the_union(api):
    deployed(api, cm("a"), cm("b"), deploy("web"))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/b", 422, "b is invalid", reason="Invalid", times=None)
    report, error = run(api, "apply", load(cm("a"), cm("b", k="changed")))
    assert error is not None and "nothing was pruned" in str(error)
    assert "ConfigMap shop/b: b is invalid" in str(error)
    assert actions(report)["ConfigMap shop/b"] == "failed"
    assert not any(r.method == "DELETE" for r in api.requests)
    annotations = parent_annotations(api)
    assert annotations[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps"
    assert spec.ANNOTATION_CLAIM not in annotations
    assert report.summary()["failed"] == 1


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


def test_a_list_that_fails_stops_the_run_before_any_write(api):
    deployed(api, cm("a"), deploy("web"))
    api.fail("GET", "/apis/apps/v1/namespaces/shop/deployments", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and "listing Deployment.apps objects in namespace shop failed" in str(error)
    assert api.writes() == []


def test_a_parent_write_refused_by_rbac_names_the_parent(api):
    api.fail("POST", "/api/v1/namespaces/shop/configmaps", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, ParentError) and "failed to update ApplySet" in str(error)
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop/configmaps"]


def test_a_conflict_with_another_manager_is_reported_per_object(api):
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 409, "Apply failed with 1 conflict",
             reason="Conflict", causes=[{"reason": "FieldManagerConflict", "message": 'conflict with "kubectl"',
                                         "field": ".data.k"}])
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "force_conflicts" in result.reason and ".data.k" in result.reason


# ----- overlapping sets and adoption ---------------------------------------------------------


def test_an_object_of_another_set_is_refused_unless_adopted(api):
    api.add(cm("a", "shop", meta={"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}}))
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and "already belong to another ApplySet" in str(error)
    assert "adopt: true" in error.fix and api.writes() == []
    report, error = run(api, "apply", load(cm("a")), adopt=True)
    assert error is None
    assert api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"][spec.LABEL_PART_OF] == ID


def test_adopt_takes_only_the_part_of_label_on_a_conflict(api):
    api.add(cm("a", "shop", meta={"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}}))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 409, "Apply failed with 1 conflict",
             reason="Conflict", causes=[{"reason": "FieldManagerConflict", "message": "conflict",
                                         "field": f".metadata.labels.{spec.LABEL_PART_OF}"}])
    report, error = run(api, "apply", load(cm("a")), adopt=True)
    assert error is None
    merge = [r for r in api.writes() if r.content_type == "application/merge-patch+json"]
    assert [r.body["metadata"]["labels"] for r in merge] == [{spec.LABEL_PART_OF: ID}]
    assert merge[0].body["metadata"]["resourceVersion"]


# ----- namespaces ------------------------------------------------------------------------------


def test_a_missing_namespace_is_found_before_any_write(api):
    report, error = run(api, "apply", load(cm("a", "nowhere"), cm("b")))
    assert isinstance(error, NamespaceMissingError)
    assert 'namespaces "nowhere" not found' in str(error) and "ConfigMap nowhere/a" in str(error)
    assert api.writes() == []


def test_create_namespace_makes_the_parents_namespace_outside_the_set():
    api = FakeApi()
    report, error = run(api, "apply", load(cm("a")), create_namespace=True)
    assert error is None
    assert actions(report) == {"Namespace shop": "created", "ConfigMap shop/a": "created"}
    assert spec.LABEL_PART_OF not in (api.object("v1", "Namespace", "shop")["metadata"].get("labels") or {})
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_create_namespace_in_check_mode_creates_nothing():
    api = FakeApi()
    report, error = run(api, "apply", load(cm("a")), create_namespace=True, dry_run=True)
    assert error is None
    assert actions(report) == {"Namespace shop": "created", "ConfigMap shop/a": "created"}
    assert api.objects("v1", "Namespace") == []


def test_a_namespace_of_the_set_is_created_before_the_parent_in_it():
    api = FakeApi()
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    report, error = run(api, "apply", load(ns, cm("a")))
    assert error is None
    assert actions(report) == {"Namespace shop": "created", "ConfigMap shop/a": "created"}
    assert [r.path for r in api.writes()][0] == "/api/v1/namespaces/shop"
    assert api.object("v1", "Namespace", "shop")["metadata"]["labels"] == {spec.LABEL_PART_OF: ID}


def test_a_namespace_being_deleted_is_refused(api):
    api.add({"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "old", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    report, error = run(api, "apply", load(cm("a", "old")))
    assert isinstance(error, NamespaceMissingError) and "namespace old is being deleted" in str(error)
    assert api.writes() == []


# ----- immutable changes -----------------------------------------------------------------------


IMMUTABLE_OBJECTS = {"/apis/batch/v1/namespaces/shop/jobs/mig": ("batch/v1", "Job", "mig"),
                     "/api/v1/namespaces/shop/persistentvolumeclaims/data": ("v1", "PersistentVolumeClaim", "data")}


def immutable_refusal(api, path):
    """As the real server does: every real apply that changes the field of the existing object is
    refused (the run's first attempt without the claim, and its normal path after it)."""
    api_version, kind, name = IMMUTABLE_OBJECTS[path]
    api.fail("PATCH", path, 422, "Job.batch \"mig\" is invalid: spec.template: field is immutable",
             reason="Invalid", causes=[{"reason": "FieldValueInvalid", "field": "spec.template",
                                        "message": "Invalid value: {}: field is immutable"}],
             times=None,
             when=lambda r: (not r.dry_run and r.query.get("fieldManager") == DEFAULT_FIELD_MANAGER
                             and api.object(api_version, kind, name, "shop") is not None))


def job(image):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "mig"},
            "spec": {"template": {"spec": {"containers": [{"name": "m", "image": image}]}}}}


def test_an_immutable_change_names_the_field_and_the_way_out(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    report, error = run(api, "apply", load(job("busybox:2")))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "spec.template: field is immutable" in result.reason
    assert "recreate_on_immutable" in result.reason
    assert not any(r.method == "DELETE" for r in api.requests)


def test_an_immutable_change_is_recreated_when_asked(api):
    deployed(api, job("busybox:1"))
    old_uid = api.object("batch/v1", "Job", "mig", "shop")["metadata"]["uid"]
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    assert error is None
    (result,) = report.objects
    assert result.action == "replaced"
    (delete,) = [r for r in api.requests if r.method == "DELETE"]
    assert delete.body["preconditions"] == {"uid": old_uid}
    live = api.object("batch/v1", "Job", "mig", "shop")
    assert live["metadata"]["uid"] != old_uid
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:2"


def test_a_recreate_whose_replacement_would_be_refused_deletes_nothing(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("POST", "/apis/batch/v1/namespaces/shop/jobs", 422, "invalid replacement", reason="Invalid")
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "was not deleted" in result.reason
    assert not any(r.method == "DELETE" for r in api.requests)


def test_a_recreate_in_check_mode_deletes_nothing(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("PATCH", "/apis/batch/v1/namespaces/shop/jobs/mig", 422, "immutable", reason="Invalid",
             causes=[{"reason": "FieldValueInvalid", "field": "spec.template", "message": "field is immutable"}],
             when=lambda r: r.dry_run)
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}),
                        dry_run=True)
    assert error is None
    assert [o.action for o in report.objects] == ["replaced"]
    assert not any(r.method == "DELETE" for r in api.requests)


def test_recreate_of_a_protected_kind_is_refused_before_any_write(api):
    report, error = run(api, "apply", load({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                            "metadata": {"name": "data"}, "spec": {}}),
                        recreate_on_immutable=frozenset({"PersistentVolumeClaim"}))
    assert isinstance(error, (InputError, InputErrors))
    assert api.writes() == []


# ----- options and waiting ---------------------------------------------------------------------


def test_bad_options_are_refused_before_any_request(api):
    with pytest.raises(InputError, match="max_prune_percent must be between 0 and 100"):
        make_engine(api, max_prune_percent=101, claim_wait=-1)
    assert api.requests == []


def test_wait_returns_once_applied_objects_are_ready_and_pruned_ones_gone(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a")), wait=True, wait_timeout=5)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "pruned"}


def test_uninstall_with_wait_returns_once_members_are_gone(api):
    deployed(api, cm("a"))
    report, error = run(api, "uninstall", wait=True, wait_timeout=5)
    assert error is None and actions(report) == {"ConfigMap shop/a": "pruned"}
    assert api.objects("v1", "ConfigMap") == []


# ----- the report ------------------------------------------------------------------------------


def test_the_report_counts_and_lists_what_the_run_did(api):
    deployed(api, cm("a"), cm("b"), cm("c"))
    report, error = run(api, "apply", load(cm("a"), cm("b", k="changed")))
    assert error is None
    data = report.to_dict()
    assert data["changed"] is True and data["applyset"]["id"] == ID
    assert data["summary"] == {"created": 0, "configured": 1, "unchanged": 1, "pruned": 1, "kept": 0,
                               "skipped": 0, "failed": 0}
    pruned = next(o for o in data["objects"] if o["action"] == "pruned")
    assert pruned == {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "c",
                      "action": "pruned", "uid": pruned["uid"]} and pruned["uid"]


def test_a_failed_object_carries_its_error_in_the_report(api):
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 422, "a is invalid", reason="Invalid", times=None)
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and report.summary()["failed"] == 1
    (entry,) = report.to_dict()["objects"]
    assert entry["action"] == "failed" and entry["reason"] == "a is invalid"
    assert entry["error"]["status"] == 422


# ----- fields of client-side tools -------------------------------------------------------------

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def kubectl_applied(api, name, data):
    """An object as `kubectl apply` (client-side) left it: its fields owned by an Update entry."""
    api.add({"apiVersion": "v1", "kind": "ConfigMap", "data": data, "metadata": {
        "name": name, "namespace": "shop", "annotations": {LAST_APPLIED: json.dumps({"data": data})},
        "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
                           "fieldsType": "FieldsV1", "fieldsV1": {
                               "f:data": {f"f:{key}": {} for key in data},
                               "f:metadata": {"f:annotations": {f"f:{LAST_APPLIED}": {}}}}}]}})


def test_fields_of_a_client_side_apply_become_ours_and_what_the_manifest_left_out_goes(api):
    kubectl_applied(api, "a", {"k": "a", "old": "x"})
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("took over all fields of kubectl-client-side-apply" in w for w in report.warnings)
    (json_patch,) = [r for r in api.requests if r.content_type == "application/json-patch+json"]
    assert json_patch.body[1]["path"] == "/metadata/resourceVersion"
    managers = [e["manager"] for e in api.object("v1", "ConfigMap", "a", "shop")["metadata"]["managedFields"]]
    assert managers == [DEFAULT_FIELD_MANAGER]
    # The applies after the take-over own "old" too, and leave it out: it is gone.
    assert api.object("v1", "ConfigMap", "a", "shop")["data"] == {"k": "a"}


def test_check_mode_only_says_which_fields_a_real_run_takes_over(api):
    kubectl_applied(api, "a", {"k": "a"})
    report, error = run(api, "apply", load(cm("a")), dry_run=True)
    assert error is None
    assert any("a real run takes over all fields of kubectl-client-side-apply" in w for w in report.warnings)
    assert not any(r.content_type == "application/json-patch+json" for r in api.requests)


def test_a_take_over_that_fails_is_a_warning_not_a_failure(api):
    kubectl_applied(api, "a", {"k": "a"})
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 403, "forbidden", reason="Forbidden",
             when=lambda r: r.content_type == "application/json-patch+json")
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and actions(report) == {"ConfigMap shop/a": "configured"}
    assert any("could not take over the fields of client-side tools (forbidden)" in w for w in report.warnings)


def test_a_take_over_meeting_a_change_plans_again(api):
    kubectl_applied(api, "a", {"k": "a"})
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 409, "changed", reason="Conflict",
             when=lambda r: r.content_type == "application/json-patch+json")
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert len([r for r in api.requests if r.content_type == "application/json-patch+json"]) == 2
    assert any("took over" in w for w in report.warnings)


# ----- adopting a `kubectl apply --prune -l` set ------------------------------------------------


def legacy_member(name, applied=True, **labels):
    meta = {"name": name, "namespace": "shop", "labels": {"app": "shop", **labels}}
    if applied:
        meta["annotations"] = {LAST_APPLIED: "{}"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": name}}


def test_adopt_legacy_takes_the_old_set_in_and_prunes_what_left_it(api):
    from applyset.rules import legacy
    api.add(legacy_member("a"))
    api.add(legacy_member("old"))
    api.add(legacy_member("by-hand", applied=False))
    api.add(legacy_member("other", **{spec.LABEL_PART_OF: "applyset-other-v1"}))
    options = legacy.Options(selector="app=shop", kinds=("ConfigMap", "Widget.example.com"))
    report, error = run(api, "apply", load(cm("a")), adopt_legacy=options, max_prune_percent=100)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "configured", "ConfigMap shop/old": "pruned"}
    assert "legacy prune set (app=shop)" in next(o.reason for o in report.objects if o.name == "old")
    assert sorted(report.applyset["adopted"]) == ["ConfigMap shop/a", "ConfigMap shop/old"]
    warnings = " ".join(report.warnings)
    assert "not made by kubectl apply" in warnings and "belongs to the ApplySet applyset-other-v1" in warnings
    assert "does not serve Widget.example.com" in warnings
    # The label was written (guarded by the listed resourceVersion) before the old object was deleted.
    label = first_index(api, lambda r: r.content_type == "application/merge-patch+json")
    assert api.requests[label].body["metadata"]["resourceVersion"]
    assert label < first_index(api, lambda r: r.method == "DELETE")
    assert api.names("v1", "ConfigMap") == ["a", "by-hand", "other", "shop"]


def test_adopt_legacy_that_cannot_label_changes_nothing_else(api):
    from applyset.rules import legacy
    api.add(legacy_member("old"))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/old", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")), adopt_legacy=legacy.Options(selector="app=shop"),
                        max_prune_percent=100)
    assert error is not None and "nothing was applied or pruned" in str(error)
    assert api.object("v1", "ConfigMap", "a", "shop") is None
    assert api.object("v1", "ConfigMap", "old", "shop") is not None


# ----- a claim lost during the run --------------------------------------------------------------


def test_a_run_that_loses_its_claim_prunes_nothing(api):
    """The heartbeat renews the claim every ttl/3 seconds; when another run has written the parent
    meanwhile, the renewal fails, and the run stops before it prunes anything."""
    import threading
    deployed(api, cm("a"), cm("b"))
    renewal_failed = threading.Event()

    def another_run_takes_the_set(_request):
        api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
            {spec.ANNOTATION_CLAIM: json.dumps({"run": "other", "expires": 4102444800})}))
        # Hold this apply until the heartbeat has met the other run's write (its re-read of the
        # parent after the 409); bounded, and the client has a second connection for it.
        api.before("GET", PARENT_PATH, lambda _r: renewal_failed.set())
        assert renewal_failed.wait(timeout=20), "the heartbeat never renewed the claim"

    api.before("PATCH", "/api/v1/namespaces/shop/configmaps/a", another_run_takes_the_set)
    report, error = run(api, "apply", load(cm("a", k="changed")), claim_ttl=3, parallelism=2)
    assert error is not None and "lost its claim" in str(error)
    assert "another run took the set over" in error.fix
    assert not any(r.method == "DELETE" for r in api.requests)
    assert api.object("v1", "ConfigMap", "b", "shop") is not None


# ----- more failures, each reported on its object ------------------------------------------------


def test_server_warnings_are_reported_with_the_object(api):
    api.warn("PATCH", "/api/v1/namespaces/shop/configmaps/a", "unknown field \"spec.x\"")
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert 'ConfigMap shop/a: unknown field "spec.x"' in report.warnings


def test_a_namespace_gone_after_the_check_is_named_on_the_object(api):
    api.add_namespace("gone")
    api.before("PATCH", "/api/v1/namespaces/gone/configmaps/a",
               lambda _r: api.remove("v1", "Namespace", "gone"))
    report, error = run(api, "apply", load(cm("a", "gone")))
    assert error is not None
    (result,) = report.objects
    assert result.action == "failed" and "namespace gone does not exist" in result.reason
    assert "add a Namespace object for gone" in result.reason


def test_more_than_ten_failures_are_summed_up(api):
    names = [f"m{i:02d}" for i in range(12)]
    for name in names:
        api.fail("PATCH", f"/api/v1/namespaces/shop/configmaps/{name}", 422, "invalid", reason="Invalid")
    report, error = run(api, "apply", load(*[cm(n) for n in names]))
    assert "- ... and 2 more (see objects)" in str(error)
    assert report.summary()["failed"] == 12


def test_an_object_kept_by_annotation_that_cannot_be_unlabelled_fails(api):
    deployed(api, cm("a"), cm("b", meta={"annotations": {spec.ANNOTATION_KEEP: "disabled"}}))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/b", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")))
    assert error is not None and "could not be pruned" in str(error)
    assert actions(report)["ConfigMap shop/b"] == "failed"
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"  # b's kind is still desired


def test_a_namespace_of_the_set_that_cannot_be_created_stops_before_the_parent():
    api = FakeApi()
    api.fail("PATCH", "/api/v1/namespaces/shop", 403, "forbidden", reason="Forbidden")
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    report, error = run(api, "apply", load(ns, cm("a")))
    assert error is not None and "could not create namespace shop for the parent" in str(error)
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop"]


def test_create_namespace_that_fails_stops_the_run():
    api = FakeApi()
    api.fail("PATCH", "/api/v1/namespaces/shop", 403, "forbidden", reason="Forbidden")
    report, error = run(api, "apply", load(cm("a")), create_namespace=True)
    assert error is not None and "could not create namespace shop" in str(error)
    assert "create on namespaces" in error.fix
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop"]


def test_a_missing_parent_namespace_suggests_create_namespace():
    api = FakeApi()
    report, error = run(api, "apply", load(cm("a")))
    assert isinstance(error, NamespaceMissingError)
    assert "the parent configmaps./shop" in str(error) and "create_namespace: true" in error.fix
    assert api.writes() == []


def test_a_crd_whose_names_are_refused_stops_the_run(api):
    api.establish_crds = False

    def names_refused(_request):
        api.update("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", None,
                   lambda o: o.__setitem__("status", {"conditions": [
                       {"type": "NamesAccepted", "status": "False", "reason": "PluralConflict",
                        "message": "plural widgets is already in use"}]}))

    api.before("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", names_refused)
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget))
    assert error is not None and "will not become Established" in str(error)
    assert "names not accepted: PluralConflict: plural widgets is already in use" in str(error)
    assert not any(r.is_write and "/widgets/" in r.path for r in api.requests)


def test_an_immutable_change_of_a_protected_kind_is_never_recreated(api):
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
           "spec": {"storageClassName": "a"}}
    deployed(api, pvc)
    immutable_refusal(api, "/api/v1/namespaces/shop/persistentvolumeclaims/data")
    report, error = run(api, "apply", load({**pvc, "spec": {"storageClassName": "b"}}))
    (result,) = report.objects
    assert result.action == "failed" and "protected kind" in result.reason
    assert not any(r.method == "DELETE" for r in api.requests)


@pytest.mark.parametrize("status, expected", [
    (409, "replaced by someone else meanwhile"), (403, "deleting it to recreate it failed")])
def test_a_recreate_whose_delete_fails_keeps_the_object(api, status, expected):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("DELETE", "/apis/batch/v1/namespaces/shop/jobs/mig", status, "no", reason="Conflict")
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    (result,) = report.objects
    assert result.action == "failed" and expected in result.reason
    assert api.object("batch/v1", "Job", "mig", "shop") is not None


def test_a_recreate_whose_new_apply_fails_says_the_next_run_creates_it(api):
    deployed(api, job("busybox:1"))
    immutable_refusal(api, "/apis/batch/v1/namespaces/shop/jobs/mig")
    api.fail("PATCH", "/apis/batch/v1/namespaces/shop/jobs/mig", 500, "etcd down", times=None,
             when=lambda r: len([x for x in api.requests if x.method == "DELETE"]) > 0)
    report, error = run(api, "apply", load(job("busybox:2")), recreate_on_immutable=frozenset({"Job"}))
    (result,) = report.objects
    assert result.action == "failed" and "the next run creates it" in result.reason


def test_adopt_in_check_mode_writes_no_label(api):
    api.add(cm("a", "shop", meta={"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}}))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 409, "Apply failed with 1 conflict",
             reason="Conflict", causes=[{"reason": "FieldManagerConflict", "message": "conflict",
                                         "field": f".metadata.labels.{spec.LABEL_PART_OF}"}])
    report, error = run(api, "apply", load(cm("a")), adopt=True, dry_run=True)
    assert error is None and actions(report) == {"ConfigMap shop/a": "configured"}
    applies = api.sent("PATCH", "/api/v1/namespaces/shop/configmaps/a")
    assert [r.query.get("force") for r in applies] == [None, "true"] and all(r.dry_run for r in applies)


def test_adopt_whose_label_patch_fails_reports_the_object(api):
    api.add(cm("a", "shop", meta={"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}}))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 409, "Apply failed with 1 conflict",
             reason="Conflict", causes=[{"reason": "FieldManagerConflict", "message": "conflict",
                                         "field": f".metadata.labels.{spec.LABEL_PART_OF}"}])
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 403, "forbidden", reason="Forbidden",
             when=lambda r: r.content_type == "application/merge-patch+json")
    report, error = run(api, "apply", load(cm("a")), adopt=True)
    (result,) = report.objects
    assert result.action == "failed" and "could not take its part-of label: forbidden" in result.reason


def test_a_recorded_kind_that_cannot_be_listed_stays_in_the_hint(api):
    from fakeapi import DEFAULT_KINDS, Kind
    api.kinds = list(DEFAULT_KINDS) + [Kind("example.com", "v1", "Gadget", "gadgets", True, verbs=("get", "patch"))]
    deployed(api, cm("a"))
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
        {spec.ANNOTATION_GROUP_KINDS: "ConfigMap,Gadget.example.com"}))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert any("Gadget.example.com cannot be listed" in w for w in report.warnings)
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Gadget.example.com"


# ----- a run killed part way: the next run prunes exactly what it should -------------------------


class Killed(BaseException):
    """The process dies (SIGKILL, a lost controller node): nothing after this point runs."""


def svc(name):
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}


def expire_the_dead_runs_claim(api):
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
        {spec.ANNOTATION_CLAIM: json.dumps({"run": "dead/1/0000", "expires": 1000})}))


def kill_at(api, method, path, nth=1):
    """The process dies as the nth matching request goes out: it and every later one (the run's
    cleanup included) never reach the server. Returns ``restart``: requests reach it again."""
    state = {"dead": False, "restarted": False}

    def die(request):
        if state["restarted"]:
            return
        if state["dead"] or (request.method, request.path) == (method, path) and len(
                api.sent(method, path)) == nth:
            state["dead"] = True
            api.requests.remove(request)
            raise Killed()

    api.before(None, None, die, times=None)
    return lambda: state.update(restarted=True)


def test_a_run_killed_before_its_final_parent_write_leaves_what_the_next_run_prunes(api):
    deployed(api, cm("a"), cm("b"))
    restart = kill_at(api, "PATCH", PARENT_PATH, nth=2)  # the claim is written, the final write is not
    with pytest.raises(Killed):  # its heartbeat thread would only wake after 20 minutes
        make_engine(api, claim_ttl=3600).apply(load(cm("a"), svc("new")))
    assert spec.ANNOTATION_CLAIM in parent_annotations(api)
    assert api.object("v1", "Service", "new", "shop") is not None
    assert api.object("v1", "ConfigMap", "b", "shop") is None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Service"
    restart()
    expire_the_dead_runs_claim(api)
    report, error = run(api, "apply", load(cm("a"), cm("c")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/c": "created",
                               "Service shop/new": "pruned"}
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_run_killed_between_its_members_leaves_what_the_next_run_prunes(api):
    deployed(api, cm("a"), deploy("web"))
    # ConfigMaps, then Services, then Deployments: killed after the Service, before the Deployment.
    restart = kill_at(api, "PATCH", "/apis/apps/v1/namespaces/shop/deployments/next")
    with pytest.raises(Killed):  # its heartbeat thread would only wake after 20 minutes
        make_engine(api, claim_ttl=3600).apply(load(cm("a"), cm("z"), svc("new"), deploy("next")))
    assert api.object("v1", "Service", "new", "shop") is not None
    assert api.object("apps/v1", "Deployment", "next", "shop") is None
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap,Deployment.apps,Service"
    assert spec.ANNOTATION_CLAIM in parent_annotations(api)
    assert api.object("apps/v1", "Deployment", "web", "shop") is not None  # never pruned: the run died first
    restart()
    expire_the_dead_runs_claim(api)
    report, error = run(api, "apply", load(cm("a")), max_prune_percent=100)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/z": "pruned",
                               "Deployment shop/web": "pruned", "Service shop/new": "pruned"}


# ----- several namespaces --------------------------------------------------------------------------


def test_members_in_other_namespaces_are_recorded_and_pruned_there(api):
    api.add_namespace("other")
    deployed(api, cm("a"), cm("b", "other"), cm("c", "other"))
    assert parent_annotations(api)[spec.ANNOTATION_ADDITIONAL_NAMESPACES] == "other"
    report, error = run(api, "apply", load(cm("a"), cm("b", "other")))
    assert error is None and actions(report)["ConfigMap other/c"] == "pruned"
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and actions(report)["ConfigMap other/b"] == "pruned"
    assert parent_annotations(api)[spec.ANNOTATION_ADDITIONAL_NAMESPACES] == ""
    assert api.names("v1", "ConfigMap") == ["a", "shop"]


def test_uninstall_finds_members_in_every_recorded_namespace(api):
    api.add_namespace("other")
    deployed(api, cm("a"), cm("b", "other"))
    api.add(cm("b", "third", meta={"labels": {spec.LABEL_PART_OF: ID}}))  # not recorded: not looked at
    report, error = run(api, "uninstall")
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "pruned", "ConfigMap other/b": "pruned"}
    assert api.object("v1", "ConfigMap", "b", "third") is not None


def test_members_on_later_list_pages_are_seen(api):
    deployed(api, cm("a"), cm("b"), cm("c"), cm("d"))
    api.page_limit = 1
    report, error = run(api, "apply", load(cm("a"), cm("b"), cm("c")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "unchanged",
                               "ConfigMap shop/c": "unchanged", "ConfigMap shop/d": "pruned"}
    assert len(api.sent("GET", "/api/v1/namespaces/shop/configmaps")) == 5  # 5 objects with the parent


def test_objects_not_ready_in_time_fail_the_run_after_it_completed(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "apply", load(cm("a"), deploy("web", replicas=2)), wait=True, wait_timeout=0)
    assert error is not None and "Deployment shop/web" in str(error)
    assert actions(report)["Deployment shop/web"] == "configured"
    assert spec.ANNOTATION_CLAIM not in parent_annotations(api)  # the claim was released before the wait


def test_custom_resources_wait_until_their_new_crd_is_served(api):
    api.fail("PATCH", "/apis/example.com/v1/namespaces/shop/widgets/w1", 404, "the server could not find the "
             "requested resource", reason="NotFound")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget))
    assert error is None and actions(report)["Widget shop/w1"] == "created"
    assert [r.status for r in api.sent("PATCH", "/apis/example.com/v1/namespaces/shop/widgets/w1")] == [404, 201]


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


def test_uninstall_of_a_set_with_a_protected_kind_needs_it_allowed(api):
    deployed(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "extra"}}, cm("a"))
    report, error = run(api, "uninstall")
    assert isinstance(error, GuardError) and "state: absent would delete protected objects: Namespace extra" in str(error)
    # The way out fits state: absent: not "keep them in the set", which every member leaves.
    assert "keep them in the set" not in error.fix and "state: disbanded" in error.fix
    assert "guard.allow_prune_kinds" in error.fix
    assert api.writes() == []
    report, error = run(api, "uninstall", allow_prune_kinds=frozenset({"Namespace"}))
    assert error is None and actions(report) == {"Namespace extra": "pruned", "ConfigMap shop/a": "pruned"}


def test_disband_in_check_mode_changes_nothing(api):
    deployed(api, cm("a"))
    report, error = run(api, "disband", dry_run=True)
    assert error is None and actions(report) == {"ConfigMap shop/a": "disbanded"}
    assert [(r.method, r.path, r.dry_run) for r in api.writes()] == [("DELETE", PARENT_PATH, True)]
    assert api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"] == {spec.LABEL_PART_OF: ID}


# ----- reapply: changed (nochange.py): re-runs that write nothing --------------------------------

CM_A = "/api/v1/namespaces/shop/configmaps/a"


def digest_of(api, name):
    return api.object("v1", "ConfigMap", name, "shop")["metadata"]["annotations"][spec.ANNOTATION_APPLIED_DIGEST]


def test_every_apply_records_the_digest_of_its_request_also_with_reapply_always(api):
    run(api, "apply", load(cm("a")), reapply="always")
    sent = next(r for r in api.sent("PATCH", CM_A))
    assert sent.body["metadata"]["annotations"][spec.ANNOTATION_APPLIED_DIGEST] == digest_of(api, "a")
    assert digest_of(api, "a").startswith("v1:")


def test_a_rerun_of_an_unchanged_set_sends_no_write_at_all(api):
    deployed(api, cm("a"), cm("b"), deploy("web"))
    report, error = run(api, "apply", load(cm("a"), cm("b"), deploy("web")))
    assert error is None
    assert api.writes() == []
    assert set(actions(report).values()) == {"unchanged"} and not report.changed
    assert all(o.uid for o in report.objects)
    # The parent read at the start and once more at the end (its resourceVersion unchanged).
    assert len(api.sent("GET", PARENT_PATH)) == 2
    # one request at a time (parallelism 1): every request is a round trip of its own
    assert report.requests == {"sent": len(api.requests), "writes": 0, "round_trips": len(api.requests)}
    assert report.to_dict()["requests"] == report.requests
    # Desired kinds listed as full objects (no metadata-only accept header), one LIST per kind.
    lists = [r for r in api.sent("GET") if r.path.endswith(("/configmaps", "/deployments"))]
    assert len(lists) == 2 and not any("PartialObjectMetadata" in (r.accept or "") for r in lists)


def test_reapply_always_sends_every_member_and_the_claim(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a"), cm("b")), reapply="always")
    assert error is None and set(actions(report).values()) == {"unchanged"}
    assert len(member_writes(api)) == 2 and len(parent_writes(api)) == 2
    assert report.requests["writes"] == 4


def test_only_the_changed_member_is_sent_conditionally_and_without_the_claim(api):
    deployed(api, cm("a"), cm("b"))
    listed = api.object("v1", "ConfigMap", "a", "shop")["metadata"]
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "configured", "ConfigMap shop/b": "unchanged"}
    (update,) = member_writes(api)
    assert update.path == CM_A
    # Conditional on exactly the listed object: never a resurrection, never over a newer change.
    assert (update.body["metadata"]["uid"], update.body["metadata"]["resourceVersion"]) == (
        listed["uid"], listed["resourceVersion"])
    assert parent_writes(api) == [] and report.requests["writes"] == 1
    assert api.object("v1", "ConfigMap", "a", "shop")["data"] == {"k": "new"}


def test_a_noop_over_several_namespaces_costs_its_lists_alone(api):
    # No write goes into a namespace whose members are all unchanged, so it is not read either:
    # discovery 2, the parent twice, one LIST per kind and namespace.
    api.add_namespace("other")
    deployed(api, cm("a"), cm("b", "other"), cm("c", "other"))
    report, error = run(api, "apply", load(cm("a"), cm("b", "other"), cm("c", "other")))
    assert error is None and api.writes() == []
    assert not [r for r in api.requests if r.path.startswith("/api/v1/namespaces/") and r.path.count("/") == 4]
    assert len(api.requests) == 2 + 2 + 2, [r.path for r in api.requests]


def test_with_reapply_always_a_change_takes_the_claim_around_it(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")), reapply="always")
    assert error is None
    assert len(parent_writes(api)) == 2 and len(member_writes(api)) == 2


def test_a_member_deleted_after_the_list_is_not_created_again_by_an_update_without_the_claim(api):
    # Another run pruned it between this run's LIST and its update: the conditional update is
    # refused (409, uid named) and the run starts over with the claim, where it is desired: created.
    deployed(api, cm("a"), cm("b"))
    api.before("PATCH", CM_A, lambda r: api.remove("v1", "ConfigMap", "a", "shop"))
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")))
    assert error is None, error
    first, *again = member_writes(api)
    assert first.path == CM_A and first.body["metadata"].get("uid")
    assert [r.path for r in again] == [CM_A] and "uid" not in again[0].body["metadata"]
    assert len(parent_writes(api)) == 2  # the normal path: claim and release
    assert actions(report) == {"ConfigMap shop/a": "created", "ConfigMap shop/b": "unchanged"}


def test_a_member_changed_after_the_list_is_updated_on_what_is_there_now_never_blindly(api):
    # A controller writing its status (or anyone) moved the resourceVersion: the update is refused
    # (409), the object read again, and the update made conditional on that version.
    deployed(api, cm("a"), cm("b"))
    api.before("PATCH", CM_A, lambda r: api.update("v1", "ConfigMap", "a", "shop",
                                                   lambda o: o["metadata"]["labels"].update(edited="yes")))
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")))
    assert error is None, error
    first, second = member_writes(api)
    assert first.body["metadata"]["resourceVersion"] != second.body["metadata"]["resourceVersion"]
    assert api.sent("GET", CM_A) and parent_writes(api) == []
    live = api.object("v1", "ConfigMap", "a", "shop")
    assert live["data"] == {"k": "new"} and live["metadata"]["labels"]["edited"] == "yes"
    assert actions(report)["ConfigMap shop/a"] == "configured"


def test_a_member_created_again_after_the_list_is_left_to_the_normal_path(api):
    deployed(api, cm("a"), cm("b"))

    def recreate(_request):
        labels = api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"]
        api.remove("v1", "ConfigMap", "a", "shop")
        api.add(cm("a", "shop", meta={"labels": labels}))  # same name and label, another uid

    api.before("PATCH", CM_A, recreate)
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")))
    assert error is None, error
    assert len(parent_writes(api)) == 2  # refused without the claim; the normal path applied it
    assert api.object("v1", "ConfigMap", "a", "shop")["data"] == {"k": "new"}


def test_a_parent_changed_during_the_updates_makes_the_run_start_over_and_keep_its_results(api):
    deployed(api, cm("a"), cm("b"))
    api.before("PATCH", CM_A, lambda r: api.update("v1", "ConfigMap", "shop", "shop",
                                                   lambda o: o["metadata"]["annotations"].update(x="y")))
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")), diff=True)
    assert error is None, error
    # Updated once, without the claim; the restart finds it unchanged and reports what was done.
    assert [r.path for r in member_writes(api)] == [CM_A]
    assert len(parent_writes(api)) == 2
    assert actions(report) == {"ConfigMap shop/a": "configured", "ConfigMap shop/b": "unchanged"}
    assert report.changed and [d["before_header"] for d in report.diff] == ["ConfigMap shop/a"]


def test_an_update_refused_for_good_is_reported_by_the_normal_path(api):
    deployed(api, cm("a"), cm("b"))
    api.fail("PATCH", CM_A, 422, 'ConfigMap "a" is invalid: data: Too long', reason="Invalid", times=None,
             when=lambda r: not r.dry_run)
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")))
    assert error is not None
    assert actions(report)["ConfigMap shop/a"] == "failed" and "Too long" in report.objects[0].reason
    assert len(parent_writes(api)) == 2


@pytest.mark.parametrize("case", ["new member", "lost part-of", "pruned member", "hint change", "old tooling"])
def test_a_run_that_changes_the_set_itself_takes_the_claim(api, case):
    deployed(api, cm("a"), cm("b"), deploy("web"))
    desired = [cm("a", k="new"), cm("b"), deploy("web")]
    if case == "new member":
        desired.append(cm("c"))
    elif case == "lost part-of":
        api.update("v1", "ConfigMap", "a", "shop", lambda o: o["metadata"]["labels"].pop(spec.LABEL_PART_OF))
    elif case == "pruned member":
        desired.remove(cm("b"))
    elif case == "hint change":
        desired.remove(deploy("web"))
    else:
        api.update("v1", "ConfigMap", "shop", "shop",
                   lambda o: o["metadata"]["annotations"].update({spec.ANNOTATION_TOOLING: "applyset.kubernetes/0.0.1"}))
    report, error = run(api, "apply", load(*desired))
    assert error is None, error
    assert len(parent_writes(api)) == 2, case
    assert not any("uid" in r.body["metadata"] for r in member_writes(api) if r.method == "PATCH")


def test_a_field_dropped_from_the_manifest_is_removed(api):
    deployed(api, cm("a", k="v", gone="x"))
    report, error = run(api, "apply", load(cm("a", k="v")))
    assert error is None and actions(report) == {"ConfigMap shop/a": "configured"}
    assert api.object("v1", "ConfigMap", "a", "shop")["data"] == {"k": "v"}


@pytest.mark.parametrize("drift", [
    lambda o: o["data"].update(k="edited"),
    lambda o: o["metadata"]["labels"].pop(spec.LABEL_PART_OF),
    lambda o: o["metadata"]["annotations"].pop(spec.ANNOTATION_APPLIED_DIGEST),
    lambda o: o["metadata"].update(managedFields=[]),
], ids=["edited", "lost-part-of", "lost-digest", "lost-managed-fields"])
def test_drift_of_a_member_is_applied_again(api, drift):
    deployed(api, cm("a"), cm("b"))
    api.update("v1", "ConfigMap", "a", "shop", drift)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None and actions(report)["ConfigMap shop/b"] == "unchanged"
    assert [r.path for r in member_writes(api)] == [CM_A]
    live = api.object("v1", "ConfigMap", "a", "shop")
    assert live["data"] == {"k": "a"} and live["metadata"]["labels"][spec.LABEL_PART_OF] == ID


def test_a_deleted_member_is_created_again(api):
    deployed(api, cm("a"), cm("b"))
    api.remove("v1", "ConfigMap", "a", "shop")
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None and actions(report)["ConfigMap shop/a"] == "created"
    assert [r.path for r in member_writes(api)] == [CM_A]


def test_a_new_field_manager_applies_every_member(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a"), cm("b")), field_manager="someone")
    assert error is None
    assert sorted(r.path for r in member_writes(api)) == [CM_A, "/api/v1/namespaces/shop/configmaps/b"]


@pytest.mark.parametrize("options", [{"force_conflicts": True}, {"field_validation": "Warn"}])
def test_force_or_field_validation_alone_change_nothing_that_is_in_place(api, options):
    # With every value in place an apply conflicts with nobody and sends no unknown field: the
    # result is the same with or without these options, so the members are not sent.
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a"), cm("b")), **options)
    assert error is None and set(actions(report).values()) == {"unchanged"}
    assert member_writes(api) == []


def test_a_prune_takes_the_normal_path_without_sending_unchanged_members(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "pruned"}
    assert [r.method for r in member_writes(api)] == ["DELETE"]
    assert len(parent_writes(api)) == 2


def test_a_hint_to_narrow_takes_the_normal_path(api):
    deployed(api, cm("a"), deploy("web"))
    api.remove("apps/v1", "Deployment", "web", "shop")
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and actions(report) == {"ConfigMap shop/a": "unchanged"}
    assert member_writes(api) == [] and len(parent_writes(api)) == 2
    assert parent_annotations(api)[spec.ANNOTATION_GROUP_KINDS] == "ConfigMap"


def test_a_parent_with_an_expired_claim_takes_the_normal_path_which_clears_it(api):
    deployed(api, cm("a"))
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
        {spec.ANNOTATION_CLAIM: json.dumps({"run": "crashed", "expires": 1000})}))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and member_writes(api) == [] and len(parent_writes(api)) == 2
    assert spec.ANNOTATION_CLAIM not in parent_annotations(api)


def test_a_parent_with_other_tooling_takes_the_normal_path(api):
    deployed(api, cm("a"))
    api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["annotations"].update(
        {spec.ANNOTATION_TOOLING: "applyset.kubernetes/0.0.1"}))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and member_writes(api) == [] and len(parent_writes(api)) == 2
    assert parent_annotations(api)[spec.ANNOTATION_TOOLING] == spec.tooling_value()


def test_a_parent_written_while_the_run_read_the_set_makes_it_start_over_with_the_claim(api):
    deployed(api, cm("a"), cm("b"))

    def another_writer(_request):
        if len(api.sent("GET", PARENT_PATH)) == 2:  # the check at the end of the quiet run
            api.update("v1", "ConfigMap", "shop", "shop", lambda o: o["metadata"]["labels"].update(x="y"))
            api.update("v1", "ConfigMap", "b", "shop", lambda o: o["data"].update(k="edited"))

    api.before("GET", PARENT_PATH, another_writer, times=None)
    report, error = run(api, "apply", load(cm("a"), cm("b")))
    assert error is None
    # Started over: listed again, saw b's drift, and wrote it under the claim.
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "configured"}
    assert [r.path for r in member_writes(api)] == ["/api/v1/namespaces/shop/configmaps/b"]
    assert len(parent_writes(api)) == 2
    assert len(report.objects) == 2  # the first attempt's results are not reported twice


def test_a_parent_deleted_while_the_run_read_the_set_makes_it_start_over(api):
    deployed(api, cm("a"))

    def parent_goes(_request):
        if len(api.sent("GET", PARENT_PATH)) == 2:
            api.remove("v1", "ConfigMap", "shop", "shop")

    api.before("GET", PARENT_PATH, parent_goes, times=None)
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None  # written again by the normal path


def test_check_mode_sends_no_dry_run_for_unchanged_members(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a", k="new"), cm("b")), dry_run=True, diff=True)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "configured", "ConfigMap shop/b": "unchanged"}
    assert [(r.path, r.dry_run) for r in api.writes()] == [(CM_A, True)]
    assert [d["before_header"] for d in report.diff] == ["ConfigMap shop/a"]
    assert report.requests["writes"] == 1


def test_wait_on_a_run_that_writes_nothing_still_waits_and_writes_nothing(api):
    deployed(api, cm("a"))
    report, error = run(api, "apply", load(cm("a")), wait=True, wait_timeout=5)
    assert error is None and api.writes() == [] and actions(report) == {"ConfigMap shop/a": "unchanged"}


def test_an_owned_object_skipped_by_prune_does_not_stop_a_run_that_writes_nothing(api):
    deployed(api, cm("a"), cm("b"))
    api.update("v1", "ConfigMap", "b", "shop", lambda o: o["metadata"].update(
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "u", "controller": True}]))
    report, error = run(api, "apply", load(cm("a")))
    assert error is None and api.writes() == []
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "skipped"}


def test_reapply_must_be_changed_or_always(api):
    with pytest.raises(InputError, match="reapply must be changed or always"):
        make_engine(api, reapply="sometimes")


@pytest.mark.parametrize("status, message, fix", [
    (403, 'namespaces "shop" is forbidden: ValidatingAdmissionPolicy \'no-shops\' with binding \'b\' denied request: '
          'no shops here', "admission webhook or policy"),
    (400, 'admission webhook "ns.policy.example.com" denied the request: namespace names need a team prefix',
     "admission webhook or policy"),
    (403, 'namespaces is forbidden: User "tenant" cannot create resource "namespaces"', "credentials need create"),
    (500, "etcdserver: request timed out", "fix what the server said"),
])
def test_a_refused_namespace_of_the_set_names_the_refusal_and_its_way_out(status, message, fix):
    api = FakeApi()
    api.fail("PATCH", "/api/v1/namespaces/shop", status, message, reason="Forbidden" if status == 403 else "Invalid",
             times=None)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    _report, error = run(api, "apply", load(ns, cm("a")))
    assert str(error).startswith(f"ApplySet ConfigMap shop/shop: could not create namespace shop for the parent: {message}")
    assert fix in error.fix and "nothing else was changed" in error.fix
    assert [r.path for r in api.writes()] == ["/api/v1/namespaces/shop"]
