"""``reapply: changed`` through the engine (fakeapi.py): re-runs that write nothing, the route
without the claim (only changed members, each updated conditionally on what was listed), and what
takes the normal path with the claim (nochange.py decides which)."""

import json

import pytest
from applyset import spec
from applyset.errors import InputError

from fakeapi import (ID, PARENT_PATH, actions, cm, deploy, deployed, load, make_engine, member_writes,
                     parent_annotations, parent_writes, run)


# ----- reapply: changed (nochange.py): re-runs that write nothing ----------------------------


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
