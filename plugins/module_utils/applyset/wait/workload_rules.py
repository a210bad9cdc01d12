"""Readiness of the built-in workloads: Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Pod.

Each rule is a pure ``(obj) -> Readiness`` over the object as read, following kstatus
(sigs.k8s.io/cli-utils/pkg/kstatus/status/core.go): the generation observed first, then the
kind's own notion of done. A Job is waited for until it finishes (Flux and Helm do the same;
kstatus calls a running Job current); how a Job that went away finished is read from the Job
controller's final Event (``job_outcome_from_events``). Tests: tests/unit/wait/test_workload_rules.py.
"""

from __future__ import annotations

from ..object_meta import KubeObject
from .status import Readiness
from .status_fields import (
    conditions_by_type, count, desired_replicas, explain, generation_not_observed, is_true, spec_of, status_of,
)


def deployment_ready(obj: KubeObject) -> Readiness:
    """A Deployment ``obj`` (as read) has rolled out: its generation observed, every replica updated,
    available and ready, no old replica left. ``FAILED`` when the rollout failed
    (``ProgressDeadlineExceeded``).
    """
    stale = generation_not_observed(obj, required=True)
    if stale:
        return Readiness.in_progress(stale)
    progressing = conditions_by_type(obj).get("Progressing")
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded":
        return Readiness.failed(f"rollout failed: {explain(progressing)}")
    status, want = status_of(obj), desired_replicas(obj)
    updated = count(status, "updatedReplicas")
    if updated < want:
        return Readiness.in_progress(f"{updated}/{want} replicas updated")
    old = count(status, "replicas") - updated
    if old > 0:
        return Readiness.in_progress(f"{old} old replicas pending termination")
    available = count(status, "availableReplicas")
    if available < want:
        return Readiness.in_progress(f"{available}/{want} replicas available")
    ready = count(status, "readyReplicas")
    if ready < want:
        return Readiness.in_progress(f"{ready}/{want} replicas ready")
    return Readiness.current(f"{available}/{want} replicas available")


def statefulset_ready(obj: KubeObject) -> Readiness:
    """A StatefulSet ``obj`` has rolled out: its generation observed, every replica ready and available,
    and, for a RollingUpdate, the replicas at or above the partition updated.
    """
    stale = generation_not_observed(obj, required=True)
    if stale:
        return Readiness.in_progress(stale)
    status, want = status_of(obj), desired_replicas(obj)
    ready = count(status, "readyReplicas")
    if ready < want:
        return Readiness.in_progress(f"{ready}/{want} replicas ready")
    # availableReplicas is reported since Kubernetes 1.22; before that ready is all we know.
    available = status["availableReplicas"] if isinstance(status.get("availableReplicas"), int) else ready
    if available < want:
        return Readiness.in_progress(f"{available}/{want} replicas available")
    strategy = spec_of(obj).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        # Pods below the partition are deliberately left on the old revision.
        partition = (strategy.get("rollingUpdate") or {}).get("partition") or 0
        to_update = max(0, want - partition)
        updated = count(status, "updatedReplicas")
        if updated < to_update:
            return Readiness.in_progress(f"{updated}/{to_update} replicas updated")
        current, update = status.get("currentRevision"), status.get("updateRevision")
        if partition == 0 and current and update and current != update:
            return Readiness.in_progress(f"rolling update to revision {update} in progress")
    return Readiness.current(f"{available}/{want} replicas available")


def daemonset_ready(obj: KubeObject) -> Readiness:
    """A DaemonSet ``obj`` has rolled out: its generation observed and a pod updated, available and ready
    on every node it is scheduled to.
    """
    stale = generation_not_observed(obj, required=True)
    if stale:
        return Readiness.in_progress(stale)
    status = status_of(obj)
    want = count(status, "desiredNumberScheduled")
    updated = count(status, "updatedNumberScheduled")
    if updated < want:
        return Readiness.in_progress(f"{updated}/{want} pods updated")
    available = count(status, "numberAvailable")
    if available < want:
        return Readiness.in_progress(f"{available}/{want} pods available")
    ready = count(status, "numberReady")
    if ready < want:
        return Readiness.in_progress(f"{ready}/{want} pods ready")
    return Readiness.current(f"{available}/{want} pods available")


def replicaset_ready(obj: KubeObject) -> Readiness:
    """A ReplicaSet ``obj`` has its generation observed and every replica available and ready."""
    stale = generation_not_observed(obj, required=True)
    if stale:
        return Readiness.in_progress(stale)
    status, want = status_of(obj), desired_replicas(obj)
    available = count(status, "availableReplicas")
    if available < want:
        return Readiness.in_progress(f"{available}/{want} replicas available")
    ready = count(status, "readyReplicas")
    if ready < want:
        return Readiness.in_progress(f"{ready}/{want} replicas ready")
    return Readiness.current(f"{available}/{want} replicas available")


def job_ready(obj: KubeObject) -> Readiness:
    """A Job ``obj`` is ready when it completed, or is suspended (nothing runs until it is resumed).
    ``FAILED`` when it failed (``Failed`` or ``FailureTarget``).
    """
    conditions = conditions_by_type(obj)
    # FailureTarget comes before Failed while the Job's pods are still being stopped.
    for kind in ("Failed", "FailureTarget"):
        if is_true(conditions.get(kind)):
            return Readiness.failed(f"failed: {explain(conditions[kind])}")
    if is_true(conditions.get("Complete")):
        return Readiness.current("complete")
    if spec_of(obj).get("suspend"):
        # Nothing runs until someone resumes it (a queue such as Kueue admits Jobs created
        # suspended): waiting could only time out. Flux's Job status reader says the same.
        return Readiness.current("suspended: runs once resumed, nothing to wait for")
    status = status_of(obj)
    succeeded = count(status, "succeeded")
    completions = spec_of(obj).get("completions")
    done = f"{succeeded}/{completions} completions" if isinstance(completions, int) else f"{succeeded} succeeded"
    return Readiness.in_progress(f"running: {done}, {count(status, 'active')} active")


def job_finished(obj: KubeObject) -> bool:
    conditions = conditions_by_type(obj)
    return any(is_true(conditions.get(kind)) for kind in ("Complete", "Failed"))


def pod_ready(obj: KubeObject) -> Readiness:
    """A Pod ``obj`` is ready when its Ready condition is True, or it succeeded. ``FAILED`` when it failed;
    the message names a waiting container or scheduling problem.
    """
    status = status_of(obj)
    phase = status.get("phase")
    if phase == "Succeeded":
        return Readiness.current("succeeded")
    if phase == "Failed":
        return Readiness.failed(f"failed: {status.get('reason') or status.get('message') or 'phase Failed'}")
    conditions = conditions_by_type(obj)
    if is_true(conditions.get("Ready")):
        return Readiness.current("ready")
    scheduled = conditions.get("PodScheduled")
    if scheduled and scheduled.get("status") == "False":
        return Readiness.in_progress(f"not scheduled: {explain(scheduled)}")
    for container in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return Readiness.in_progress(f"container {container.get('name')} waiting: {waiting['reason']}")
    return Readiness.in_progress(f"not ready (phase {phase or 'unknown'})")


# ----- how a Job finished, by its events -------------------------------------------------------

# The reasons the Job controller records on a Job when it fails it (batch/v1 JobReason*).
_JOB_FAILURE_EVENTS = frozenset({"BackoffLimitExceeded", "DeadlineExceeded", "PodFailurePolicy",
                                 "MaxFailedIndexesExceeded", "FailedIndexes"})


def ttl_after_finished(*objs: KubeObject | None) -> int | None:
    """The first ``spec.ttlSecondsAfterFinished`` among the Job objects ``objs`` (None ones skipped), or None."""
    for obj in objs:
        ttl = spec_of(obj or {}).get("ttlSecondsAfterFinished")
        if isinstance(ttl, int):
            return ttl
    return None


def job_outcome_from_events(events: list[KubeObject], then: str) -> Readiness | None:
    """How a Job finished by the Job controller's last final Event among ``events`` (oldest first):
    current ``complete, then THEN``, failed ``failed: ..., then THEN``, or None when no event says."""
    for event in reversed(events):
        if event.get("reason") == "Completed":
            return Readiness.current(f"complete, then {then}")
        if event.get("reason") in _JOB_FAILURE_EVENTS:
            return Readiness.failed(f"failed: {explain(event)}, then {then}")
    return None
