"""CEL mistakes that compile, refused before any request (issue 45, item 3, wait/cel_check.py); Flux's
group-wide health_check_exprs entries; a failed rule that holds only over an empty list; the user
guide's own health_check_exprs example, as written."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

from applyset.errors import InputError
from applyset.wait import cel, expressions, readiness
from readiness_objects import judged, judged_final

pytest.importorskip("celpy")

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("text, said, column", [
    # True is not CEL's true: it reads a top-level field named True.
    ("status.conditions.exists(e, e.status == True)", "uses True, which is not declared: CEL writes true", 41),
    ("status.conditions.exists(e, e.type == 'Ready') && e.status == 'True'", "uses e outside the macro", 51),
    ("status.conditions.exist(c, c.type == 'Ready')", "calls exist(), which CEL does not have; did you mean exists()?",
     19),
    ("Status.phase == 'Ready'", "uses Status, which is not declared", 1),
    ("status.conditions.map(c, c.type)", "gives the result of map(), not a boolean", 1),
    ("size(status.conditions)", "gives the result of size(), not a boolean", 1),
    ("status.replicas + 1", "gives a number (or text)", 1),
    ("'Ready'", "gives a string literal, not a boolean", 1),
    ("status.conditions.all(c)", "all() takes a variable and an expression", 19),
])
def test_mistakes_that_compile_are_named_with_a_caret(text, said, column):
    why = cel.check(text)
    assert why is not None and said in why, why
    assert f"(line 1, column {column}):\n{text}\n{' ' * (column - 1)}^" in why


@pytest.mark.parametrize("text", [
    "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
    "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
    "has(status.phase) && status.phase == 'Available'",
    "self.status.readyReplicas >= self.spec.replicas",
    "status.conditions.exists_one(c, c.type == 'Ready') ? true : false",
    "status.conditions.map(c, c.type).exists(t, t == 'Ready')",
    "size(status.conditions) > 0 && status.conditions[0].reason.startsWith('Ready')",
    "data.ready == 'yes'",  # a custom resource may have other top-level fields than spec and status
    "status.conditions.exists(c, c.type == 'Ready' && c.observedGeneration == metadata.generation)",
])
def test_correct_rules_pass(text):
    assert cel.check(text) is None


def test_an_annotation_may_only_read_the_fields_of_its_object():
    fields = frozenset({"apiVersion", "kind", "metadata", "spec"})
    why = cel.check("phase == 'Done'", fields)
    assert "the object has no top-level field phase (did you mean status.phase?)" in why
    assert cel.check("status.phase == 'Done' && spec.size > 0", fields) is None
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {
        expressions.READY_WHEN: "data.ready == 'yes'"}}, "data": {"ready": "no"}}
    assert expressions.problems_in_annotations(obj) == []


def test_a_bad_annotation_names_its_object_once():
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "annotations": {
        expressions.READY_WHEN: "status.conditions.exist(c, c.type == 'Ready')"}}}
    with pytest.raises(InputError) as caught:
        expressions.check_annotations([("app.yaml, document 2", obj)])
    assert caught.value.obj == "app.yaml, document 2 (Widget w)"
    message = str(caught.value)
    assert message.count("app.yaml, document 2") == 1, message
    assert "annotation applyset.kubernetes.ansible/ready-when calls exist()" in message


def test_health_check_exprs_mistakes_name_the_entry_kind_and_field():
    problems = expressions.problems_in_exprs([{"apiVersion": "example.com/v1", "kind": "Widget",
                                              "current": "status.conditions.exists(e, e.status == True)"}])
    assert problems[0].startswith("wait_rules.health_check_exprs[0] (example.com/v1/Widget) current uses True")
    assert problems[0].endswith("^")


# ----- Flux's group-wide entries --------------------------------------------------------------------

GROUP_WIDE = {"apiVersion": "example.com/v1", "current": "status.phase == 'Ready'",
              "failed": "status.phase == 'Broken'"}


def widget(kind, phase):
    return {"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "w", "generation": 1},
            "status": {"phase": phase}}


def test_a_group_wide_entry_is_accepted_and_judges_every_kind_of_its_group():
    assert expressions.problems_in_exprs([GROUP_WIDE]) == []
    assert judged(widget("Widget", "Ready"), health_check_exprs=[GROUP_WIDE]) == (
        True, "health_check_exprs[0] current holds")
    assert readiness.rule_for(widget("Gadget", "Ready"), health_check_exprs=[GROUP_WIDE]) == "health_check_exprs[0]"
    other_group = dict(widget("Widget", "Ready"), apiVersion="other.example.com/v1")
    assert expressions.entry_for(readiness.group_kind_of(other_group), [GROUP_WIDE]) is None


def test_an_entry_naming_the_kind_wins_over_the_group_wide_one_wherever_it_is():
    named = {"apiVersion": "example.com/v1", "kind": "Widget", "current": "status.phase == 'Done'"}
    exprs = [GROUP_WIDE, named]
    assert judged(widget("Widget", "Done"), health_check_exprs=exprs) == (
        True, "health_check_exprs[1] current holds")
    assert judged(widget("Gadget", "Ready"), health_check_exprs=exprs)[0] is True


def test_a_bad_group_wide_entry_says_so_without_none():
    problems = expressions.problems_in_exprs([dict(GROUP_WIDE, current="status.phase ==")])
    assert problems[0].startswith("wait_rules.health_check_exprs[0] (example.com/v1, every kind of its group) "
                                  "current does not parse")
    assert "None" not in problems[0]
    assert expressions.problems_in_exprs([dict(GROUP_WIDE, kind="")]) == [
        "wait_rules.health_check_exprs[0] (example.com/v1, every kind of its group) kind must be a kind's name, "
        "or left out for every kind of the group"]


# ----- all() over nothing ------------------------------------------------------------------------------

FLUX_CERTIFICATE = {"apiVersion": "example.com/v1", "kind": "Widget",
                    "current": "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
                    "failed": "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"}


def with_conditions(*conditions):
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "status": {"conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions]}}


def test_a_failed_rule_that_holds_only_over_an_empty_list_is_no_failure():
    ready, reason, final = judged_final(with_conditions(("Issuing", "True", "Issuing")),
                                        health_check_exprs=[dict(FLUX_CERTIFICATE, current="false")])
    assert ready is False and not final, reason
    assert "failed holds only because status.conditions.filter(e, e.type == 'Ready') is empty" in reason
    ready, reason, final = judged_final(with_conditions(("Ready", "False", "Broken")), health_check_exprs=[FLUX_CERTIFICATE])
    assert ready is False and final and "Broken" in reason


# ----- the user guide's example, as written --------------------------------------------------------------


def user_guide_exprs():
    page = (ROOT / "docs" / "user-guide.md").read_text()
    block = re.search(r"```yaml\nwait_rules:\n  health_check_exprs:\n.*?```", page, re.S)
    assert block, "the user guide's health_check_exprs example"
    return yaml.safe_load(block.group(0).removeprefix("```yaml\n").removesuffix("```"))["wait_rules"][
        "health_check_exprs"]


def test_the_user_guides_example_compiles_and_leaves_the_bundled_kinds_to_the_library():
    exprs = user_guide_exprs()
    assert expressions.problems_in_exprs(exprs) == []
    from applyset.wait import library
    for entry in exprs:
        assert library.entry_for(expressions._group_kind(entry)) is None, entry  # no fight with a bundled rule


def test_the_user_guides_example_does_not_fail_a_new_object():
    for entry in user_guide_exprs():
        api_version, kind = entry["apiVersion"], entry.get("kind") or "Anything"
        for status in ({}, {"conditions": []}, {"conditions": [{"type": "Other", "status": "True"}]}):
            obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "generation": 1},
                   "spec": {}, "status": status}
            ready, reason, final = judged_final(obj, health_check_exprs=[entry])
            assert not final, (entry, status, reason)
