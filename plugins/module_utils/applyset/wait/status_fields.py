"""What the built-in readiness rules read of an object's status, read one way.

Pure helpers over a live object (a dict as the API server returns it): its status and spec,
its conditions by type, counts the API server leaves out when zero, and whether the status
describes the current generation (kstatus' first check: a controller must have observed the
spec before any of its status counts).
"""

from __future__ import annotations

from ..object_meta import metadata_of


def status_of(obj: dict) -> dict:
    return obj.get("status") or {}


def spec_of(obj: dict) -> dict:
    return obj.get("spec") or {}


def conditions_by_type(obj: dict) -> dict:
    """Conditions by type; later duplicates win, as a controller would have meant."""
    found = {}
    for condition in status_of(obj).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type"):
            found[condition["type"]] = condition
    return found


def is_true(condition: dict | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def explain(condition: dict) -> str:
    """``reason: message`` of a condition, whichever parts it has."""
    parts = [condition.get("reason"), condition.get("message")]
    return ": ".join(str(p) for p in parts if p) or f"status {condition.get('status')}"


def generation_not_observed(obj: dict, *, required: bool) -> str | None:
    """Why the status is stale, or None when it describes the current spec.

    Workload controllers always report ``observedGeneration``, so its absence means
    the controller has not seen the object yet (``required``). For other kinds the
    field is optional and only compared when present.
    """
    generation = metadata_of(obj).get("generation")
    observed = status_of(obj).get("observedGeneration")
    if generation is None or (observed is None and not required):
        return None
    if observed is None or observed < generation:
        seen = "nothing" if observed is None else f"generation {observed}"
        return f"waiting for the controller to observe generation {generation} (it has seen {seen})"
    return None


def count(status: dict, key: str) -> int:
    # The API server leaves zero counts out of status.
    value = status.get(key)
    return value if isinstance(value, int) else 0


def desired_replicas(obj: dict) -> int:
    replicas = spec_of(obj).get("replicas")
    return replicas if isinstance(replicas, int) else 1
