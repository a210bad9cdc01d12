"""Whether a failure the object's status reports describes the spec we applied, or an earlier one.

A wait starts right after the apply, so the first status it reads is the one the controller wrote
for the previous spec. kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status/generic.go:
checkGenericProperties, checkGeneration; commit 321951179c8f76296f4e5a6bd2b9d1f15aeb3f95) answers
this with ``status.observedGeneration``: while it differs from ``metadata.generation`` the object is
in progress, whatever else its status says. Every rule here does the same where the controller
reports a generation (``status.observedGeneration``, or per condition as cert-manager and the
Gateway API do). kstatus has no answer for a controller that reports none.

Some controllers report no generation at all: KEDA's ScaledObject conditions carry neither a
generation nor a transition time (keda apis/keda/v1alpha1/condition_types.go), Argo CD's
Application keeps the last sync's ``operationState`` until the next sync starts, CloudNativePG's
phase has no generation. For those a failure counts only when it was reported after our last
write: ``our_write`` is the time the API server recorded for our field manager's apply in
``metadata.managedFields`` (it moves only when our apply changed a field), ``status_write`` the
newest time it recorded for a write of the status subresource (a kind's rule may name a better
one, as Argo CD's operation start). Both are the API server's own clock (or, for the operation,
the cluster's), so our machine's clock plays no part.

The times have whole seconds. A status written in the same second as our write is taken as
written after it only when that write created the object (a new object has no earlier status);
after an update it is taken as older: the failure is then reported as waiting, and the controller's
next report (or the timeout, which names it) decides. Calling an old failure fresh would fail, or
roll back, a release that is fine.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from ..object_meta import KubeObject, ManagedFieldsEntry, conditions_of, generation_of, managed_fields_of, metadata_of


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time as the API writes it (``2026-01-01T00:00:00Z``), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.replace(microsecond=0)


def _entries(obj: KubeObject) -> list[ManagedFieldsEntry]:
    # metadata.managedFields: manager, operation, time, subresource (fieldsV1 is not read)
    return managed_fields_of(obj)


def our_write(obj: KubeObject, field_manager: str | None) -> datetime | None:
    """When ``field_manager``'s apply last changed ``obj`` (server time), or None when unknown."""
    if not field_manager:
        return None
    times = [parse_time(e.get("time")) for e in _entries(obj)
             if e.get("manager") == field_manager and e.get("operation") == "Apply" and not e.get("subresource")]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def status_write(obj: KubeObject) -> datetime | None:
    """When the status subresource of ``obj`` was last changed (server time), or None."""
    times = [parse_time(e.get("time")) for e in _entries(obj) if e.get("subresource") == "status"]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def as_int(value: object) -> int | None:
    """An integer field as controllers write it (Argo Rollouts writes observedGeneration as a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return None


def reports_generation(obj: KubeObject) -> bool:
    """Whether the controller of ``obj`` says which generation its status describes (then the
    generation decides, not the time)."""
    status = obj.get("status")
    if not isinstance(status, dict):
        return False
    if as_int(status.get("observedGeneration")) is not None:
        return True
    return any(as_int(c.get("observedGeneration")) is not None for c in conditions_of(obj))


def _behind(obj: KubeObject) -> str | None:
    """Why the status of a controller that reports generations describes an earlier spec: its
    ``observedGeneration``, else the newest generation any of its conditions records, is behind
    ``metadata.generation``. (A rule may have read one condition more closely already.)"""
    generation = generation_of(obj)
    status = obj.get("status")
    if not isinstance(status, dict):
        return None
    observed = as_int(status.get("observedGeneration"))
    if observed is None:
        seen = [as_int(c.get("observedGeneration")) for c in conditions_of(obj)]
        observed = max((g for g in seen if g is not None), default=None)
    if generation is None or observed is None or observed >= generation:
        return None
    return f"reported for generation {observed}, not {generation}; waiting for the controller to observe it"


def older_than_our_write(obj: KubeObject, field_manager: str | None,
                         reported: Callable[[KubeObject], datetime | None] = status_write) -> str | None:
    """Why a failure in the status of ``obj`` predates our last write (a phrase for the reason),
    or None when it may count: it was reported after our write, or nothing says when.

    ``reported(obj)`` is when the failure was reported (by default the last status write).
    Objects whose controller reports a generation are judged by it instead (``reports_generation``).
    """
    if reports_generation(obj):
        return _behind(obj)
    ours = our_write(obj, field_manager)
    when = reported(obj)
    if ours is None or when is None or when > ours:
        return None
    created = parse_time(metadata_of(obj).get("creationTimestamp"))
    if when == ours and created == ours:
        return None  # our write created it: nothing it reports can be older
    return (f"reported at {when:%H:%M:%SZ}, not after this run's change at {ours:%H:%M:%SZ}; "
            "waiting for the controller to report on the change")
