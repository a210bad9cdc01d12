"""Readiness rules: is one object ready, and why (or why not). Pure: no request, no sleeping.

The rules follow kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), the status logic
kpt and Flux use: a controller must have observed the current generation before
any of its status counts, then each kind has its own notion of done. Every rule
is a small pure predicate ``(obj) -> (ready, reason)`` in ``RULES``, keyed by
GroupKind, so a rule can be read, tested and overridden on its own. Kinds without
a rule fall back to ``conditions_ready``: a ``Ready`` or ``Available`` condition
that is True for the current generation, or no status at all (ready, unless the
caller asks to fail closed on custom resources).

This module also owns the readiness ``overrides`` (JMESPath per kind, checked by
``check_overrides``), the options ``is_ready`` takes (``RULE_OPTIONS``) and how the
Job controller's final Event says a Job finished (``job_outcome_from_events``).
``verdict`` picks the rule: the rules users write in CEL first (``expressions``: an
object's ready-when / failed-when annotations, then ``health_check_exprs``), then the
overrides, the built-in rule of the kind, the bundled library (``library``) and the
generic rule; ``rule_choice`` names the one it picks. A failure is a ``Final`` reason.
Waiting until objects are ready or gone, which sends the requests, is ``waiting``.
"""

from __future__ import annotations

import functools
import json

from ..object_meta import metadata_of
from ..errors import InputError
from .. import spec
from ..spec import GroupKind
from . import expressions, freshness, library


class Final(str):
    """A not-ready reason that no amount of waiting changes (a failed Job, a rejected CRD).

    It is a plain string to everyone else; ``wait_ready`` recognises it and stops
    early instead of sleeping until the timeout.
    """


# ----- small helpers shared by the rules -----------------------------------------------------


def _status(obj: dict) -> dict:
    return obj.get("status") or {}


def _spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def _conditions(obj: dict) -> dict:
    """Conditions by type; later duplicates win, as a controller would have meant."""
    found = {}
    for condition in _status(obj).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type"):
            found[condition["type"]] = condition
    return found


def _is_true(condition: dict | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def _explain(condition: dict) -> str:
    """``reason: message`` of a condition, whichever parts it has."""
    parts = [condition.get("reason"), condition.get("message")]
    return ": ".join(str(p) for p in parts if p) or f"status {condition.get('status')}"


def _generation_not_observed(obj: dict, *, required: bool) -> str | None:
    """Why the status is stale, or None when it describes the current spec.

    Workload controllers always report ``observedGeneration``, so its absence means
    the controller has not seen the object yet (``required``). For other kinds the
    field is optional and only compared when present.
    """
    generation = metadata_of(obj).get("generation")
    observed = _status(obj).get("observedGeneration")
    if generation is None or (observed is None and not required):
        return None
    if observed is None or observed < generation:
        seen = "nothing" if observed is None else f"generation {observed}"
        return f"waiting for the controller to observe generation {generation} (it has seen {seen})"
    return None


def _count(status: dict, key: str) -> int:
    # The API server leaves zero counts out of status.
    value = status.get(key)
    return value if isinstance(value, int) else 0


def _desired_replicas(obj: dict) -> int:
    replicas = _spec(obj).get("replicas")
    return replicas if isinstance(replicas, int) else 1


# ----- the rules ----------------------------------------------------------------------------


def deployment_ready(obj: dict) -> tuple[bool, str]:
    """A Deployment ``obj`` (as read) has rolled out: its generation observed, every replica updated,
    available and ready, no old replica left. Returns ``(ready, reason)``; the reason is ``Final`` when the rollout
    failed (``ProgressDeadlineExceeded``).
    """
    stale = _generation_not_observed(obj, required=True)
    if stale:
        return False, stale
    progressing = _conditions(obj).get("Progressing")
    if progressing and progressing.get("reason") == "ProgressDeadlineExceeded":
        return False, Final(f"rollout failed: {_explain(progressing)}")
    status, want = _status(obj), _desired_replicas(obj)
    updated = _count(status, "updatedReplicas")
    if updated < want:
        return False, f"{updated}/{want} replicas updated"
    old = _count(status, "replicas") - updated
    if old > 0:
        return False, f"{old} old replicas pending termination"
    available = _count(status, "availableReplicas")
    if available < want:
        return False, f"{available}/{want} replicas available"
    ready = _count(status, "readyReplicas")
    if ready < want:
        return False, f"{ready}/{want} replicas ready"
    return True, f"{available}/{want} replicas available"


def statefulset_ready(obj: dict) -> tuple[bool, str]:
    """A StatefulSet ``obj`` has rolled out: its generation observed, every replica ready and available,
    and, for a RollingUpdate, the replicas at or above the partition updated. Returns ``(ready, reason)``.
    """
    stale = _generation_not_observed(obj, required=True)
    if stale:
        return False, stale
    status, want = _status(obj), _desired_replicas(obj)
    ready = _count(status, "readyReplicas")
    if ready < want:
        return False, f"{ready}/{want} replicas ready"
    # availableReplicas is reported since Kubernetes 1.22; before that ready is all we know.
    available = status["availableReplicas"] if isinstance(status.get("availableReplicas"), int) else ready
    if available < want:
        return False, f"{available}/{want} replicas available"
    strategy = _spec(obj).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        # Pods below the partition are deliberately left on the old revision.
        partition = (strategy.get("rollingUpdate") or {}).get("partition") or 0
        to_update = max(0, want - partition)
        updated = _count(status, "updatedReplicas")
        if updated < to_update:
            return False, f"{updated}/{to_update} replicas updated"
        current, update = status.get("currentRevision"), status.get("updateRevision")
        if partition == 0 and current and update and current != update:
            return False, f"rolling update to revision {update} in progress"
    return True, f"{available}/{want} replicas available"


def daemonset_ready(obj: dict) -> tuple[bool, str]:
    """A DaemonSet ``obj`` has rolled out: its generation observed and a pod updated, available and ready
    on every node it is scheduled to. Returns ``(ready, reason)``.
    """
    stale = _generation_not_observed(obj, required=True)
    if stale:
        return False, stale
    status = _status(obj)
    want = _count(status, "desiredNumberScheduled")
    updated = _count(status, "updatedNumberScheduled")
    if updated < want:
        return False, f"{updated}/{want} pods updated"
    available = _count(status, "numberAvailable")
    if available < want:
        return False, f"{available}/{want} pods available"
    ready = _count(status, "numberReady")
    if ready < want:
        return False, f"{ready}/{want} pods ready"
    return True, f"{available}/{want} pods available"


def replicaset_ready(obj: dict) -> tuple[bool, str]:
    """A ReplicaSet ``obj`` has its generation observed and every replica available and ready.
    Returns ``(ready, reason)``.
    """
    stale = _generation_not_observed(obj, required=True)
    if stale:
        return False, stale
    status, want = _status(obj), _desired_replicas(obj)
    available = _count(status, "availableReplicas")
    if available < want:
        return False, f"{available}/{want} replicas available"
    ready = _count(status, "readyReplicas")
    if ready < want:
        return False, f"{ready}/{want} replicas ready"
    return True, f"{available}/{want} replicas available"


def job_ready(obj: dict) -> tuple[bool, str]:
    """A Job ``obj`` is ready when it completed, or is suspended (nothing runs until it is resumed).
    Returns ``(ready, reason)``; the reason is ``Final`` when it failed (``Failed`` or ``FailureTarget``).
    """
    conditions = _conditions(obj)
    # FailureTarget comes before Failed while the Job's pods are still being stopped.
    for kind in ("Failed", "FailureTarget"):
        if _is_true(conditions.get(kind)):
            return False, Final(f"failed: {_explain(conditions[kind])}")
    if _is_true(conditions.get("Complete")):
        return True, "complete"
    if _spec(obj).get("suspend"):
        # Nothing runs until someone resumes it (a queue such as Kueue admits Jobs created
        # suspended): waiting could only time out. Flux's Job status reader says the same.
        return True, "suspended: runs once resumed, nothing to wait for"
    status = _status(obj)
    succeeded = _count(status, "succeeded")
    completions = _spec(obj).get("completions")
    done = f"{succeeded}/{completions} completions" if isinstance(completions, int) else f"{succeeded} succeeded"
    return False, f"running: {done}, {_count(status, 'active')} active"


def _job_finished(obj: dict) -> bool:
    conditions = _conditions(obj)
    return any(_is_true(conditions.get(kind)) for kind in ("Complete", "Failed"))


def pod_ready(obj: dict) -> tuple[bool, str]:
    """A Pod ``obj`` is ready when its Ready condition is True, or it succeeded. Returns ``(ready, reason)``; the
    reason is ``Final`` when it failed, and names a waiting container or scheduling problem.
    """
    status = _status(obj)
    phase = status.get("phase")
    if phase == "Succeeded":
        return True, "succeeded"
    if phase == "Failed":
        return False, Final(f"failed: {status.get('reason') or status.get('message') or 'phase Failed'}")
    conditions = _conditions(obj)
    if _is_true(conditions.get("Ready")):
        return True, "ready"
    scheduled = conditions.get("PodScheduled")
    if scheduled and scheduled.get("status") == "False":
        return False, f"not scheduled: {_explain(scheduled)}"
    for container in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return False, f"container {container.get('name')} waiting: {waiting['reason']}"
    return False, f"not ready (phase {phase or 'unknown'})"


def pvc_ready(obj: dict) -> tuple[bool, str]:
    """A PersistentVolumeClaim ``obj`` is ready when Bound. Returns ``(ready, reason)``; the reason is ``Final`` when
    Lost.
    """
    phase = _status(obj).get("phase")
    if phase == "Bound":
        return True, "Bound"
    if phase == "Lost":
        return False, Final("Lost: its PersistentVolume is gone")
    return False, f"phase {phase or 'Pending'}, not Bound"


def crd_ready(obj: dict) -> tuple[bool, str]:
    """A CustomResourceDefinition ``obj`` is ready when Established. Returns ``(ready, reason)``; the reason is
    ``Final`` when its names were not accepted.
    """
    conditions = _conditions(obj)
    if _is_true(conditions.get("Established")):
        return True, "Established"
    names = conditions.get("NamesAccepted")
    if names and names.get("status") == "False":
        return False, Final(f"names not accepted: {_explain(names)}")
    return False, "not Established yet"


def namespace_ready(obj: dict) -> tuple[bool, str]:
    """A Namespace ``obj`` is ready when Active (not Terminating). Returns ``(ready, reason)``."""
    phase = _status(obj).get("phase")
    if phase == "Active":
        return True, "Active"
    return False, f"phase {phase or 'unknown'}, not Active"


def load_balancer_ready(obj: dict) -> tuple[bool, str]:
    """A Service ``obj`` of type LoadBalancer is ready once it has an address; other types always are.

    Returns ``(ready, reason)``; the reason names the address.
    """
    service_type = _spec(obj).get("type") or "ClusterIP"
    if service_type != "LoadBalancer":
        return True, f"type {service_type}"
    ingress = ((_status(obj).get("loadBalancer") or {}).get("ingress")) or []
    found = [entry.get("ip") or entry.get("hostname") for entry in ingress if isinstance(entry, dict)]
    addresses: list[str] = [address for address in found if address]
    if addresses:
        return True, f"load balancer at {', '.join(addresses)}"
    return False, "waiting for a load balancer address"


def conditions_ready(obj: dict) -> tuple[bool, str]:
    """The generic rule for ``obj``: a current status whose Ready (or else Available) condition is True.

    No status at all, or neither condition, is ready; ``Stalled`` or ``Reconciling`` True is not
    (Stalled with a ``Final`` reason). Returns ``(ready, reason)``.
    """
    if not _status(obj):
        return True, "no status to check"
    stale = _generation_not_observed(obj, required=False)
    if stale:
        return False, stale
    conditions = _conditions(obj)
    # kstatus' abnormal-true conditions: the controller says it is not done.
    # Stalled is kstatus' Failed: the controller gave up, so waiting stops at once (cli-utils
    # pkg/kstatus/status/core.go, checkGenericProperties).
    if _is_true(conditions.get("Stalled")):
        return False, Final(f"Stalled: {_explain(conditions['Stalled'])}")
    if _is_true(conditions.get("Reconciling")):
        return False, f"Reconciling: {_explain(conditions['Reconciling'])}"
    generation = metadata_of(obj).get("generation")
    for kind in ("Ready", "Available"):
        condition = conditions.get(kind)
        if not condition:
            continue
        observed = condition.get("observedGeneration")
        if isinstance(observed, int) and isinstance(generation, int) and observed < generation:
            return False, f"condition {kind} is from generation {observed}, not {generation}"
        if condition.get("status") == "True":
            return True, kind
        return False, f"{kind} is {condition.get('status')}: {_explain(condition)}"
    return True, "no Ready or Available condition"


RULES = {
    GroupKind("apps", "Deployment"): deployment_ready,
    GroupKind("apps", "StatefulSet"): statefulset_ready,
    GroupKind("apps", "DaemonSet"): daemonset_ready,
    GroupKind("apps", "ReplicaSet"): replicaset_ready,
    spec.JOB_KIND: job_ready,
    GroupKind("", "Pod"): pod_ready,
    GroupKind("", "PersistentVolumeClaim"): pvc_ready,
    spec.CRD_KIND: crd_ready,
    spec.NAMESPACE_KIND: namespace_ready,
    spec.SERVICE_KIND: load_balancer_ready,  # only with wait_for_load_balancers, see is_ready
}

# Built-in kinds with nothing to wait for: waiting does not even read them.
ALWAYS_READY = frozenset({
    spec.CONFIGMAP_KIND,
    spec.SECRET_KIND,
    GroupKind("", "ServiceAccount"),
    GroupKind("", "LimitRange"),
    GroupKind("", "ResourceQuota"),
    GroupKind("", "Endpoints"),
    GroupKind("rbac.authorization.k8s.io", "Role"),
    GroupKind("rbac.authorization.k8s.io", "RoleBinding"),
    GroupKind("rbac.authorization.k8s.io", "ClusterRole"),
    GroupKind("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    GroupKind("networking.k8s.io", "NetworkPolicy"),
    GroupKind("networking.k8s.io", "IngressClass"),
    GroupKind("scheduling.k8s.io", "PriorityClass"),
    GroupKind("storage.k8s.io", "StorageClass"),
    GroupKind("node.k8s.io", "RuntimeClass"),
    GroupKind("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
    GroupKind("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
})

# API groups served by Kubernetes itself; any other group holds custom resources.
# (Listed, not matched by suffix: CRDs such as gateway.networking.k8s.io end in .k8s.io too.)
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "extensions",
    "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io",
    "authentication.k8s.io", "authorization.k8s.io", "certificates.k8s.io", "coordination.k8s.io",
    "discovery.k8s.io", "events.k8s.io", "flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io",
    "networking.k8s.io", "node.k8s.io", "rbac.authorization.k8s.io", "resource.k8s.io",
    "scheduling.k8s.io", "storage.k8s.io", "storagemigration.k8s.io", "metrics.k8s.io",
})


def is_custom(group_kind: GroupKind) -> bool:
    """Whether ``group_kind`` is a custom resource: its group is not one Kubernetes itself serves."""
    return group_kind.group not in BUILTIN_GROUPS


# ----- overrides ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _compile(expression: str):
    try:
        import jmespath
    except ImportError:
        raise InputError(
            "readiness overrides need the Python package 'jmespath'",
            obj="wait overrides", fix="pip install jmespath (it is listed in requirements.txt)",
        ) from None
    try:
        return jmespath.compile(expression)
    except jmespath.exceptions.JMESPathError as err:
        raise InputError(
            f"invalid JMESPath expression {expression!r}: {err}", obj="wait overrides",
            fix="check the expression, e.g. \"status.phase == 'Ready'\"",
        ) from None


def check_overrides(overrides: dict | None) -> None:
    """Check the readiness ``overrides`` (``{"Kind" or "Kind.group": JMESPath}``, or None) before any
    waiting starts.

    Raises:
        InputError: not a mapping, an empty key or expression, an expression that does not
            compile, or the ``jmespath`` package is missing.
    """
    if overrides is None:
        return
    if not isinstance(overrides, dict):
        raise InputError("readiness overrides must be a mapping of Kind or Kind.group to a JMESPath expression",
                         obj="wait overrides", fix='e.g. {"Widget.example.com": "status.ready"}')
    for key, expression in overrides.items():
        if not isinstance(key, str) or not key or not isinstance(expression, str) or not expression.strip():
            raise InputError(f"override {key!r}: expected a Kind or Kind.group and a JMESPath expression",
                             obj="wait overrides", fix='e.g. {"Widget.example.com": "status.ready"}')
        _compile(expression)


def _override_for(group_kind: GroupKind, overrides: dict | None) -> str | None:
    """``Kind.group`` wins over a bare ``Kind``, which matches the kind in any group."""
    if not overrides:
        return None
    for key in (str(group_kind), group_kind.kind):
        if key in overrides:
            return overrides[key]
    return None


def _short(value) -> str:
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _override_ready(obj: dict, expression: str) -> tuple[bool, str]:
    value = _compile(expression).search(obj)
    # Python truthiness, so that a count of 0 means not ready (JMESPath would call 0 true).
    if value:
        return True, f"override `{expression}` holds"
    return False, f"override `{expression}` is {_short(value)}"


# ----- the public check ---------------------------------------------------------------------


def group_kind_of(obj: dict) -> GroupKind:
    """The group and kind of a manifest or live object ``obj``, from its apiVersion and kind ("" when missing)."""
    api_version = obj.get("apiVersion") or ""
    group = api_version.rpartition("/")[0]
    return GroupKind(group, obj.get("kind") or "")


def is_ready(obj: dict, *, fail_closed: bool = False, overrides: dict | None = None,
             wait_for_load_balancers: bool = False, health_check_exprs: list | None = None) -> tuple[bool, str]:
    """Say whether one live object is ready, and why (or why not).

    ``fail_closed``: a custom resource without any status is not ready (by default it is,
    because many custom resources have no controller reporting status at all).
    ``overrides``: ``{"Kind" or "Kind.group": JMESPath expression}``; a truthy result on
    the object means ready, and replaces the built-in rule of that kind.
    ``wait_for_load_balancers``: Services of type LoadBalancer (and Ingresses) wait for an address.
    ``health_check_exprs``: Flux's ``healthCheckExprs`` (``expressions``), CEL per kind.

    Args:
        obj: the object as read from the server (status included).

    Returns:
        ``(ready, reason)``, the reason a plain string (``1/3 replicas available``).

    Raises:
        InputError: an override expression that does not compile, or ``jmespath`` (or, for CEL
            rules, ``cel-python``) is missing.
    """
    ready, reason = verdict(obj, fail_closed=fail_closed, overrides=overrides,
                            wait_for_load_balancers=wait_for_load_balancers, health_check_exprs=health_check_exprs)
    return ready, str(reason)  # a plain str: results are serialised by type


def verdict(obj: dict, *, fail_closed: bool = False, overrides: dict | None = None,
            wait_for_load_balancers: bool = False, health_check_exprs: list | None = None,
            field_manager: str | None = None) -> tuple[bool, str]:
    """``is_ready`` of ``obj``, keeping a ``Final`` reason recognisable for the waiting loop.

    The rules, first that applies: the object's ready-when / failed-when annotations, the
    ``health_check_exprs`` entry of its kind, the ``overrides`` expression of its kind, the built-in
    rule of its kind, the bundled library's (``library``), then the generic rule.
    ``field_manager``: the field manager the run applied with; a failure the status reported before
    that apply does not count, for objects whose controller reports no generation (``freshness``).
    """
    group_kind = group_kind_of(obj)
    if metadata_of(obj).get("deletionTimestamp"):
        if group_kind == spec.JOB_KIND and _job_finished(obj):
            # The TTL controller deletes finished Jobs in the foreground: the Job stays
            # readable, with its final condition, until its Pods are gone.
            return job_ready(obj)
        return False, "being deleted"
    annotated = expressions.annotation_rule(obj)
    if annotated:
        decided = expressions.judge_annotations(obj, annotated)
        if decided is not None:
            return _answer(obj, *decided, field_manager=field_manager)
    chosen = expressions.entry_for(group_kind, health_check_exprs)
    if chosen is not None:
        return _answer(obj, *expressions.judge_entry(obj, *chosen), field_manager=field_manager)
    expression = _override_for(group_kind, overrides)
    if expression is not None:
        return _override_ready(obj, expression)
    if group_kind == spec.SERVICE_KIND and not wait_for_load_balancers:
        return True, "Service (load balancer address not awaited)"
    rule = RULES.get(group_kind)
    if rule is not None:
        return rule(obj)
    entry = library.entry_for(group_kind, obj, custom=is_custom(group_kind), load_balancers=wait_for_load_balancers)
    if entry is not None:
        if entry.needs_status and not _status(obj):
            return False, f"no status reported yet ({entry.name} needs its controller's status)"
        return _answer(obj, *entry.judge(obj), field_manager=field_manager, reported=entry.reported)
    if fail_closed and is_custom(group_kind) and not _status(obj):
        return False, "no status reported yet (fail_closed)"
    ready, reason = conditions_ready(obj)
    if isinstance(reason, Final):
        older = freshness.older_than_our_write(obj, field_manager)
        if older:
            return False, f"{reason} ({older})"
    return ready, reason


def _answer(obj: dict, outcome: str, reason: str, *, field_manager: str | None,
            reported=freshness.status_write) -> tuple[bool, str]:
    """A ``library`` outcome as a verdict: a failure is ``Final``, so that waiting stops at once,
    unless the status reported it before our apply (then it waits for the controller's next word)."""
    if outcome == library.FAILED:
        older = freshness.older_than_our_write(obj, field_manager, reported)
        if older:
            return False, f"{reason} ({older})"
        return False, Final(f"failed: {reason}")
    return outcome == library.READY, reason


def needs_reading(group_kind: GroupKind, overrides: dict | None, wait_for_load_balancers: bool,
                  health_check_exprs: list | None = None) -> bool:
    """Whether waiting must read objects of ``group_kind`` to judge them, given the rule options."""
    if _override_for(group_kind, overrides) is not None:
        return True
    if expressions.entry_for(group_kind, health_check_exprs) is not None:
        return True
    if group_kind == spec.SERVICE_KIND:
        return wait_for_load_balancers
    return group_kind not in ALWAYS_READY


RULE_OPTIONS = frozenset({"fail_closed", "overrides", "wait_for_load_balancers", "health_check_exprs"})  # is_ready's


# ----- how a Job finished, by its events -------------------------------------------------------

# The reasons the Job controller records on a Job when it fails it (batch/v1 JobReason*).
_JOB_FAILURE_EVENTS = frozenset({"BackoffLimitExceeded", "DeadlineExceeded", "PodFailurePolicy",
                                 "MaxFailedIndexesExceeded", "FailedIndexes"})


def ttl_after_finished(*objs) -> int | None:
    """The first ``spec.ttlSecondsAfterFinished`` among the Job objects ``objs`` (None ones skipped), or None."""
    for obj in objs:
        ttl = _spec(obj or {}).get("ttlSecondsAfterFinished")
        if isinstance(ttl, int):
            return ttl
    return None


def job_outcome_from_events(events: list, then: str) -> tuple[bool, str] | None:
    """How a Job finished by the Job controller's last final Event among ``events`` (oldest first).

    Returns ``(True, "complete, then THEN")``, ``(False, Final("failed: ..., then THEN"))``, or None
    when no event says.
    """
    for event in reversed(events):
        if event.get("reason") == "Completed":
            return True, f"complete, then {then}"
        if event.get("reason") in _JOB_FAILURE_EVENTS:
            return False, Final(f"failed: {_explain(event)}, then {then}")
    return None
