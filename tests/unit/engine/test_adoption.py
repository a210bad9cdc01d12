"""Taking objects in through the engine (fakeapi.py): objects of another set only with ``adopt``,
a `kubectl apply --prune -l` set with ``adopt_legacy``, and the fields client-side tools own."""

from applyset import spec
from applyset.run.options import DEFAULT_FIELD_MANAGER

from fakeapi import ID, actions, cm, first_index, load, run
from engine_objects import LAST_APPLIED, kubectl_applied


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

# ----- fields of client-side tools -----------------------------------------------------------


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

# ----- adopting a `kubectl apply --prune -l` set ---------------------------------------------


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
    options = legacy.LegacyAdoption(selector="app=shop", kinds=("ConfigMap", "Widget.example.com"))
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
    report, error = run(api, "apply", load(cm("a")), adopt_legacy=legacy.LegacyAdoption(selector="app=shop"),
                        max_prune_percent=100)
    assert error is not None and "nothing was applied or pruned" in str(error)
    assert api.object("v1", "ConfigMap", "a", "shop") is None
    assert api.object("v1", "ConfigMap", "old", "shop") is not None
