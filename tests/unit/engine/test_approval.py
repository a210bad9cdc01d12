"""The plan step (steps/approval.py) through the engine (fakeapi.py): the hooks, an uninstall's and a
disband's plans, and a refusal that sends no write."""

from applyset.errors import PlanChanged
from applyset.steps import approval
from applyset.rules import plan_diff

from fakeapi import cm, deployed, load, run


def hook(name, moments):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "annotations": {"helm.sh/hook": moments}},
            "data": {"k": name}}


def test_the_hooks_that_run_are_in_the_plan_and_none_when_nothing_changes(api):
    report, error = run(api, "apply", load(cm("a"), hook("migrate", "pre-install,pre-upgrade")), dry_run=True)
    assert error is None
    hooks = [e for e in report.plan if e["action"] == "run-hook"]
    assert [(e["object"], e["phase"]) for e in hooks] == [("ConfigMap shop/migrate", "pre-apply")]
    assert hooks[0]["body"] and hooks[0]["weight"] == 0
    deployed(api, cm("a"), hook("migrate", "pre-install,pre-upgrade"))
    report, error = run(api, "apply", load(cm("a"), hook("migrate", "pre-install,pre-upgrade")), dry_run=True)
    assert error is None and not [e for e in report.plan if e["action"] == "run-hook"]  # a no-op runs no hook


def test_a_stale_plan_sends_no_write_at_all(api):
    deployed(api, cm("a"), cm("b"))
    preview, error = run(api, "apply", load(cm("a"), cm("b")), dry_run=True)
    assert error is None
    report, error = run(api, "apply", load(cm("a"), cm("b", k="new"), cm("c")), approved_plan=preview.plan_id)
    assert isinstance(error, PlanChanged) and api.writes() == []
    assert "only the plan id was approved" in error.message and "- create ConfigMap shop/c" in error.message


def test_an_uninstall_and_a_disband_have_plans_of_their_own(api):
    deployed(api, cm("a"))
    uninstall, error = run(api, "uninstall", dry_run=True)
    assert error is None and [e["action"] for e in uninstall.plan] == ["uninstall", "delete"]
    disband, error = run(api, "disband", dry_run=True)
    assert error is None and [e["action"] for e in disband.plan] == ["disband", "unlabel"]
    assert uninstall.plan[1]["uid"] == disband.plan[1]["uid"] and uninstall.plan_id != disband.plan_id
    report, error = run(api, "disband", approved_plan={"plan": disband.plan, "plan_id": disband.plan_id})
    assert error is None and report.plan_id == disband.plan_id


def test_an_id_of_another_plan_version_is_named_in_the_refusal():
    plan = [{"object": "ApplySet ConfigMap shop/shop", "action": "apply", "id": "x"}]
    err = approval.refusal(plan_diff.Approved("plan-v0:abc"), plan, "plan-v1:def", "ApplySet ConfigMap shop/shop")
    assert "made by another version of the plan (plan-v0)" in err.message
    assert err.details == {"approved_plan_id": "plan-v0:abc", "plan_id": "plan-v1:def", "differences": []}


def test_a_plan_for_another_set_is_refused_as_such_not_as_members_removed():
    theirs = [{"object": "ApplySet Secret shop/other", "action": "apply", "id": "applyset-o-v1"},
              {"object": "ConfigMap shop/a", "action": "create", "body": "x"}]
    ours = [{"object": "ApplySet Secret shop/shop", "action": "apply", "id": "applyset-s-v1"},
            {"object": "ConfigMap shop/b", "action": "create", "body": "y"}]
    err = approval.refusal(plan_diff.Approved("plan-v1:" + "0" * 24, theirs), ours, "plan-v1:" + "1" * 24,
                           "ApplySet Secret shop/shop")
    assert err.message.startswith("the approved plan is for another set or run"), err.message
    assert err.details["differences"] == [
        "ApplySet Secret shop/other: the approved plan is for this set (apply, id applyset-o-v1), not for "
        "ApplySet Secret shop/shop (apply, id applyset-s-v1)"]
    assert "removed from the manifests" not in err.message
    # The same set previewed for an uninstall: another kind of run, said the same way.
    uninstall = [dict(ours[0], action="uninstall")]
    err = approval.refusal(plan_diff.Approved("plan-v1:" + "0" * 24, uninstall), ours, "plan-v1:" + "1" * 24,
                           "ApplySet Secret shop/shop")
    assert "approved plan is for this set (uninstall" in err.details["differences"][0]
