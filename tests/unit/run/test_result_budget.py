"""result_budget.fit: a result within its budget is returned as it is; beyond it the failed and
changed members come first, unchanged ones last, and what was left out is counted and said.

The module through ansible-playbook against a real API server: tests/integration/test_result_detail.py.
"""

import json

import pytest

from applyset.rules import plan_diff, plan_id as plans
from applyset.run import result_budget
from applyset.errors import InputError


def member(i, action="unchanged"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": f"cm-{i:05d}", "action": action,
            "uid": f"0b5c{i:032d}"}


def entry(i, action="unchanged"):
    return {"object": f"ConfigMap shop/cm-{i:05d}", "action": action, "body": f"{i:016d}"}


def result_of(actions):
    """A result with one member and one plan entry per action (``created``/``unchanged``/``failed``)."""
    plan_actions = {"created": "create", "unchanged": "unchanged", "failed": "configure", "configured": "configure"}
    objects = [member(i, a) for i, a in enumerate(actions)]
    plan = [{"object": "ApplySet Secret shop/shop", "action": "apply", "id": "applyset-x-v1"}]
    plan += [entry(i, plan_actions[a]) for i, a in enumerate(actions)]
    summary = {a: actions.count(a) for a in set(actions)}
    return {"changed": True, "applyset": {"id": "applyset-x-v1"}, "summary": summary, "objects": objects,
            "plan_id": plans.digest(plan), "plan": plan, "requests": {"sent": 3, "writes": 1}, "check_mode": True}


def test_a_result_within_the_budget_is_returned_as_it_is():
    result = result_of(["created", "unchanged"] * 10)
    fitted = result_budget.fit(result)
    assert fitted.result is result and fitted.warning is None and "omitted" not in fitted.result


def test_full_returns_everything_whatever_its_size():
    result = result_of(["unchanged"] * 200)
    assert result_budget.fit(result, "full", max_bytes=1_000).result is result


def test_beyond_the_budget_failed_then_changed_then_unchanged_and_the_result_fits():
    actions = ["unchanged"] * 300 + ["created"] * 20 + ["failed"] * 2 + ["unchanged"] * 300
    result = result_of(actions)
    fitted = result_budget.fit(result, max_bytes=20_000)
    shown = fitted.result
    assert result_budget.size_of(shown) <= 20_000
    actions_shown = [o["action"] for o in shown["objects"]]
    assert actions_shown.count("failed") == 2 and actions_shown.count("created") == 20
    assert len(shown["objects"]) < len(actions)
    assert shown["omitted"]["objects"] == len(actions) - len(shown["objects"])
    assert shown["omitted"]["plan"] == len(result["plan"]) - len(shown["plan"])
    # the lists keep their order; the keys that are not per object are all there
    names = [o["name"] for o in shown["objects"]]
    assert names == sorted(names)
    assert {k: v for k, v in shown.items() if k not in ("objects", "plan", "omitted")} == {
        k: v for k, v in result.items() if k not in ("objects", "plan")}
    assert "result_detail: full" in fitted.warning and "result_max_bytes (20,000 bytes" in fitted.warning


def test_a_list_stops_at_the_first_entry_that_does_not_fit_so_no_unchanged_member_shows_before_a_changed_one():
    result = result_of(["created"] * 400 + ["unchanged"] * 5)
    shown = result_budget.fit(result, max_bytes=20_000).result
    assert all(o["action"] == "created" for o in shown["objects"])
    assert all(e["action"] != "unchanged" for e in shown["plan"])


def test_changed_leaves_the_unchanged_out_and_summary_keeps_only_failures():
    result = result_of(["unchanged", "created", "failed", "unchanged"])
    changed = result_budget.fit(result, "changed")
    assert [o["action"] for o in changed.result["objects"]] == ["created", "failed"]
    assert changed.result["omitted"] == {"objects": 2, "plan": 2}
    assert "result_detail: changed" in changed.warning
    summary = result_budget.fit(result, "summary").result
    assert [o["action"] for o in summary["objects"]] == ["failed"]
    assert summary["plan"] == [] and summary["plan_id"] == result["plan_id"]


def test_the_carried_warnings_count_in_the_budget():
    result = result_of(["unchanged"] * 50)
    size = result_budget.size_of(result)
    assert result_budget.fit(result, max_bytes=size).result is result
    assert "omitted" in result_budget.fit(result, max_bytes=size, reserved=result_budget.size_of(["w" * 500])).result


def test_a_cut_plan_binds_by_its_id_and_names_what_its_entries_can():
    approved = result_budget.fit(result_of(["created"] * 3 + ["unchanged"] * 300), max_bytes=8_000).result
    assert approved["omitted"]["plan"] > 0
    parsed = plan_diff.parse_approved(approved)
    assert parsed.plan_id == approved["plan_id"] and parsed.left_out == approved["omitted"]["plan"]
    now = [dict(e) for e in result_of(["created"] * 3 + ["unchanged"] * 300)["plan"]]
    now[1]["body"] = "changed-body-0000"
    now.append(entry(999, "create"))  # not named: the approved result may have left it out
    lines = plan_diff.differences(parsed.plan, now, parsed.left_out)
    assert lines[0].startswith("ConfigMap shop/cm-00000: approved create (body=")
    assert "it was changed in the manifests since" in lines[0]
    assert len(lines) == 2 and "left" in lines[1] and "result_detail" in lines[1]


def test_a_cut_plan_without_its_id_is_refused():
    approved = result_budget.fit(result_of(["unchanged"] * 300), max_bytes=5_000).result
    del approved["plan_id"]
    with pytest.raises(InputError, match="no plan_id"):
        plan_diff.parse_approved(approved)


@pytest.mark.parametrize("count", [1_000, 5_000, 25_000])
def test_at_any_size_the_default_result_fits_awx(count):
    result = result_of(["created"] * count)
    shown = result_budget.fit(result).result
    assert len(json.dumps(shown)) <= result_budget.DEFAULT_MAX_BYTES < result_budget.AWX_EVENT_LIMIT
