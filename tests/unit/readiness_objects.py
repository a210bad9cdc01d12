"""Objects the readiness tests judge, shared by tests/unit/wait/test_*_rules.py, test_readiness.py and
test_wait_rounds.py, and ``judged``: a verdict as the ``(ready, message)`` pair most rule tests compare."""

from __future__ import annotations

from applyset.wait import readiness


def judged(obj, **rule_options) -> tuple:
    """``readiness.verdict(obj, **rule_options)`` as ``(ready, message)``."""
    found = readiness.verdict(obj, **rule_options)
    return found.ready, found.message


def obj(api_version, kind, name="x", namespace="ns", generation=1, spec=None, status=None, **meta):
    metadata = {"name": name, "namespace": namespace, "generation": generation, **meta}
    result = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if spec is not None:
        result["spec"] = spec
    if status is not None:
        result["status"] = status
    return result


def deployment(want=3, **status):
    status.setdefault("observedGeneration", 1)
    return obj("apps/v1", "Deployment", name="web", spec={"replicas": want}, status=status)


def condition(kind, value="True", **extra):
    return {"type": kind, "status": value, **extra}


def job(spec=None, **status):
    return obj("batch/v1", "Job", spec={"completions": 2} if spec is None else spec, status=status)


def service(service_type="LoadBalancer", ingress=None):
    status = {"loadBalancer": {"ingress": ingress}} if ingress is not None else {}
    return obj("v1", "Service", spec={"type": service_type}, status=status)


def widget(status=None, generation=1):
    return obj("example.com/v1", "Widget", generation=generation, status=status)


def judged_final(obj, **rule_options) -> tuple:
    """``readiness.verdict(obj, **rule_options)`` as ``(ready, message, final)``."""
    found = readiness.verdict(obj, **rule_options)
    return found.ready, found.message, found.final
