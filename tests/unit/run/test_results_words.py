"""The words of results and errors (issue 36, items 7, 8 and 10), as pure logic: members never
tried, what a rollback says it did, a set's name, a message that names its subject once, the
order's words for an object outside the set, changed_by without a time, a diff without our
bookkeeping."""

from __future__ import annotations

from types import SimpleNamespace

from applyset.rules import drift, ordering
from applyset import engine
from applyset import spec
from applyset.errors import ApplySetError
from applyset.kube.discovery import Resource
from applyset.parent.model import set_name
from applyset.inputs.redact import SecretDigester
from applyset.run.report import NOT_TRIED_STOPPED, ObjectResult, Recorder, Report, for_diff

SECRETS = Resource(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
CONFIGMAPS = Resource(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)


def member(name):
    return SimpleNamespace(resource=CONFIGMAPS, namespace="shop", name=name,
                           key=spec.ObjectId("", "ConfigMap", "shop", name))


def test_a_set_is_named_by_its_parents_kind_namespace_and_name():
    assert set_name(SECRETS, "shop", "web") == "ApplySet Secret shop/web"
    crd = Resource(group="example.com", version="v1", kind="ApplySet", plural="applysets", namespaced=False)
    assert set_name(crd, "", "platform") == "ApplySet ApplySet.example.com platform"


def test_a_message_that_opens_with_its_subject_names_it_once():
    where = "revision 9 of ApplySet Secret shop/web"
    assert str(ApplySetError(f"{where} is not kept", obj=where, fix="list them")) == f"{where} is not kept. Fix: list them"
    assert str(ApplySetError("is gone", obj="ConfigMap shop/a")) == "ConfigMap shop/a: is gone"


def test_members_not_tried_are_recorded_once_as_skipped_with_the_reason():
    recorder = Recorder(Report(), SecretDigester(), diff=False)
    recorder.result(ObjectResult("v1", "ConfigMap", "shop", "a", "failed", reason="refused"))
    recorder.untried([member("a"), member("b"), member("c")], NOT_TRIED_STOPPED)
    assert [(o.name, o.action, o.reason) for o in recorder.report.objects] == [
        ("a", "failed", "refused"), ("b", "skipped", NOT_TRIED_STOPPED), ("c", "skipped", NOT_TRIED_STOPPED)]
    assert recorder.report.summary()["skipped"] == 2 and not recorder.report.changed


def test_what_a_rollback_did_is_counted_from_its_report():
    report = Report(objects=[ObjectResult("v1", "ConfigMap", "shop", n, a) for n, a in
                             (("a", "configured"), ("b", "created"), ("c", "pruned"), ("d", "unchanged"))])
    assert engine._what_it_did(report) == "re-applied 2 objects and pruned 1"
    assert engine._what_it_did(Report()) == "changed nothing"


def test_a_rolled_back_release_quotes_what_failed_without_what_the_failed_run_left():
    failed = Report(objects=[ObjectResult("v1", "ConfigMap", "shop", "bad", "failed", reason="refused")],
                    hooks=[{"phase": "post-apply", "name": "smoke", "action": "failed"}])
    err = ApplySetError("it failed; nothing was pruned", what_failed="it failed", obj="ApplySet Secret shop/web")
    err.report = failed
    done = engine._rolled_back(err, Report(objects=[ObjectResult("v1", "ConfigMap", "shop", "x", "pruned")]), 1)
    assert done.message == "the release failed and the set was rolled back to revision 1 (the rollback pruned 1); " \
                           "what failed: it failed"
    assert done.obj == "ConfigMap shop/bad" and done.report.hooks == failed.hooks and done.revision == 1


def test_changed_by_leaves_out_a_time_the_entry_does_not_have():
    body = {"spec": {"replicas": 1}}
    entries = [{"manager": "kubectl", "operation": "Update", "subresource": "scale",
                "fieldsV1": {"f:spec": {"f:replicas": {}}}}]
    (who,) = drift.taken_fields(body, entries, "applyset.kubernetes")
    assert who == {"manager": "kubectl", "operation": "Update", "fields": [".spec.replicas"], "subresource": "scale"}
    found = drift.Drift("cluster_changed", [who])
    assert drift.describe(found) == "cluster_changed by kubectl (Update: .spec.replicas)"


def test_the_order_says_an_object_outside_the_set_is_waited_for_not_applied():
    web, outside = spec.ObjectId("", "ConfigMap", "shop", "web"), spec.ObjectId("", "ConfigMap", "shop", "outside")
    order = ordering.Order(needs={web: [(outside, ordering.READY, ordering.BY_DEPENDENCY)]}, waves={web: 0},
                           external={outside: CONFIGMAPS})
    lines = ordering.describe(order, [SimpleNamespace(key=web, ref="ConfigMap shop/web")], SimpleNamespace(waiting=SimpleNamespace(enabled=False)))
    assert lines == ["ConfigMap shop/web waits for ConfigMap shop/outside (outside the set) to be ready: waited "
                     "for, not applied (config.kubernetes.io/depends-on)"]


def test_a_diff_leaves_out_our_bookkeeping_annotations_but_keeps_the_users_and_the_label():
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": "1"}, "metadata": {
        "name": "a", "resourceVersion": "9", "labels": {spec.LABEL_PART_OF: "applyset-x-v1"},
        "annotations": {spec.ANNOTATION_APPLIED_DIGEST: "sha256:1", spec.ANNOTATION_KEEP: "keep", "team": "shop"}}}
    shown = for_diff(obj)
    assert shown["metadata"] == {"name": "a", "labels": {spec.LABEL_PART_OF: "applyset-x-v1"},
                                 "annotations": {spec.ANNOTATION_KEEP: "keep", "team": "shop"}}
    only_ours = {**obj, "metadata": {"name": "a", "annotations": {spec.ANNOTATION_APPLIED_DIGEST: "sha256:1"}}}
    assert for_diff(only_ours)["metadata"] == {"name": "a"}
    assert obj["metadata"]["annotations"][spec.ANNOTATION_APPLIED_DIGEST] == "sha256:1"  # the object is not changed
    assert for_diff(None) is None


def test_a_take_overs_field_warnings_are_one_per_release_not_one_per_object():
    from applyset.run.report import MemberOutcome

    recorder = Recorder(Report(), SecretDigester(), diff=False)
    what = "all fields of helm (Helm release apps/web)"
    for ref in ("ConfigMap apps/a", "Service apps/b", "Deployment apps/c"):
        recorder.outcome(MemberOutcome(ObjectResult("v1", "ConfigMap", "apps", "x", "configured"),
                                       warnings=[f"{ref}: took over {what}"]))
        recorder.warn(f"something else after {ref}")
    assert recorder.report.warnings == [
        f"took over {what} on 3 objects: ConfigMap apps/a, Service apps/b, Deployment apps/c",
        "something else after ConfigMap apps/a", "something else after Service apps/b",
        "something else after Deployment apps/c"]
