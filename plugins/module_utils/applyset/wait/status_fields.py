"""What the built-in readiness rules read of an object's status, read one way.

Pure helpers over a live object (a dict as the API server returns it): its status and spec,
its conditions by type, counts the API server leaves out when zero, and whether the status
describes the current generation (kstatus' first check: a controller must have observed the
spec before any of its status counts).
"""

from __future__ import annotations

from typing import Any

from ..object_meta import Condition, KubeObject, conditions_of, generation_of

# An object's ``status`` and ``spec``: the kind's own fields, read by the rule that knows the kind.
ObjectStatus = dict[str, Any]
ObjectSpec = dict[str, Any]


def status_of(obj: KubeObject) -> ObjectStatus:
    return obj.get("status") or {}


def spec_of(obj: KubeObject) -> ObjectSpec:
    return obj.get("spec") or {}


def conditions_by_type(obj: KubeObject) -> dict[str, Condition]:
    """Conditions by type; later duplicates win, as a controller would have meant."""
    return {condition["type"]: condition for condition in conditions_of(obj)}


def is_true(condition: Condition | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def explain(condition: Condition | KubeObject) -> str:
    """``reason: message`` of a condition (or an Event), whichever parts it has."""
    parts = [condition.get("reason"), condition.get("message")]
    return ": ".join(str(p) for p in parts if p) or f"status {condition.get('status')}"


def generation_not_observed(obj: KubeObject, *, required: bool) -> str | None:
    """Why the status is stale, or None when it describes the current spec.

    Workload controllers always report ``observedGeneration``, so its absence means
    the controller has not seen the object yet (``required``). For other kinds the
    field is optional and only compared when present.
    """
    generation = generation_of(obj)
    observed = status_of(obj).get("observedGeneration")
    if generation is None or (observed is None and not required):
        return None
    if observed is None or observed < generation:
        seen = "nothing" if observed is None else f"generation {observed}"
        return f"waiting for the controller to observe generation {generation} (it has seen {seen})"
    return None


def count(status: ObjectStatus, key: str) -> int:
    # The API server leaves zero counts out of status.
    value = status.get(key)
    return value if isinstance(value, int) else 0


def desired_replicas(obj: KubeObject) -> int:
    replicas = spec_of(obj).get("replicas")
    return replicas if isinstance(replicas, int) else 1
