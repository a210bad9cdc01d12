"""Uninstall (state: absent) and disband (state: disbanded) through the engine (fakeapi.py)."""

from applyset import spec
from applyset.errors import GuardError

from fakeapi import ID, PARENT_PATH, actions, cm, deploy, deployed, run


# ----- uninstall -----------------------------------------------------------------------------


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


def test_uninstall_with_wait_returns_once_members_are_gone(api):
    deployed(api, cm("a"))
    report, error = run(api, "uninstall", wait=True, wait_timeout=5)
    assert error is None and actions(report) == {"ConfigMap shop/a": "pruned"}
    assert api.objects("v1", "ConfigMap") == []


def test_uninstall_finds_members_in_every_recorded_namespace(api):
    api.add_namespace("other")
    deployed(api, cm("a"), cm("b", "other"))
    api.add(cm("b", "third", meta={"labels": {spec.LABEL_PART_OF: ID}}))  # not recorded: not looked at
    report, error = run(api, "uninstall")
    assert error is None
    assert actions(report) == {"ConfigMap shop/a": "pruned", "ConfigMap other/b": "pruned"}
    assert api.object("v1", "ConfigMap", "b", "third") is not None


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

# ----- disband -------------------------------------------------------------------------------


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
