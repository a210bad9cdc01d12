"""The rule order (readiness.choose, written once), the verdict's statuses and rule names, and the
JMESPath overrides."""

from __future__ import annotations

import builtins

import pytest
from applyset.wait import readiness
from applyset.wait.status import Readiness, Status
from applyset.errors import InputError
from readiness_objects import condition, deployment, job, judged, obj, widget

# ----- the verdict: status, message and rule ---------------------------------------------------


def test_objects_being_deleted_are_terminating():
    d = deployment(0)
    d["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert judged(d) == (False, "being deleted")
    assert readiness.verdict(d) == Readiness(Status.TERMINATING, "being deleted", "built-in")


def test_a_finished_job_being_deleted_by_its_ttl_keeps_its_verdict():
    done = job(conditions=[condition("Complete")])
    done["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert readiness.verdict(done) == Readiness(Status.CURRENT, "complete", "built-in")
    running = job(active=1)
    running["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert readiness.verdict(running) == Readiness(Status.TERMINATING, "being deleted", "built-in")


@pytest.mark.parametrize("thing, options, status, rule", [
    (deployment(1, replicas=1, updatedReplicas=1, availableReplicas=1, readyReplicas=1), {}, Status.CURRENT,
     "built-in"),
    (deployment(3), {}, Status.IN_PROGRESS, "built-in"),
    (widget({"conditions": [condition("Stalled", reason="BadSpec")]}), {}, Status.FAILED, "generic"),
    (obj("v1", "ConfigMap"), {}, Status.CURRENT, "none"),
    (obj("v1", "Service", spec={"type": "LoadBalancer"}), {}, Status.CURRENT, "none"),
    (obj("v1", "Service", spec={"type": "LoadBalancer"}), {"wait_for_load_balancers": True}, Status.IN_PROGRESS,
     "built-in"),
    (widget({"ok": 0}), {"overrides": {"Widget": "status.ok"}}, Status.IN_PROGRESS, "override Widget"),
    (widget({"phase": "Done"}), {"health_check_exprs": [{"apiVersion": "example.com/v1", "kind": "Widget",
                                                         "current": "status.phase == 'Done'"}]},
     Status.CURRENT, "health_check_exprs[0]"),
])
def test_the_verdict_names_the_rule_rule_for_names_without_judging(thing, options, status, rule):
    found = readiness.verdict(thing, **options)
    assert (found.status, found.rule) == (status, rule)
    assert readiness.rule_for(thing, **options) == rule


def test_a_failed_when_annotation_alone_comes_before_the_kinds_rule():
    annotated = widget({"conditions": [condition("Ready")], "phase": "Broken"})
    annotated["metadata"]["annotations"] = {"applyset.kubernetes.ansible/failed-when": "status.phase == 'Broken'"}
    found = readiness.verdict(annotated)
    assert (found.status, found.rule) == (Status.FAILED, "annotation failed-when, then generic")
    annotated["status"]["phase"] = "Fine"
    assert readiness.verdict(annotated) == Readiness(Status.CURRENT, "Ready", "annotation failed-when, then generic")


# ----- overrides ----------------------------------------------------------------------------


def test_override_replaces_the_rule_and_uses_python_truthiness():
    w = widget({"phase": "Done", "count": 0})
    assert judged(w, overrides={"Widget.example.com": "status.phase == 'Done'"}) == (
        True, "override `status.phase == 'Done'` holds")
    assert judged(w, overrides={"Widget": "status.count"}) == (False, "override `status.count` is 0")
    assert judged(w, overrides={"Widget": "status.missing"}) == (False, "override `status.missing` is null")
    # A Deployment can be declared ready on any condition the user prefers.
    d = deployment(3, replicas=3, updatedReplicas=3, availableReplicas=1)
    assert judged(d, overrides={"Deployment": "status.availableReplicas >= `1`"})[0] is True


def test_override_by_kind_and_group_wins_over_bare_kind():
    w = widget({"a": True, "b": False})
    overrides = {"Widget": "status.b", "Widget.example.com": "status.a"}
    assert judged(w, overrides=overrides)[0] is True
    other_group = obj("other.io/v1", "Widget", status={"a": True, "b": False})
    assert judged(other_group, overrides=overrides)[0] is False


def test_invalid_overrides_are_input_errors():
    with pytest.raises(InputError, match="invalid JMESPath"):
        readiness.check_overrides({"Widget": "status.["})
    with pytest.raises(InputError, match="mapping"):
        readiness.check_overrides(["Widget"])
    with pytest.raises(InputError, match="expected a Kind"):
        readiness.check_overrides({"Widget": ""})
    readiness.check_overrides(None)
    readiness.check_overrides({"Widget": "status.ready"})


def test_missing_jmespath_is_a_clear_error(monkeypatch):
    real_import = builtins.__import__

    def no_jmespath(name, *args, **kwargs):
        if name == "jmespath":
            raise ImportError("No module named 'jmespath'")
        return real_import(name, *args, **kwargs)

    readiness._compile.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_jmespath)
    try:
        with pytest.raises(InputError, match="need the Python package 'jmespath'") as caught:
            judged(widget(), overrides={"Widget": "status.never_compiled_before"})
        assert "pip install jmespath" in str(caught.value)
    finally:
        readiness._compile.cache_clear()
