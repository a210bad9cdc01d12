"""The apply route through the engine's public API against the in-memory fake (fakeapi.py): the
parent written before any member, re-runs and changes, failures reported per object with nothing
pruned, the report, options and waiting.

Each test states one rule of DESIGN.md ("Rules that keep it correct") and checks it on what the
run reports and on the requests it sent. tests/integration proves the same against a real API
server; these tests pin the logic down in milliseconds, failures included.
"""

import pytest
from applyset import spec
from applyset.errors import InputError, ParentError

from fakeapi import (ID, actions, cm, deploy, deployed, first_index, is_parent_write, load, make_engine, member_writes,
                     parent_annotations, parent_writes, run)


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


def test_members_on_later_list_pages_are_seen(api):
    deployed(api, cm("a"), cm("b"), cm("c"), cm("d"))
    api.page_limit = 1
    report, error = run(api, "apply", load(cm("a"), cm("b"), cm("c")))
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "unchanged",
                               "ConfigMap shop/c": "unchanged", "ConfigMap shop/d": "pruned"}
    assert len(api.sent("GET", "/api/v1/namespaces/shop/configmaps")) == 5  # 5 objects with the parent

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


def test_server_warnings_are_reported_with_the_object(api):
    api.warn("PATCH", "/api/v1/namespaces/shop/configmaps/a", "unknown field \"spec.x\"")
    report, error = run(api, "apply", load(cm("a")))
    assert error is None
    assert 'ConfigMap shop/a: unknown field "spec.x"' in report.warnings


def test_more_than_ten_failures_are_summed_up(api):
    names = [f"m{i:02d}" for i in range(12)]
    for name in names:
        api.fail("PATCH", f"/api/v1/namespaces/shop/configmaps/{name}", 422, "invalid", reason="Invalid")
    report, error = run(api, "apply", load(*[cm(n) for n in names]))
    assert "- ... and 2 more (see objects)" in str(error)
    assert report.summary()["failed"] == 12

# ----- options and waiting -------------------------------------------------------------------


def test_bad_options_are_refused_before_any_request(api):
    with pytest.raises(InputError, match="max_prune_percent must be between 0 and 100"):
        make_engine(api, max_prune_percent=101, claim_wait=-1)
    assert api.requests == []


def test_wait_returns_once_applied_objects_are_ready_and_pruned_ones_gone(api):
    deployed(api, cm("a"), cm("b"))
    report, error = run(api, "apply", load(cm("a")), wait=True, wait_timeout=5)
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "unchanged", "ConfigMap shop/b": "pruned"}


def test_objects_not_ready_in_time_fail_the_run_after_it_completed(api):
    deployed(api, cm("a"), deploy("web"))
    report, error = run(api, "apply", load(cm("a"), deploy("web", replicas=2)), wait=True, wait_timeout=0)
    assert error is not None and "Deployment shop/web" in str(error)
    assert actions(report)["Deployment shop/web"] == "configured"
    assert spec.ANNOTATION_CLAIM not in parent_annotations(api)  # the claim was released before the wait

# ----- the report ----------------------------------------------------------------------------


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
