"""The readiness rules users write in CEL (wait/cel.py, wait/expressions.py): Flux's healthCheckExprs
semantics, the ready-when / failed-when annotations, what is refused before any request, and the
precedence over the library and the built-in rules."""

from __future__ import annotations

import time

import pytest

from applyset.errors import InputError
from applyset.run.options import Options
from applyset.wait import expressions, readiness
from readiness_objects import judged, judged_final

celpy = pytest.importorskip("celpy")

READY_IS_TRUE = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')"
READY_IS_FALSE = "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'False')"
CERTIFICATE = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "current": READY_IS_TRUE,
               "failed": READY_IS_FALSE}


def cert(*conditions, generation=1, observed=None, annotations=None):
    status = {"conditions": [{"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions]}
    if observed is not None:
        status["observedGeneration"] = observed
    meta = {"name": "web", "namespace": "shop", "generation": generation}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": meta, "spec": {},
            "status": status}


def test_flux_cheatsheet_expression_current_and_failed():
    ready, reason, final = judged_final(cert(("Ready", "True", "Issued", "")), health_check_exprs=[CERTIFICATE])
    assert (ready, reason) == (True, "health_check_exprs[0] current holds")
    ready, reason, final = judged_final(cert(("Ready", "False", "ConfigError", "no issuer")),
                                        health_check_exprs=[CERTIFICATE])
    assert ready is False and final
    assert str(reason) == "failed: health_check_exprs[0] failed holds: Ready False: ConfigError: no issuer"


def test_order_is_in_progress_then_failed_then_current_and_none_is_in_progress():
    rule = dict(CERTIFICATE, inProgress="status.conditions.exists(e, e.type == 'Issuing' && e.status == 'True')")
    both = cert(("Issuing", "True", "", ""), ("Ready", "False", "DoesNotExist", ""))
    assert judged(both, health_check_exprs=[rule]) == (False, "health_check_exprs[0] inProgress holds")
    unknown = cert(("Ready", "Unknown", "", ""))
    assert judged(unknown, health_check_exprs=[rule]) == (
        False, "health_check_exprs[0]: current does not hold yet")


def test_a_field_that_is_not_there_yet_is_in_progress_not_an_error():
    no_status = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "metadata": {"name": "web"}}
    ready, reason, final = judged_final(no_status, health_check_exprs=[CERTIFICATE])
    assert ready is False and not final
    assert "not there yet" in reason
    no_conditions = dict(no_status, status={"observedGeneration": 1})
    ready, reason, final = judged_final(no_conditions, health_check_exprs=[CERTIFICATE])
    assert ready is False and "not there yet ('conditions')" in reason


def test_a_status_behind_the_generation_is_in_progress_without_evaluating():
    stale = cert(("Ready", "False", "Old", ""), generation=2, observed=1)
    ready, reason, final = judged_final(stale, health_check_exprs=[CERTIFICATE])
    assert ready is False and "observe generation 2" in reason and not final


@pytest.mark.parametrize("expression", [
    "has(status.conditions) && status.conditions.exists(e, e.type == 'Ready' && e.status == 'True')",
    "status.conditions.exists(e, e.type == 'Ready') && status.conditions.all(e, e.status != 'False')",
    "size(status.conditions.filter(e, e.status == 'True')) > 0",
    "self.metadata.name == 'web' && metadata.generation == 1",
])
def test_macros_and_self(expression):
    rule = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "current": expression}
    assert judged(cert(("Ready", "True", "", "")), health_check_exprs=[rule])[0] is True


def test_entries_match_by_group_and_kind_any_version_and_the_first_wins():
    other_version = dict(CERTIFICATE, apiVersion="cert-manager.io/v1alpha2", current="true")
    assert expressions.entry_for(readiness.group_kind_of(cert()), [other_version, CERTIFICATE])[0] == 0
    assert judged(cert(), health_check_exprs=[dict(CERTIFICATE, kind="Issuer")])[1] != "health_check_exprs"


def test_bad_expressions_are_refused_naming_the_entry_the_field_and_where():
    bad = [CERTIFICATE, {"apiVersion": "example.com/v1", "kind": "Widget",
                         "current": "status.conditions.exists(e, e.type == 'Ready'", "failed": "status.?phase"}]
    problems = expressions.problems_in_exprs(bad)
    assert problems[0].startswith("wait_rules.health_check_exprs[1] (example.com/v1/Widget) failed the optional-field")
    assert problems[1].startswith("wait_rules.health_check_exprs[1] (example.com/v1/Widget) current does not parse "
                                  "at line 1, column ")
    assert "^" in problems[1]
    assert expressions.problems_in_exprs([{"kind": "Widget"}]) == [
        "wait_rules.health_check_exprs[0] (None/Widget) needs apiVersion",
        "wait_rules.health_check_exprs[0] (None/Widget) needs current"]
    with pytest.raises(InputError) as caught:
        Options.from_settings(wait_rules={"health_check_exprs": bad}).validate()
    assert caught.value.obj == "wait_rules.health_check_exprs"


def test_annotations_win_and_failed_when_alone_adds_a_failure_to_the_other_rule():
    ready_when = {expressions.READY_WHEN: "status.conditions.exists(e, e.type == 'Issuing')"}
    obj = cert(("Issuing", "True", "", ""), annotations=ready_when)
    assert judged(obj, health_check_exprs=[CERTIFICATE]) == (True, "ready-when holds")
    assert readiness.rule_for(obj, health_check_exprs=[CERTIFICATE]) == "annotation"
    failed_when = {expressions.FAILED_WHEN: "status.conditions.exists(e, e.reason == 'Denied')"}
    denied = cert(("Ready", "False", "Denied", "by policy"), annotations=failed_when)
    ready, reason, final = judged_final(denied)
    assert ready is False and final and "failed-when holds" in reason
    fine = cert(("Ready", "True", "Issued", ""), annotations=failed_when)
    assert judged(fine)[0] is True  # the library's Certificate rule decides
    assert readiness.rule_for(fine) == "annotation failed-when, then library Certificate.cert-manager.io"


def test_bad_annotations_are_refused_naming_the_object():
    obj = cert(annotations={expressions.READY_WHEN: "status.phase =="})
    with pytest.raises(InputError) as caught:
        expressions.check_annotations([("app.yaml, document 1", obj)])
    assert caught.value.obj == "app.yaml, document 1 (Certificate web)"
    assert "annotation applyset.kubernetes.ansible/ready-when does not parse" in str(caught.value)


def test_precedence_user_rules_over_override_over_library():
    override = {"Certificate.cert-manager.io": "status.conditions[?type=='Issuing'] | [0].status == 'True'"}
    obj = cert(("Issuing", "True", "", ""), ("Ready", "False", "DoesNotExist", ""))
    assert judged(obj, overrides=override)[0] is True
    assert readiness.rule_for(obj, overrides=override) == "override Certificate.cert-manager.io"
    assert judged(obj, overrides=override, health_check_exprs=[CERTIFICATE])[0] is False
    assert readiness.rule_for(obj, health_check_exprs=[CERTIFICATE]) == "health_check_exprs[0]"
    assert judged(obj)[0] is False  # the library: still issuing


def test_health_check_exprs_make_a_kind_with_nothing_to_wait_for_read():
    gk = readiness.group_kind_of({"apiVersion": "v1", "kind": "ConfigMap"})
    assert not readiness.needs_reading(gk, None, False)
    rule = {"apiVersion": "v1", "kind": "ConfigMap", "current": "data.ready == 'yes'"}
    assert readiness.needs_reading(gk, None, False, [rule])


def test_cel_cost_per_object_compiled_once():
    """The figure for the docs: a Flux-cheatsheet rule (current and failed) on a realistic object."""
    obj = cert(("Ready", "True", "Issued", "Certificate is up to date and has not expired"),
               ("Issuing", "False", "", ""), observed=1)
    obj["spec"] = {"secretName": "web-tls", "dnsNames": ["web.example.com", "www.example.com"],
                   "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer"}}
    obj["status"].update(notAfter="2027-01-01T00:00:00Z", notBefore="2026-10-01T00:00:00Z",
                         renewalTime="2026-12-01T00:00:00Z", revision=3)
    judged(obj, health_check_exprs=[CERTIFICATE])  # compile (cached)
    rounds = 200
    started = time.perf_counter()
    for _ in range(rounds):
        judged(obj, health_check_exprs=[CERTIFICATE])
    per_object = (time.perf_counter() - started) / rounds
    print(f"CEL verdict (failed, then current): {per_object * 1e6:.0f} us per object")
    assert per_object < 0.05


def test_an_object_version_is_judged_once():
    obj = cert(("Ready", "True", "Issued", ""))
    obj["metadata"].update(uid="u-1", resourceVersion="17")
    calls = []
    real = expressions._judge_entry
    try:
        expressions._judge_entry = lambda *args: calls.append(args) or real(*args)
        for _ in range(3):
            assert judged(obj, health_check_exprs=[CERTIFICATE])[0] is True
        obj["metadata"]["resourceVersion"] = "18"
        judged(obj, health_check_exprs=[CERTIFICATE])
    finally:
        expressions._judge_entry = real
    assert len(calls) == 2


def test_without_cel_python_only_cel_rules_fail_and_say_what_to_install(monkeypatch):
    import builtins
    from applyset.wait import cel

    real_import = builtins.__import__

    def no_celpy(name, *args, **kwargs):
        if name == "celpy":
            raise ImportError("No module named 'celpy'")
        return real_import(name, *args, **kwargs)

    cel.compile_expression.cache_clear()
    cel._environment.cache_clear()
    monkeypatch.setattr(builtins, "__import__", no_celpy)
    try:
        assert judged(cert(("Ready", "True", "Issued", "")))[0] is True  # the library: no CEL
        Options.from_settings(wait_rules={"overrides": {"Widget": "status.ok"}}).validate()
        with pytest.raises(InputError, match="needs the Python package 'cel-python'") as caught:
            Options.from_settings(wait_rules={"health_check_exprs": [dict(CERTIFICATE, current="status.never_compiled == 1")]}).validate()
        assert "pip install cel-python" in caught.value.fix
    finally:
        cel.compile_expression.cache_clear()
        cel._environment.cache_clear()
