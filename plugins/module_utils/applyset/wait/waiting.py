"""Waiting: until a set of objects is ready, until it is gone, until CRDs are Established; with timeouts.

Whether one object is ready is ``readiness``'s pure rules; this module sends the
requests. Waiting lists once per (resource, namespace), not one GET per object, then
follows each (resource, namespace) with a watch (``watching``: polled with one LIST
a second where watch is not allowed), judging an object again each time it changes. A timeout (or an object that can never become ready, such as
a failed Job) raises ``WaitTimeout`` naming every object still waited for and why,
for example ``Deployment shop/web: 1/3 replicas available``. ``wait_for_crds`` GETs
the CustomResourceDefinitions a run applied until they are Established.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple, TypeVar, Union

from ..object_meta import KubeObject, metadata_of, uid_of
from ..kube.api import KubeApi
from ..errors import ApiError, ApplySetError, WaitTimeout
from ..kube.discovery import Resource
from .. import spec
from ..spec import ObjectId
from ..kube import watch as kube_watch
from . import watching
from .watching import FeedMessage, Group, ObjectsByName
from .kind_rules import crd_ready
from .readiness import RULE_OPTIONS, check_overrides, needs_reading, verdict
from .status import Readiness, Status
from .workload_rules import job_outcome_from_events, ttl_after_finished

_MAX_LISTED_IN_MESSAGE = 20


class Target(NamedTuple):
    """One object a wait reads: its resource (the version it is read at), its namespace (None for
    a cluster-scoped kind: ``normalised``) and name. Callers may give plain ``(resource, namespace,
    name)`` tuples (``TargetLike``); the waits key their answers by ``Target``, equal to those."""

    resource: Resource
    namespace: str | None
    name: str

    @property
    def id(self) -> ObjectId:
        """The object's identity in the core (namespace "" when cluster-scoped)."""
        return ObjectId.of(self.resource, self.namespace, self.name)

    @property
    def listed_in(self) -> Group:
        """The group (resource, namespace) whose LIST and watch read it."""
        return self.resource, self.namespace


TargetLike = tuple[Resource, "str | None", str]
_Value = TypeVar("_Value")
# What a wait reads per target, keyed by Target or by plain TargetLike tuples (a Mapping's key type
# is invariant, so a dict keyed by Target is not a Mapping[TargetLike, ...] to the type checker).
ByTarget = Union[Mapping[Target, _Value], Mapping[TargetLike, _Value]]
Judge = Callable[[Target, "KubeObject | None"], Readiness]
# One entry of a ``WaitTimeout``'s ``details["unready"]``: apiVersion, kind, namespace (None when
# cluster-scoped), name and reason; ``reasons.explain`` adds events and pods (a gate's entry, made
# by apply/gates, names no apiVersion and says what waits for it).
Unready = dict[str, Any]
# The groups' objects (or the error their LIST gave), by group.
Listed = dict[Group, "ObjectsByName | Exception"]
Warn = Callable[[str], None]
_RULE_OPTIONS = RULE_OPTIONS


def _ref(res: Resource, namespace: str | None, name: str) -> str:
    return f"{res.kind} {namespace}/{name}" if res.namespaced and namespace else f"{res.kind} {name}"


def _entry(target: Target, found: Readiness) -> Unready:
    res = target.resource
    return {"apiVersion": res.api_version, "kind": res.kind,
            "namespace": target.namespace if res.namespaced else None, "name": target.name, "reason": found.message}


def normalised(target: TargetLike) -> Target:
    """``target`` (resource, namespace, name) as waits key it: namespace None for cluster-scoped kinds."""
    res, namespace, name = target
    return Target(res, namespace if res.namespaced else None, name)


def _normalise(targets: Iterable[TargetLike]) -> list[Target]:
    """Distinct targets, ``normalised``."""
    seen, result = set(), []
    for target in map(normalised, targets):
        if target not in seen:
            seen.add(target)
            result.append(target)
    return result


def _groups(targets: Iterable[Target]) -> dict[Group, list[Target]]:
    """Targets by (resource, namespace): what one LIST or one watch covers."""
    groups: dict[Group, list[Target]] = {}
    for target in targets:
        groups.setdefault(target.listed_in, []).append(target)
    return groups


def _list(client: KubeApi, key: Group, metadata_only: bool) -> tuple[ObjectsByName, str | None]:
    """The group's objects by name and the list's resourceVersion (or the error, as ``map`` gives it)."""
    res, namespace = key
    found, version = kube_watch.list_with_version(client, res, namespace, metadata_only=metadata_only)
    return watching.by_name(res, found), version


def _poll(client: KubeApi, targets: list[Target], *, timeout: float, interval: float, judge: Judge, goal: Status,
          metadata_only: bool, waiting_for: str, raise_on_timeout: bool, until_any: bool = False,
          warn: Warn | None = None) -> dict[Target, Readiness]:
    """Wait until ``judge(target, item or None)`` says ``goal`` for every target: one LIST per
    (resource, namespace), then a watch of each (``watching``; polled where watch is refused).

    ``judge`` returns a ``Readiness``; a final one (``FAILED``) stops the wait early. With
    ``until_any`` the wait also returns as soon as one target is done (the gates of an ordered
    apply); ``warn`` is told once when the credentials may not watch.
    """
    total = len(targets)
    pending = {target: Readiness(Status.UNKNOWN, "not checked yet") for target in targets}
    deadline = time.monotonic() + max(0.0, float(timeout))
    groups = _groups(pending)
    keys = list(groups)
    items: Listed = {}
    versions: dict[Group, str | None] = {}
    for key, listed in zip(keys, client.map(lambda key: _list(client, key, metadata_only), keys)):
        items[key], versions[key] = (listed, None) if isinstance(listed, Exception) else listed
    final = _judge(pending, [t for key in keys for t in groups[key]], items, judge, goal)
    progressed = until_any and len(pending) < total  # a gate opens on the first object ready
    if pending and not final and not progressed and time.monotonic() < deadline:
        final = _follow(client, pending, items, versions, judge, goal, deadline=deadline, interval=interval,
                        metadata_only=metadata_only, until_any=until_any, warn=warn)
    if not pending:
        return {}
    return _give_up(pending, total, timeout, waiting_for, final, raise_on_timeout)


def _judge(pending: dict[Target, Readiness], targets: Iterable[Target], items: Listed, judge: Judge,
           goal: Status) -> bool:
    """Judge the ``targets`` still pending on their group's ``items``; whether one is final."""
    final = False
    for target in targets:
        if target not in pending:
            continue
        found = _judge_listed(target, items[target.listed_in], judge)
        if found.status is goal:
            del pending[target]
        else:
            pending[target] = found
            final = final or found.final
    return final


def _follow(client: KubeApi, pending: dict[Target, Readiness], items: Listed, versions: dict[Group, str | None],
            judge: Judge,
            goal: Status, *, deadline: float, interval: float, metadata_only: bool, until_any: bool,
            warn: Warn | None) -> bool:
    """Follow the pending targets' groups until each is done, one is final (True), the deadline
    passes or, with ``until_any``, one is done. Groups that cannot be watched are listed again
    every ``interval``, when targets found absent are judged again too (a Job's final Event may
    land after the Job is gone)."""
    start, groups = len(pending), _groups(pending)
    feeds = watching.Feeds(client, metadata_only, deadline, warn)
    try:
        for key, targets in groups.items():
            feeds.follow(key, versions.get(key), [t.name for t in targets])
        next_round = time.monotonic() + max(interval, 0.05)
        while pending:
            now = time.monotonic()
            if now >= deadline:
                return False
            touched = _take(feeds, feeds.next(min(deadline, next_round) - now), items, groups)
            if time.monotonic() >= next_round:
                touched += _round(client, feeds, pending, items, groups, metadata_only)
                next_round = time.monotonic() + max(interval, 0.05)
            if _judge(pending, touched, items, judge, goal):
                return True
            if until_any and len(pending) < start:
                return False
        return False
    finally:
        feeds.close()


def _take(feeds: watching.Feeds, message: FeedMessage | None, items: Listed,
          groups: dict[Group, list[Target]]) -> list[Target]:
    """Apply one feed message to ``items``; the targets it may have changed."""
    if message is None:
        return []
    what, key, payload = message
    if what == "event" and isinstance(listed := items.get(key), dict):
        name = watching.apply_event(listed, key[0], payload)
        return [t for t in groups[key] if t.name == name]
    if what == "listed":
        items[key] = payload
        return list(groups[key])
    if what == "refused":
        feeds.refused(key, payload)
    else:
        feeds.poll(key)
    return []


def _round(client: KubeApi, feeds: watching.Feeds, pending: dict[Target, Readiness], items: Listed,
           groups: dict[Group, list[Target]], metadata_only: bool) -> list[Target]:
    """One polling round: the polled groups listed again; their targets and the absent ones to judge."""
    keys = [key for key in feeds.polled if any(t in pending for t in groups[key])]
    for key, listed in zip(keys, client.map(lambda key: _list(client, key, metadata_only), keys)):
        items[key] = listed if isinstance(listed, Exception) else listed[0]
    absent = [t for t in pending if isinstance(listed := items.get(t.listed_in), dict) and t.name not in listed]
    return list(dict.fromkeys([t for key in keys for t in groups[key]] + absent))


def _judge_listed(target: Target, items: ObjectsByName | Exception, judge: Judge) -> Readiness:
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
        return Readiness(Status.UNKNOWN, f"could not be read: {items}")
    return judge(target, items.get(name))


def _give_up(pending: dict[Target, Readiness], total: int, timeout: float, waiting_for: str, final: bool,
             raise_on_timeout: bool) -> dict[Target, Readiness]:
    if not raise_on_timeout:
        return dict(pending)
    unready = [_entry(target, found) for target, found in pending.items()]
    lines = [f"{_ref(*target)}: {found.message}" for target, found in pending.items()]
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


def wait_ready(client: KubeApi, targets: Iterable[TargetLike], *, timeout: float, interval: float = 1.0,
               raise_on_timeout: bool = True, applied: ByTarget[KubeObject] | None = None,
               until_any: bool = False,
               warn: Warn | None = None, field_manager: str | None = None,
               **rule_options: Any) -> dict[Target, Readiness]:
    """Wait until every target is ready; ``targets`` are ``(Resource, namespace or None, name)``.

    ``client`` is the ``KubeClient`` that lists them, once per (resource, namespace), then
    watches each (resource, namespace) (``watching``); where the credentials may not watch, it
    lists them again every ``interval`` seconds and tells ``warn`` (a callable taking one
    message) once. Objects of kinds with nothing to wait for are not read at all. With
    ``until_any``, it returns as soon as one target is ready (the list of the others), as the
    gates of an ordered apply want.

    ``rule_options`` are ``readiness.verdict``'s keywords (``fail_closed``, ``overrides``,
    ``wait_for_load_balancers``). ``field_manager`` is the one the run applied with: a failure a
    status reported before that apply does not stop the wait (``readiness.verdict``). ``applied`` maps targets to the objects as this run
    applied them, ``metadata.uid`` included: it tells the object we applied from one that
    replaced it, and an object that went away by design (a finished Job removed by its
    ``ttlSecondsAfterFinished``) from one deleted by someone (see ``_GoneTracker.verdict``).
    Returns ``{}`` once all are ready. Otherwise, after ``timeout`` seconds or as soon as
    one object can never become ready (a failed Job, an applied object deleted), raises
    ``WaitTimeout`` listing each unready object and why, with
    ``details={"unready": [{apiVersion, kind, namespace, name, reason}, ...]}``; with
    ``raise_on_timeout=False`` it returns each unready target's ``Readiness`` instead.

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
    exprs = rule_options.get("health_check_exprs")
    to_read = [t for t in _normalise(targets) if needs_reading(t.resource.group_kind, overrides, load_balancers, exprs)]
    known = {normalised(target): obj for target, obj in (applied or {}).items()}
    tracker = _GoneTracker(client)

    def judge(target: Target, item: KubeObject | None) -> Readiness:
        mine = known.get(target)
        our_uid = _uid(mine)
        if item is not None and our_uid and _uid(item) and _uid(item) != our_uid:
            return tracker.verdict(target, mine, replaced_by=item)
        if item is None:
            if not our_uid:
                return Readiness(Status.NOT_FOUND, "not found")
            return tracker.verdict(target, mine)
        tracker.seen[target] = item
        return verdict(item, field_manager=field_manager, **rule_options)

    return _poll(client, to_read, timeout=timeout, interval=interval, judge=judge, goal=Status.CURRENT,
                 metadata_only=False,
                 waiting_for="ready", raise_on_timeout=raise_on_timeout, until_any=until_any, warn=warn)


def wait_until_changed(client: KubeApi, seen: ByTarget[str | None], *, timeout: float,
                       interval: float = 1.0) -> None:
    """Return once one of the objects ``seen`` (``{(resource, namespace, name): resourceVersion}``,
    None for one that was absent) is created, changed or deleted, or after ``timeout`` seconds: one
    LIST per (resource, namespace), metadata only, then a watch (a change between the caller's read
    and the LIST ends the wait at once)."""
    known = {normalised(target): version for target, version in seen.items()}

    def judge(target: Target, item: KubeObject | None) -> Readiness:
        version = metadata_of(item).get("resourceVersion") if item is not None else None
        return Readiness.current("changed") if version != known[target] else Readiness.in_progress("unchanged")

    _poll(client, list(known), timeout=timeout, interval=interval, judge=judge, goal=Status.CURRENT,
          metadata_only=True, waiting_for="a change", raise_on_timeout=False, until_any=True)


# ----- objects that go away -------------------------------------------------------------------
#
# What kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status) does with objects that go away or
# stop on purpose, and what we take from it:
# - deletionTimestamp set: Terminating, not Current. Kept, except for a finished Job, which the
#   TTL controller deletes in the foreground: its final condition still holds (see readiness.verdict).
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

# Rounds to look for the Job's final event before going by its TTL alone: the Job
# controller records the event asynchronously, so it may land just after the deletion.
_EVENT_ROUNDS = 3


def _uid(obj: KubeObject | None) -> str | None:
    return uid_of(obj) or None


def job_outcome_events(client: KubeApi, namespace: str | None, uid: str | None) -> list[KubeObject]:
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

    def __init__(self, client: KubeApi):
        self.client = client
        self.seen: dict[Target, KubeObject] = {}  # the object as last read, for its spec
        self.looked: dict[Target, int] = {}  # target -> rounds spent looking for a Job's final event

    def verdict(self, target: Target, mine: KubeObject | None, replaced_by: KubeObject | None = None) -> Readiness:
        res, namespace, _name = target
        replaced = f" (a new object with uid {_uid(replaced_by)} took its name)" if replaced_by else ""
        ttl = ttl_after_finished(self.seen.get(target), mine) if res.group_kind == spec.JOB_KIND else None
        if ttl is None:
            # Not found, and final: no wait brings the object we applied back.
            return Readiness.failed(f"deleted while waiting{replaced}: the object applied (uid {_uid(mine)}) is gone")
        # The TTL controller deletes a Job only once it has a Complete or Failed condition,
        # so a Job with ttlSecondsAfterFinished that vanished has finished, unless a person
        # or a tool deleted it first. The Job controller's final Event on that UID says which
        # way it finished; without one we go by the TTL, as the Job asked to be removed.
        ours = f"removed by its ttlSecondsAfterFinished ({ttl}s) after it finished{replaced}"
        outcome = job_outcome_from_events(job_outcome_events(self.client, namespace, _uid(mine)), ours)
        if outcome is not None:
            return outcome
        rounds = self.looked[target] = self.looked.get(target, 0) + 1
        if rounds < _EVENT_ROUNDS:
            return Readiness.in_progress(f"gone; looking for the event that says how it finished ({ours})")
        return Readiness.current(f"finished and {ours} (no event recorded whether it succeeded)")


def _still_there(item: KubeObject | None) -> Readiness:
    if item is None:
        return Readiness(Status.NOT_FOUND, "gone")
    meta = metadata_of(item)
    if meta.get("deletionTimestamp"):
        finalizers = meta.get("finalizers") or []
        waiting_on = f"; finalizers: {', '.join(finalizers)}" if finalizers else ""
        return Readiness(Status.TERMINATING, f"being deleted{waiting_on}")
    return Readiness.in_progress("still exists")  # in progress towards gone: its readiness is not asked


def wait_gone(client: KubeApi, targets: Iterable[TargetLike], *, timeout: float, interval: float = 1.0,
              raise_on_timeout: bool = True, uids: ByTarget[str] | None = None,
              warn: Warn | None = None) -> dict[Target, Readiness]:
    """Wait until no target exists any more (deleted objects whose finalizers are done).

    Same ``client``, targets, ``interval``, result, ``raise_on_timeout`` and ``WaitTimeout`` after
    ``timeout`` seconds as ``wait_ready``; reads metadata only. ``uids`` maps targets to the UID
    of the object deleted: a new object under the same name (a reinstall already under way) does
    not keep the wait going. Raises ``WaitTimeout``, or ``ApiError`` for a LIST that fails.
    """
    known = {normalised(target): uid for target, uid in (uids or {}).items()}

    def judge(target: Target, item: KubeObject | None) -> Readiness:
        if item is not None and known.get(target) and _uid(item) and _uid(item) != known[target]:
            return Readiness(Status.NOT_FOUND, "gone (a new object took its name)")
        return _still_there(item)

    return _poll(client, _normalise(targets), timeout=timeout, interval=interval, judge=judge, goal=Status.NOT_FOUND,
                 metadata_only=True, waiting_for="gone", raise_on_timeout=raise_on_timeout, warn=warn)


# ----- CustomResourceDefinitions before their custom resources -----------------------------------


def wait_for_crds(client: KubeApi, crd_resource: Resource, names: Iterable[str], timeout: float, obj: str) -> None:
    """Wait until every CustomResourceDefinition named in ``names`` is Established.

    ``client`` GETs each pending one (``crd_resource``, cluster-scoped) per round, in name
    order, with 0.25 s between rounds, for up to ``timeout`` seconds. ``obj`` names what the
    error is about (the engine passes ``ApplySet REF``).

    Raises:
        ApplySetError: a CRD that can never become Established (its names not accepted),
            or CRDs still not Established after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending:
        for name in sorted(pending):
            # The one CRD readiness rule (kind_rules.crd_ready): Established, or a final refusal
            # such as NamesAccepted=False, which no amount of waiting changes.
            found = crd_ready(client.get(crd_resource, name) or {})
            if found.ready:
                pending.discard(name)
            elif found.final:
                raise ApplySetError(
                    f"CustomResourceDefinition {name} will not become Established: {found.message}", obj=obj,
                    fix=f"fix the CRD (kubectl describe crd {name}); its custom resources were not applied")
        if not pending:
            return
        if time.monotonic() > deadline:
            raise ApplySetError(
                f"CustomResourceDefinitions not Established after {timeout:.0f}s: " + ", ".join(sorted(pending)),
                obj=obj, fix="check the CRDs' status conditions (kubectl describe crd NAME)")
        time.sleep(0.25)
