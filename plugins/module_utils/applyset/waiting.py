"""Waiting loops (temporary home of the CRD wait until health.py is split)."""

from __future__ import annotations

import time

from . import health
from .errors import ApplySetError


def wait_for_crds(client, crd_resource, names, timeout: float, obj: str) -> None:
    """Wait until the CRDs ``names`` are Established (bounded by ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        for name in sorted(pending):
            crd = client.get(crd_resource, name)
            # The one CRD readiness rule (health.crd_ready): Established, or a final refusal
            # such as NamesAccepted=False, which no amount of waiting changes.
            ready, reason = health.crd_ready(crd or {})
            if ready:
                pending.discard(name)
            elif isinstance(reason, health.Final):
                raise ApplySetError(
                    f"CustomResourceDefinition {name} will not become Established: {reason}", obj=obj,
                    fix=f"fix the CRD (kubectl describe crd {name}); its custom resources were not applied")
        if not pending:
            return
        if time.monotonic() > deadline:
            raise ApplySetError(
                f"CustomResourceDefinitions not Established after {timeout:.0f}s: " + ", ".join(sorted(pending)),
                obj=obj, fix="check the CRDs' status conditions (kubectl describe crd NAME)")
        time.sleep(0.25)
