"""Check mode through the engine (fakeapi.py): only dry runs are sent, the parent is never written,
and what a real run would do is previewed (diffs, prunes, namespaces, recreates, take-overs,
adoption, uninstall and disband)."""

from applyset import spec

from fakeapi import (ID, PARENT_PATH, FakeApi, actions, cm, deploy, deployed, load, parent_annotations, parent_writes,
                     run)
from engine_objects import claimed_parent, crd, immutable_refusal, job, kubectl_applied


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


def test_check_mode_with_a_crd_of_the_set_does_not_dry_run_its_resources(api):
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {}}
    report, error = run(api, "apply", load(crd("widgets", "Widget"), widget), dry_run=True)
    assert error is None and actions(report)["Widget shop/w1"] == "created"
    assert not any("/widgets/" in r.path for r in api.requests)


def test_check_mode_previews_despite_another_runs_claim(api):
    claimed_parent(api, expires=4102444800)
    report, error = run(api, "apply", load(cm("a")), dry_run=True, claim_wait=0)
    assert error is None
    assert any("another run (other-host/1/abcd)" in w for w in report.warnings)


def test_create_namespace_in_check_mode_creates_nothing():
    api = FakeApi()
    report, error = run(api, "apply", load(cm("a")), create_namespace=True, dry_run=True)
    assert error is None
    assert actions(report) == {"Namespace shop": "created", "ConfigMap shop/a": "created"}
    assert api.objects("v1", "Namespace") == []


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


def test_check_mode_only_says_which_fields_a_real_run_takes_over(api):
    kubectl_applied(api, "a", {"k": "a"})
    report, error = run(api, "apply", load(cm("a")), dry_run=True)
    assert error is None
    assert any("a real run takes over all fields of kubectl-client-side-apply" in w for w in report.warnings)
    assert not any(r.content_type == "application/json-patch+json" for r in api.requests)


def test_adopt_in_check_mode_writes_no_label(api):
    api.add(cm("a", "shop", meta={"labels": {spec.LABEL_PART_OF: "applyset-other-v1"}}))
    api.fail("PATCH", "/api/v1/namespaces/shop/configmaps/a", 409, "Apply failed with 1 conflict",
             reason="Conflict", causes=[{"reason": "FieldManagerConflict", "message": "conflict",
                                         "field": f".metadata.labels.{spec.LABEL_PART_OF}"}])
    report, error = run(api, "apply", load(cm("a")), adopt=True, dry_run=True)
    assert error is None and actions(report) == {"ConfigMap shop/a": "configured"}
    applies = api.sent("PATCH", "/api/v1/namespaces/shop/configmaps/a")
    assert [r.query.get("force") for r in applies] == [None, "true"] and all(r.dry_run for r in applies)


def test_uninstall_in_check_mode_deletes_nothing(api):
    deployed(api, cm("a"))
    report, error = run(api, "uninstall", dry_run=True)
    assert error is None and actions(report) == {"ConfigMap shop/a": "pruned"}
    assert all(r.dry_run for r in api.writes())
    assert api.object("v1", "ConfigMap", "shop", "shop") is not None


def test_disband_in_check_mode_changes_nothing(api):
    deployed(api, cm("a"))
    report, error = run(api, "disband", dry_run=True)
    assert error is None and actions(report) == {"ConfigMap shop/a": "disbanded"}
    assert [(r.method, r.path, r.dry_run) for r in api.writes()] == [("DELETE", PARENT_PATH, True)]
    assert api.object("v1", "ConfigMap", "a", "shop")["metadata"]["labels"] == {spec.LABEL_PART_OF: ID}
