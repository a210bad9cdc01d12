"""The other built-in kinds' readiness rules, the generic rule, and the rules table (wait/kind_rules.py)."""

from __future__ import annotations

from applyset import spec
from applyset.wait import kind_rules, workload_rules
from applyset.wait.status import Status
from readiness_objects import condition, deployment, judged, obj, service, widget


def test_pvc_crd_namespace_rules():
    assert judged(obj("v1", "PersistentVolumeClaim", status={"phase": "Bound"})) == (True, "Bound")
    assert judged(obj("v1", "PersistentVolumeClaim", status={"phase": "Pending"}))[0] is False
    assert judged(obj("v1", "PersistentVolumeClaim"))[1] == "phase Pending, not Bound"
    assert kind_rules.pvc_ready(obj("v1", "PersistentVolumeClaim", status={"phase": "Lost"})).final

    def crd(*conditions):
        return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", status={"conditions": list(conditions)})

    assert judged(crd(condition("Established"))) == (True, "Established")
    assert judged(crd(condition("Established", "False"))) == (False, "not Established yet")
    found = kind_rules.crd_ready(crd(condition("NamesAccepted", "False", reason="NameConflict")))
    assert found.final and "NameConflict" in found.message

    assert judged(obj("v1", "Namespace", status={"phase": "Active"})) == (True, "Active")
    assert judged(obj("v1", "Namespace", status={"phase": "Terminating"})) == (
        False, "phase Terminating, not Active")


def test_services_are_ready_unless_load_balancers_are_awaited():
    assert judged(service())[0] is True
    assert judged(service(), wait_for_load_balancers=True) == (False, "waiting for a load balancer address")
    assert judged(service(ingress=[{"ip": "10.0.0.7"}]), wait_for_load_balancers=True) == (
        True, "load balancer at 10.0.0.7")
    assert judged(service(ingress=[{"hostname": "lb.example"}]), wait_for_load_balancers=True)[0]
    assert judged(service("ClusterIP"), wait_for_load_balancers=True) == (True, "type ClusterIP")


# ----- generic rule, fail_closed ------------------------------------------------------


def test_generic_rule_uses_ready_then_available_conditions():
    assert judged(widget({"conditions": [condition("Ready")]})) == (True, "Ready")
    assert judged(widget({"conditions": [condition("Available")]})) == (True, "Available")
    ready, reason = judged(widget({"conditions": [condition("Ready", "False", reason="Waiting",
                                                            message="db down")]}))
    assert (ready, reason) == (False, "Ready is False: Waiting: db down")
    assert judged(widget({"conditions": [condition("Synced")]})) == (True, "no Ready or Available condition")


def test_generic_rule_needs_the_current_generation():
    stale = widget({"observedGeneration": 1, "conditions": [condition("Ready")]}, generation=2)
    assert judged(stale)[0] is False
    stale_condition = widget({"conditions": [condition("Ready", observedGeneration=1)]}, generation=2)
    assert judged(stale_condition) == (False, "condition Ready is from generation 1, not 2")
    current = widget({"observedGeneration": 2, "conditions": [condition("Ready", observedGeneration=2)]},
                     generation=2)
    assert judged(current)[0] is True


def test_generic_rule_honours_stalled_and_reconciling():
    stalled = widget({"conditions": [condition("Ready"), condition("Stalled", reason="BadSpec")]})
    assert judged(stalled) == (False, "Stalled: BadSpec")
    assert judged(widget({"conditions": [condition("Reconciling")]}))[0] is False


def test_no_status_is_ready_unless_fail_closed_on_custom_resources():
    assert judged(widget()) == (True, "no status to check")
    assert judged(widget(), fail_closed=True) == (False, "no status reported yet (fail_closed)")
    assert judged(widget({}), fail_closed=True)[0] is False
    # Built-in kinds never fail closed: a ConfigMap has no status by design.
    assert judged(obj("v1", "ConfigMap"), fail_closed=True)[0] is True
    # A custom resource in a *.k8s.io group (Gateway API) is still custom.
    gateway = obj("gateway.networking.k8s.io/v1", "Gateway")
    assert judged(gateway, fail_closed=True)[0] is False
    assert judged(widget({"conditions": [condition("Ready")]}), fail_closed=True)[0] is True


def test_rules_table_keys_match_their_predicates():
    assert kind_rules.RULES[spec.GroupKind("apps", "Deployment")] is workload_rules.deployment_ready
    assert not (set(kind_rules.RULES) & kind_rules.ALWAYS_READY)
