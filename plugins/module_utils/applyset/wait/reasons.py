"""Why a wait failed: for each object that did not become ready, its latest Warning events and
its pods' states (container waiting reasons such as ``ImagePullBackOff`` or ``CrashLoopBackOff``,
a pod the scheduler could not place; a Job whose pods cannot be created has its controller's
``FailedCreate`` event, such as a ServiceAccount not found) and what the failing containers
printed last (``container_logs``), so that an operator without kubectl reads the cause in
the result.

Bounded: at most ``MAX_OBJECTS`` unready objects are explained, with one LIST of Warning events
per namespace and one LIST of pods per workload (by its selector); every read that fails is left
out (a hint, never a second error); at most ``container_logs.MAX_CONTAINERS`` logs are read. Texts are cut to ``MAX_TEXT`` characters; the module's
result masking applies to them as to the rest of the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from ..object_meta import KubeObject, conditions_of, metadata_of, uid_of
from ..kube.api import KubeApi
from ..errors import ApplySetError, WaitTimeout
from ..kube.discovery import Resource
from ..spec import ObjectId
from . import container_logs, waiting
from .waiting import ByTarget, TargetLike, Unready

MAX_OBJECTS = 5
MAX_EVENTS = 3
MAX_PODS = 3
MAX_TEXT = 300
_POD = Resource(group="", version="v1", kind="Pod", plural="pods", namespaced=True)
_JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"  # set by the Job controller on its pods (Kubernetes 1.27+)
# A pod's state in an unready entry (``_pod_state``): name, phase, unschedulable, containers
# (each with ``container_logs.LogTail``'s keys once read) and events.
PodState = dict[str, Any]


class EventSeen(TypedDict):
    """One Warning event as an unready entry shows it (``_latest``)."""

    reason: str | None
    message: str
    count: int
    time: str


@dataclass(frozen=True)
class WaitSettings:
    """How a run waits for objects to be ready: within ``timeout`` seconds, by the readiness
    ``rules`` (``readiness.RULE_OPTIONS``), a failure older than the run's apply as
    ``field_manager`` not counted, and with the failing containers' last log lines when it times
    out (``failure_logs``). ``run.options.Options.wait_settings`` builds it."""

    timeout: float
    rules: Mapping[str, Any] = field(default_factory=dict)  # readiness.RULE_OPTIONS
    field_manager: str | None = None
    failure_logs: bool = True


def as_applied(body: KubeObject, uid: str | None) -> KubeObject:
    """``body`` with the UID the server gave it: the wait then tells the object this run applied
    from one that replaced it, and a Job its TTL removed from one deleted under it."""
    return {**body, "metadata": {**body["metadata"], "uid": uid}}


def bodies_by_ref(applied: ByTarget[KubeObject]) -> dict[ObjectId, KubeObject]:
    """``{(Resource, namespace, name): body}`` keyed as ``explain`` looks them up: by ``ObjectId``."""
    return {waiting.normalised(target).id: body for target, body in applied.items()}


def wait_ready_or_explain(client: KubeApi, targets: Sequence[TargetLike], applied: ByTarget[KubeObject],
                          settings: WaitSettings,
                          warn: Callable[[str], None] | None = None) -> None:
    """``waiting.wait_ready`` of ``targets`` (``applied``: their bodies as applied, ``as_applied``);
    when it times out or an object cannot become ready, its ``WaitTimeout`` with what ``explain``
    found about each unready object (events, pods, logs)."""
    try:
        waiting.wait_ready(client, targets, timeout=settings.timeout, applied=applied, warn=warn,
                           field_manager=settings.field_manager, **settings.rules)
    except WaitTimeout as err:
        raise explain(client, err, bodies_by_ref(applied), logs=settings.failure_logs) from None


def explain(client: KubeApi, err: WaitTimeout, bodies: Mapping[ObjectId, KubeObject], *,
            logs: bool = True) -> WaitTimeout:
    """``err`` with each unready object's events and pods added to ``details.unready`` and a
    short cause per object appended to the message.

    Args:
        bodies: ``{ObjectId: object as applied}`` (for the pod selector and uid; ``bodies_by_ref``).
        logs: read the last lines of the failing containers' logs into their entries
            (``pods[].containers[].log``; the option ``failure_logs``).
    """
    log_budget = container_logs.MAX_CONTAINERS if logs else 0
    unready: list[Unready] = list((err.details or {}).get("unready") or [])
    events_by_ns: dict[str, list[KubeObject]] = {}
    causes = []
    for entry in unready[:MAX_OBJECTS]:
        namespace: str = entry.get("namespace") or ""  # "" when cluster-scoped: no events or pods read
        if namespace and namespace not in events_by_ns:
            events_by_ns[namespace] = _warning_events(client, namespace)
        events = events_by_ns.get(namespace) or []
        body = _applied_body(entry, bodies)
        uid = uid_of(body)
        entry["events"] = _latest(e for e in events if _about(e, entry["kind"], entry["name"], uid))
        pods = _pods(client, namespace, body) if namespace else []
        if pods:
            entry["pods"] = [_pod_state(p, events) for p in pods]
            log_budget = _add_logs(client, namespace, pods, entry["pods"], log_budget)
        cause = _cause(entry)
        if cause:
            causes.append(f"{entry['kind']} {namespace + '/' if namespace else ''}{entry['name']}: {cause}")
    why = "; why: " + "; ".join(causes) if causes else ""
    return WaitTimeout(err.message + why, obj=err.obj, fix=err.fix, what_failed=err.what_failed + why,
                       details={**(err.details or {}), "unready": unready})


def _applied_body(entry: Unready, bodies: Mapping[ObjectId, KubeObject]) -> KubeObject:
    """The object as applied that the unready ``entry`` is about, or ``{}``. A gate's entry names no
    apiVersion: its object is the one of that kind, namespace and name."""
    namespace, api_version = entry.get("namespace") or "", entry.get("apiVersion")
    if api_version is not None:
        return bodies.get(ObjectId(api_version.rpartition("/")[0], entry["kind"], namespace, entry["name"])) or {}
    return next((body for oid, body in bodies.items()
                 if oid.kind == entry["kind"] and oid.namespace == namespace and oid.name == entry["name"]), {})


def _cut(text: object) -> str:
    text = str(text or "")
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."


def _warning_events(client: KubeApi, namespace: str) -> list[KubeObject]:
    try:
        body = client.request("GET", f"/api/v1/namespaces/{namespace}/events",
                              query={"fieldSelector": "type=Warning", "limit": "500"}).body
    except ApplySetError:
        return []
    return [e for e in (body or {}).get("items") or [] if isinstance(e, dict)]


def _about(event: KubeObject, kind: str, name: str | None, uid: str | None) -> bool:
    involved = event.get("involvedObject") or {}
    if uid and involved.get("uid"):
        return involved["uid"] == uid
    return involved.get("kind") == kind and involved.get("name") == name


def _when(event: KubeObject) -> str:
    return str(event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "")


def _latest(events: Iterable[KubeObject]) -> list[EventSeen]:
    """The newest ``MAX_EVENTS`` events as ``{reason, message, count, time}``, newest first."""
    chosen = sorted(events, key=_when, reverse=True)[:MAX_EVENTS]
    return [{"reason": e.get("reason"), "message": _cut(e.get("message")), "count": e.get("count") or 1,
             "time": _when(e)} for e in chosen]


def _pods(client: KubeApi, namespace: str, body: KubeObject) -> list[KubeObject]:
    """The pods of a workload (by its selector's matchLabels; a Job's by its uid), unready ones
    first, at most ``MAX_PODS``."""
    if body.get("kind") == "Pod":
        labels = None
    else:
        labels = _pod_labels(body)
        if not labels:
            return []
    try:
        if labels is None:
            found = client.get(_POD, body["metadata"]["name"], namespace)
            items = [found] if found else []
        else:
            selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
            items = list(client.list(_POD, namespace, label_selector=selector, metadata_only=False))
    except (ApplySetError, KeyError):
        return []
    return sorted(items, key=lambda p: (_is_ready(p), metadata_of(p).get("name", "")))[:MAX_PODS]


def _pod_labels(body: KubeObject) -> dict[str, str]:
    """The labels that select a workload's pods: its selector's matchLabels; for a Job, whose
    selector the server generates (so the object as applied has none), the label the Job
    controller puts on every pod it creates, its uid."""
    uid = uid_of(body)
    if body.get("kind") == "Job" and uid:
        return {_JOB_UID_LABEL: uid}
    labels = ((body.get("spec") or {}).get("selector") or {}).get("matchLabels")
    return labels if isinstance(labels, dict) else {}


def _is_ready(pod: KubeObject) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions_of(pod))


def _pod_state(pod: KubeObject, events: list[KubeObject]) -> PodState:
    """A pod's phase, why it is not scheduled, its containers' waiting reasons, its latest Warning events."""
    meta, status = metadata_of(pod), pod.get("status") or {}
    state: PodState = {"name": meta.get("name"), "phase": status.get("phase")}
    for cond in conditions_of(pod):
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            state["unschedulable"] = {"reason": cond.get("reason"), "message": _cut(cond.get("message"))}
    waiting = []
    for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
        current = (cs.get("state") or {}).get("waiting") or (cs.get("state") or {}).get("terminated")
        if current and current.get("reason") not in (None, "Completed"):
            waiting.append({"container": cs.get("name"), "reason": current.get("reason"),
                            "message": _cut(current.get("message")), "restarts": cs.get("restartCount", 0)})
    if waiting:
        state["containers"] = waiting
    pod_events = _latest(e for e in events if _about(e, "Pod", meta.get("name"), meta.get("uid")))
    if pod_events:
        state["events"] = pod_events
    return state


def _add_logs(client: KubeApi, namespace: str, pods: list[KubeObject], states: list[PodState], budget: int) -> int:
    """Read the log tail of each failing container of ``pods`` into its entry in ``states``, while
    ``budget`` (containers) lasts; the budget left."""
    for pod, state in zip(pods, states):
        statuses = {cs.get("name"): cs for cs in ((pod.get("status") or {}).get("initContainerStatuses") or [])
                    + ((pod.get("status") or {}).get("containerStatuses") or [])}
        for container in state.get("containers") or []:
            if budget <= 0:
                return 0
            previous = container_logs.wants_previous(statuses.get(container["container"]) or {})
            container.update(container_logs.read_tail(client, namespace, state["name"], container["container"], previous))
            budget -= 1
    return budget


def _cause(entry: Unready) -> str:
    """The first cause found, in a few words: a container reason, unschedulable, or an event."""
    for pod in entry.get("pods") or []:
        for container in pod.get("containers") or []:
            return f"pod {pod['name']} container {container['container']}: {container['reason']}" + (
                f" ({container['message']})" if container.get("message") else "") + (
                f"; its log ends: {container['log'][-1]}" if container.get("log") else "")
        if pod.get("unschedulable"):
            sched = pod["unschedulable"]
            return f"pod {pod['name']} cannot be scheduled: {sched['reason']} ({sched['message']})"
        if pod.get("events"):
            return f"pod {pod['name']}: {pod['events'][0]['reason']}: {pod['events'][0]['message']}"
    if entry.get("events"):
        return f"{entry['events'][0]['reason']}: {entry['events'][0]['message']}"
    return ""
