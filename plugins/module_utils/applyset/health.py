"""Readiness: is an object ready, and waiting until a set of objects is ready (or gone).

The rules follow kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), the status logic
kpt and Flux use: a controller must have observed the current generation before
any of its status counts, then each kind has its own notion of done. Every rule
is a small pure predicate ``(obj) -> (ready, reason)`` in ``RULES``, keyed by
GroupKind, so a rule can be read, tested and overridden on its own. Kinds without
a rule fall back to ``conditions_ready``: a ``Ready`` or ``Available`` condition
that is True for the current generation, or no status at all (ready, unless the
caller asks to fail closed on custom resources).

Waiting polls with one LIST per (resource, namespace) and round, not one GET per
object, and drops objects from the rounds as soon as they are ready. A timeout
(or an object that can never become ready, such as a failed Job) raises
``WaitTimeout`` naming every object still waited for and why, for example
``Deployment shop/web: 1/3 replicas available``.
"""

from __future__ import annotations

import functools
import json
import time

from .errors import ApiError, ApplySetError, InputError, WaitTimeout
from . import spec
from .spec import GroupKind


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
    return bool(condition) and condition.get("status") == "True"


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
    generation = (obj.get("metadata") or {}).get("generation")
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
    addresses = [entry.get("ip") or entry.get("hostname") for entry in ingress if isinstance(entry, dict)]
    addresses = [address for address in addresses if address]
    if addresses:
        return True, f"load balancer at {', '.join(addresses)}"
    return False, "waiting for a load balancer address"


def conditions_ready(obj: dict) -> tuple[bool, str]:
    """The generic rule for ``obj``: a current status whose Ready (or else Available) condition is True.

    No status at all, or neither condition, is ready; ``Stalled`` or ``Reconciling`` True is not.
    Returns ``(ready, reason)``.
    """
    if not _status(obj):
        return True, "no status to check"
    stale = _generation_not_observed(obj, required=False)
    if stale:
        return False, stale
    conditions = _conditions(obj)
    # kstatus' abnormal-true conditions: the controller says it is not done.
    for kind in ("Stalled", "Reconciling"):
        if _is_true(conditions.get(kind)):
            return False, f"{kind}: {_explain(conditions[kind])}"
    generation = (obj.get("metadata") or {}).get("generation")
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
             wait_for_load_balancers: bool = False) -> tuple[bool, str]:
    """Say whether one live object is ready, and why (or why not).

    ``fail_closed``: a custom resource without any status is not ready (by default it is,
    because many custom resources have no controller reporting status at all).
    ``overrides``: ``{"Kind" or "Kind.group": JMESPath expression}``; a truthy result on
    the object means ready, and replaces the built-in rule of that kind.
    ``wait_for_load_balancers``: Services of type LoadBalancer wait for an address.

    Args:
        obj: the object as read from the server (status included).

    Returns:
        ``(ready, reason)``, the reason a plain string (``1/3 replicas available``).

    Raises:
        InputError: an override expression that does not compile, or ``jmespath`` is missing.
    """
    ready, reason = _verdict(obj, fail_closed=fail_closed, overrides=overrides,
                             wait_for_load_balancers=wait_for_load_balancers)
    return ready, str(reason)  # a plain str: results are serialised by type


def _verdict(obj: dict, *, fail_closed: bool = False, overrides: dict | None = None,
             wait_for_load_balancers: bool = False) -> tuple[bool, str]:
    """``is_ready``, keeping a ``Final`` reason recognisable for the waiting loop."""
    group_kind = group_kind_of(obj)
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        if group_kind == spec.JOB_KIND and _job_finished(obj):
            # The TTL controller deletes finished Jobs in the foreground: the Job stays
            # readable, with its final condition, until its Pods are gone.
            return job_ready(obj)
        return False, "being deleted"
    expression = _override_for(group_kind, overrides)
    if expression is not None:
        return _override_ready(obj, expression)
    if group_kind == spec.SERVICE_KIND and not wait_for_load_balancers:
        return True, "Service (load balancer address not awaited)"
    rule = RULES.get(group_kind)
    if rule is not None:
        return rule(obj)
    if fail_closed and is_custom(group_kind) and not _status(obj):
        return False, "no status reported yet (fail_closed)"
    return conditions_ready(obj)


def _needs_reading(group_kind: GroupKind, overrides: dict | None, wait_for_load_balancers: bool) -> bool:
    if _override_for(group_kind, overrides) is not None:
        return True
    if group_kind == spec.SERVICE_KIND:
        return wait_for_load_balancers
    return group_kind not in ALWAYS_READY


# ----- waiting ------------------------------------------------------------------------------

_MAX_LISTED_IN_MESSAGE = 20
RULE_OPTIONS = frozenset({"fail_closed", "overrides", "wait_for_load_balancers"})
_RULE_OPTIONS = RULE_OPTIONS


def _ref(res, namespace: str | None, name: str) -> str:
    return f"{res.kind} {namespace}/{name}" if res.namespaced and namespace else f"{res.kind} {name}"


def _entry(target, reason: str) -> dict:
    res, namespace, name = target
    return {"apiVersion": res.api_version, "kind": res.kind,
            "namespace": namespace if res.namespaced else None, "name": name, "reason": str(reason)}


def _normalise(targets) -> list:
    """Distinct (resource, namespace, name) targets, namespace None for cluster-scoped kinds."""
    seen, result = set(), []
    for res, namespace, name in targets:
        target = (res, namespace if res.namespaced else None, name)
        if target not in seen:
            seen.add(target)
            result.append(target)
    return result


def _list_by_name(client, res, namespace, metadata_only: bool) -> dict:
    items = {}
    for item in client.list(res, namespace, metadata_only=metadata_only):
        # LIST items carry no apiVersion/kind of their own; the rules need them.
        item.setdefault("apiVersion", res.api_version)
        item.setdefault("kind", res.kind)
        items.setdefault((item.get("metadata") or {}).get("name"), item)
    return items


def _poll(client, targets, *, timeout: float, interval: float, judge, metadata_only: bool,
          waiting_for: str, raise_on_timeout: bool) -> list[dict]:
    """Poll until ``judge(target, item or None)`` says done for every target.

    ``judge`` returns ``(done, reason)``; a ``Final`` reason stops the wait early.
    """
    total = len(targets)
    pending = {target: "not checked yet" for target in targets}
    deadline = time.monotonic() + max(0.0, float(timeout))
    while pending:
        groups: dict = {}
        for target in pending:
            groups.setdefault(target[:2], []).append(target)
        keys = list(groups)
        listed = client.map(lambda key: _list_by_name(client, key[0], key[1], metadata_only), keys)
        final = False
        for key, items in zip(keys, listed):
            for target in groups[key]:
                done, reason = _judge_listed(target, items, judge)
                if done:
                    del pending[target]
                else:
                    pending[target] = reason
                    final = final or isinstance(reason, Final)
        now = time.monotonic()
        if not pending:
            break
        if final or now >= deadline:
            return _give_up(pending, total, timeout, waiting_for, final, raise_on_timeout)
        time.sleep(max(0.0, min(interval, deadline - now)))
    return []


def _judge_listed(target, items, judge) -> tuple[bool, str]:
    res, namespace, name = target
    if isinstance(items, ApiError) and items.status == 404:
        return judge(target, None)  # the kind is not served (any more): nothing of it exists
    if isinstance(items, ApiError) and items.status in (401, 403):
        where = f" in namespace {namespace}" if namespace else ""
        raise ApplySetError(
            f"cannot list {res.kind} objects{where} to wait for them: {items.message}",
            obj=_ref(res, namespace, name),
            fix=f"the credentials need list on {res.plural}{'.' + res.group if res.group else ''}, "
                "or turn waiting off",
        )
    if isinstance(items, Exception):
        return False, f"could not be read: {items}"
    return judge(target, items.get(name))


def _give_up(pending: dict, total: int, timeout: float, waiting_for: str, final: bool,
             raise_on_timeout: bool) -> list[dict]:
    unready = [_entry(target, reason) for target, reason in pending.items()]
    if not raise_on_timeout:
        return unready
    lines = [f"{_ref(*target)}: {reason}" for target, reason in pending.items()]
    if len(lines) > _MAX_LISTED_IN_MESSAGE:
        lines = lines[:_MAX_LISTED_IN_MESSAGE] + [f"and {len(lines) - _MAX_LISTED_IN_MESSAGE} more"]
    if final:
        head = f"stopped waiting: {len(pending)} of {total} objects cannot become {waiting_for}"
        fix = "look at the failed objects and their events (kubectl describe), fix them and run again"
    elif waiting_for == "gone":
        head = f"{len(pending)} of {total} objects not {waiting_for} after {timeout:g}s"
        fix = ("each finalizer named is removed by the controller that set it once its cleanup is done: check that "
               "it runs (kubectl describe, its logs), or raise wait_timeout if it is only slow; removing a "
               "finalizer by hand skips that cleanup")
    else:
        head = f"{len(pending)} of {total} objects not {waiting_for} after {timeout:g}s"
        fix = "look at the objects and their events (kubectl describe); raise wait_timeout if they are only slow"
    raise WaitTimeout(f"{head}: {'; '.join(lines)}", fix=fix, details={"unready": unready})


def wait_ready(client, targets, *, timeout: float, interval: float = 1.0, raise_on_timeout: bool = True,
               applied: dict | None = None, **rule_options) -> list[dict]:
    """Wait until every target is ready; ``targets`` are ``(Resource, namespace or None, name)``.

    ``client`` is the ``KubeClient`` that lists them, once per (resource, namespace) every
    ``interval`` seconds; objects of kinds with nothing to wait for are not read at all.

    ``rule_options`` are ``is_ready``'s keywords (``fail_closed``, ``overrides``,
    ``wait_for_load_balancers``). ``applied`` maps targets to the objects as this run
    applied them, ``metadata.uid`` included: it tells the object we applied from one that
    replaced it, and an object that went away by design (a finished Job removed by its
    ``ttlSecondsAfterFinished``) from one deleted by someone (see ``_gone_verdict``).
    Returns ``[]`` once all are ready. Otherwise, after ``timeout`` seconds or as soon as
    one object can never become ready (a failed Job, an applied object deleted), raises
    ``WaitTimeout`` listing each unready object and why, with
    ``details={"unready": [{apiVersion, kind, namespace, name, reason}, ...]}``; with
    ``raise_on_timeout=False`` that list is returned instead.

    Raises:
        WaitTimeout: as said above.
        InputError: malformed ``overrides`` (see ``check_overrides``), before any request.
        ApiError: a LIST that fails (``ConnectionFailed`` without an answer).
        TypeError: an unknown keyword in ``rule_options`` (a programming error).
    """
    unknown = set(rule_options) - _RULE_OPTIONS
    if unknown:
        raise TypeError(f"wait_ready() got unexpected rule options: {', '.join(sorted(unknown))}")
    check_overrides(rule_options.get("overrides"))
    overrides = rule_options.get("overrides")
    load_balancers = bool(rule_options.get("wait_for_load_balancers"))
    to_read = [t for t in _normalise(targets) if _needs_reading(t[0].group_kind, overrides, load_balancers)]
    known = {(res, ns if res.namespaced else None, name): obj for (res, ns, name), obj in (applied or {}).items()}
    tracker = _GoneTracker(client)

    def judge(target, item):
        mine = known.get(target)
        our_uid = _uid(mine)
        if item is not None and our_uid and _uid(item) and _uid(item) != our_uid:
            return tracker.verdict(target, mine, replaced_by=item)
        if item is None:
            if not our_uid:
                return False, "not found"
            return tracker.verdict(target, mine)
        tracker.seen[target] = item
        return _verdict(item, **rule_options)

    return _poll(client, to_read, timeout=timeout, interval=interval, judge=judge, metadata_only=False,
                 waiting_for="ready", raise_on_timeout=raise_on_timeout)


# ----- objects that go away -------------------------------------------------------------------
#
# What kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) does with objects that go away or
# stop on purpose, and what we take from it:
# - deletionTimestamp set: Terminating, not Current. Kept, except for a finished Job, which the
#   TTL controller deletes in the foreground: its final condition still holds (see _verdict).
# - Not found: NotFound; kstatus alone cannot tell "not created yet" from "deleted". We know
#   the UID each object had when we applied it, so a UID that disappeared means the object was
#   deleted after our apply, and waiting cannot bring it back: final, unless deleting it is what
#   the object's own spec asks for.
# - Jobs: Complete is Current, Failed is Failed; a running Job is Current to kstatus, which we
#   do not follow (waiting for a Job means waiting for it to finish, as Flux and Helm do). A
#   suspended Job is Current to Flux's Job reader: nothing runs until it is resumed; mirrored.
# - The only built-in object that deletes itself soon after it is applied is a Job with
#   ttlSecondsAfterFinished (the TTL controller). Finished Pods are garbage-collected only past
#   a cluster-wide threshold (12,500 by default) and Events expire after an hour: neither is
#   "soon after apply". Pods and ReplicaSets owned by a controller are not applied by us.

# The reasons the Job controller records on a Job when it fails it (batch/v1 JobReason*).
_JOB_FAILURE_EVENTS = frozenset({"BackoffLimitExceeded", "DeadlineExceeded", "PodFailurePolicy",
                                 "MaxFailedIndexesExceeded", "FailedIndexes"})
# Rounds to look for the Job's final event before going by its TTL alone: the Job
# controller records the event asynchronously, so it may land just after the deletion.
_EVENT_ROUNDS = 3


def _uid(obj: dict | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("uid") or None


def _ttl_after_finished(*objs) -> int | None:
    for obj in objs:
        ttl = _spec(obj or {}).get("ttlSecondsAfterFinished")
        if isinstance(ttl, int):
            return ttl
    return None


def job_outcome_events(client, namespace: str, uid: str) -> list[dict]:
    """The Events recorded in ``namespace`` on the object whose UID is ``uid``, oldest first.

    ``client`` is the ``KubeClient`` to read them with. Events are a hint: when they cannot be
    read (forbidden, expired), the result is ``[]``; this never raises.
    """
    try:
        body = client.request("GET", f"/api/v1/namespaces/{namespace}/events",
                              query={"fieldSelector": f"involvedObject.uid={uid}"}).body
    except ApplySetError:  # events are a hint: unreadable (forbidden, expired, no answer) means no hint
        return []
    items = [e for e in (body or {}).get("items") or [] if isinstance(e, dict)]
    return sorted(items, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))


class _GoneTracker:
    """Judges targets whose applied object (by UID) is no longer there."""

    def __init__(self, client):
        self.client = client
        self.seen: dict = {}  # target -> the object as last read, for its spec
        self.looked: dict = {}  # target -> rounds spent looking for a Job's final event

    def verdict(self, target, mine: dict, replaced_by: dict | None = None) -> tuple[bool, str]:
        res, namespace, _name = target
        replaced = f" (a new object with uid {_uid(replaced_by)} took its name)" if replaced_by else ""
        ttl = _ttl_after_finished(self.seen.get(target), mine) if res.group_kind == spec.JOB_KIND else None
        if ttl is None:
            return False, Final(f"deleted while waiting{replaced}: the object applied (uid {_uid(mine)}) is gone")
        # The TTL controller deletes a Job only once it has a Complete or Failed condition,
        # so a Job with ttlSecondsAfterFinished that vanished has finished, unless a person
        # or a tool deleted it first. The Job controller's final Event on that UID says which
        # way it finished; without one we go by the TTL, as the Job asked to be removed.
        ours = f"removed by its ttlSecondsAfterFinished ({ttl}s) after it finished{replaced}"
        for event in reversed(job_outcome_events(self.client, namespace, _uid(mine))):
            if event.get("reason") == "Completed":
                return True, f"complete, then {ours}"
            if event.get("reason") in _JOB_FAILURE_EVENTS:
                return False, Final(f"failed: {_explain(event)}, then {ours}")
        rounds = self.looked[target] = self.looked.get(target, 0) + 1
        if rounds < _EVENT_ROUNDS:
            return False, f"gone; looking for the event that says how it finished ({ours})"
        return True, f"finished and {ours} (no event recorded whether it succeeded)"


def _still_there(item) -> tuple[bool, str]:
    if item is None:
        return True, "gone"
    meta = item.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        finalizers = meta.get("finalizers") or []
        waiting_on = f"; finalizers: {', '.join(finalizers)}" if finalizers else ""
        return False, f"being deleted{waiting_on}"
    return False, "still exists"


def wait_gone(client, targets, *, timeout: float, interval: float = 1.0, raise_on_timeout: bool = True,
              uids: dict | None = None) -> list[dict]:
    """Wait until no target exists any more (deleted objects whose finalizers are done).

    Same ``client``, targets, ``interval``, result, ``raise_on_timeout`` and ``WaitTimeout`` after
    ``timeout`` seconds as ``wait_ready``; reads metadata only. ``uids`` maps targets to the UID
    of the object deleted: a new object under the same name (a reinstall already under way) does
    not keep the wait going. Raises ``WaitTimeout``, or ``ApiError`` for a LIST that fails.
    """
    known = {(res, ns if res.namespaced else None, name): uid for (res, ns, name), uid in (uids or {}).items()}

    def judge(target, item):
        if item is not None and known.get(target) and _uid(item) and _uid(item) != known[target]:
            return True, "gone (a new object took its name)"
        return _still_there(item)

    return _poll(client, _normalise(targets), timeout=timeout, interval=interval, judge=judge,
                 metadata_only=True, waiting_for="gone", raise_on_timeout=raise_on_timeout)
