"""The names of ``readiness`` and ``waiting`` under their former home, so callers need not change at once.

Readiness rules (is one object ready, and why) live in ``readiness``; waiting until a set
of objects is ready or gone, and until CRDs are Established, lives in ``waiting``. This
module only re-exports them; new code imports from those two.
"""

from __future__ import annotations

from .readiness import (  # noqa: F401 -- re-exports
    ALWAYS_READY, BUILTIN_GROUPS, RULE_OPTIONS, RULES, Final, GroupKind, check_overrides, conditions_ready,
    crd_ready, daemonset_ready, deployment_ready, group_kind_of, is_custom, is_ready, job_outcome_from_events,
    job_ready, load_balancer_ready, namespace_ready, needs_reading, pod_ready, pvc_ready, replicaset_ready,
    statefulset_ready, ttl_after_finished, verdict,
)
from .waiting import job_outcome_events, wait_for_crds, wait_gone, wait_ready  # noqa: F401 -- re-exports

__all__ = [
    "ALWAYS_READY",
    "BUILTIN_GROUPS",
    "RULE_OPTIONS",
    "RULES",
    "Final",
    "GroupKind",
    "check_overrides",
    "conditions_ready",
    "crd_ready",
    "daemonset_ready",
    "deployment_ready",
    "group_kind_of",
    "is_custom",
    "is_ready",
    "job_outcome_from_events",
    "job_ready",
    "load_balancer_ready",
    "namespace_ready",
    "needs_reading",
    "pod_ready",
    "pvc_ready",
    "replicaset_ready",
    "statefulset_ready",
    "ttl_after_finished",
    "verdict",
    "job_outcome_events",
    "wait_for_crds",
    "wait_gone",
    "wait_ready",
]
