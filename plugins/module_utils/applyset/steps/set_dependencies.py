"""Step wait-for-sets (applyset_apply's ``wait_for_sets``): a set that starts only when other sets
on the cluster are where it needs them, as Flux's ``dependsOn``.

Each dependency names another set's parent (as the ``parent`` option does) and what to wait for:
its last release succeeded (always: a dependency whose last release failed fails this run at once,
naming it), its current revision at least ``revision``, and with ``ready`` its members ready by
this collection's readiness rules (a member that failed fails this run at once too), and with
``ready_expr`` a CEL expression over its parent (metadata) and members, as Flux's ``readyExpr``. The step is
the run's first, before any read of its own set and so before the claim: a long wait holds no
claim. It reads the other set's parent and the first Secret of its current revision (metadata
only: never a value); while they do not satisfy it, it watches both (``waiting.wait_until_changed``)
and reads them again on a change, within the task's ``wait_timeout``. In check mode it reads once
and says, as a warning, whether the run would wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import spec
from ..errors import WaitTimeout
from ..history import revisions as history
from ..kube.api import KubeApi
from ..kube.discovery import Discovery, Resource
from ..parent import model as parent_model
from ..parent import resolve as parent_resolve
from ..run import early
from ..run.options import Options, RunOptions, SetDependency
from ..run.runner import WAIT, RunContext, Step
from ..object_meta import KubeObject, metadata_of
from ..wait import cel, waiting
from ..wait.waiting import Target
from ..wait.status import Readiness, Status


@dataclass(frozen=True)
class _SetState:
    """What the other set says now: ``shown`` names it; ``answer`` is ready, waiting or failed, with
    why; ``watch`` the objects whose change may change the answer, with the resourceVersion read."""

    shown: str
    answer: Readiness
    watch: dict[Target, str | None]
    live: parent_model.LiveParent | None = None


@dataclass(frozen=True)
class _DependencyWait:
    """What the wait for the other sets reads of the run: the ``client`` and its ``discovery``, the
    run's ``opts`` (``dry_run``, ``wait_timeout``, the wait rules), where warnings go (``warn``) and
    the ``deadline`` (``time.monotonic()``) of the whole wait."""

    client: KubeApi
    discovery: Discovery
    opts: RunOptions
    warn: Callable[[str], None]
    deadline: float


def waits_for_sets(opts: RunOptions) -> bool:
    """Whether a run with ``opts`` waits for other sets first."""
    return isinstance(opts, Options) and bool(opts.wait_for_sets)


def wait_for_sets(ctx: RunContext) -> None:
    """Step wait-for-sets: each dependency in turn, within the task's ``wait_timeout`` in all."""
    wait = _DependencyWait(ctx.client, ctx.client.discover(), ctx.opts, ctx.record.warn,
                           time.monotonic() + ctx.opts.waiting.timeout)
    waited = False
    for dependency in ctx.apply_options.wait_for_sets:
        waited = _wait_for(wait, dependency, ctx.namespace) or waited
    if waited:
        early.drop(ctx.client)  # what the module read early may predate the wait


def _wait_for(wait: _DependencyWait, dependency: SetDependency, run_namespace: str | None) -> bool:
    """Wait for one dependency (its parent's namespace defaults to the run's, ``run_namespace``);
    whether it waited at all. Raises WaitTimeout when it failed (at once) or the time is up."""
    opts = wait.opts
    res, name, namespace, _definition = parent_resolve.resolve(wait.discovery, dependency.parent,
                                                               dependency.namespace or run_namespace)
    secrets = wait.discovery.for_group_kind(spec.SECRET_KIND)
    rounds = 0
    while True:
        state = _read(wait.client, wait.discovery, res, name, namespace, secrets, dependency)
        if state.answer.status is Status.CURRENT:
            break
        if state.answer.final:
            raise WaitTimeout(f"the set this run waits for, {state.shown}, failed: {state.answer.message}",
                              obj=state.shown, fix=f"deploy {state.shown} successfully first; nothing was changed")
        if opts.dry_run:
            wait.warn(f"a real run would wait for {state.shown}: {state.answer.message}")
            return False
        left = wait.deadline - time.monotonic()
        if left <= 0:
            raise WaitTimeout(f"the set this run waits for, {state.shown}, is not there after "
                              f"{opts.waiting.timeout:.0f}s: {state.answer.message}", obj=state.shown,
                              fix="deploy it, or raise wait_timeout; nothing was changed")
        waiting.wait_until_changed(wait.client, state.watch, timeout=left)
        rounds += 1
    waited = rounds > 0
    if dependency.ready and state.live is not None:
        waited = _members_ready(wait, state.shown, state.live) or waited
    if dependency.ready_expr and state.live is not None:
        waited = _expression_holds(wait, state, dependency.ready_expr) or waited
    return waited


def _read(client: KubeApi, discovery: Discovery, res: Resource, name: str, namespace: str,
          secrets: Resource | None, dependency: SetDependency) -> _SetState:
    shown = parent_model.set_name(res, namespace or None, name)
    obj = client.get(res, name, namespace or None)
    target = Target(res, namespace or None, name)
    watch: dict[Target, str | None] = {target: None}
    if obj is None:
        return _SetState(shown, Readiness.in_progress("not deployed yet"), watch)
    watch[target] = metadata_of(obj).get("resourceVersion")
    live = parent_model.inspect(res, obj, discovery)
    if live.revision is None:
        return _SetState(shown, Readiness.in_progress("no release recorded yet"), watch)
    result = _release_result(client, secrets, live, watch)
    if result == history.FAILED:
        return _SetState(shown, Readiness.failed(f"its last release, revision {live.revision}, failed"), watch)
    if dependency.revision is not None and live.revision < dependency.revision:
        return _SetState(shown, Readiness.in_progress(f"at revision {live.revision}, waiting for {dependency.revision}"), watch)
    return _SetState(shown, Readiness.current(f"revision {live.revision} deployed"), watch, live)


def _release_result(client: KubeApi, secrets: Resource | None, live: parent_model.LiveParent,
                    watch: dict[Target, str | None]) -> str:
    """``deployed``, ``failed`` or ``damaged``: what the first Secret of the current revision records
    (its summary, metadata only), added to what is watched."""
    home = live.namespace
    if secrets is None or not home or live.live_id is None:
        return history.DEPLOYED
    name = history.secret_name(_Named(live.live_id, live.name), live.revision or 0)
    secret = client.get(secrets, name, home)
    watch[Target(secrets, home, name)] = metadata_of(secret).get("resourceVersion")
    listed = history.revisions([secret]) if secret is not None else []
    # A damaged summary is applyset_verify's to report, not this run's to judge: not a failure.
    return listed[0].stored_result if listed else history.DEPLOYED


@dataclass(frozen=True)
class _Named:
    """What ``history.secret_name`` reads of a parent: its set id and name."""

    id: str
    name: str


def _members_ready(wait: _DependencyWait, shown: str, live: parent_model.LiveParent) -> bool:
    """Wait until every member of the other set is ready by this collection's readiness rules (the
    task's ``wait_rules``), as its own wait would; whether it waited. A member that failed, or the
    time running out, raises WaitTimeout naming the set and the members."""
    opts = wait.opts
    targets = _members(wait.client, wait.discovery, live)
    timeout = 0.0 if opts.dry_run else max(0.0, wait.deadline - time.monotonic())
    try:
        unready = waiting.wait_ready(wait.client, targets, timeout=timeout, raise_on_timeout=not opts.dry_run,
                                     **dict(opts.waiting.rules or {}))
    except WaitTimeout as err:
        raise WaitTimeout(f"the members of {shown}, which this run waits for, are not ready: {err}",
                          obj=shown, fix="look at that set's members (applyset_info with readiness: true); "
                          "nothing was changed") from None
    if unready:
        wait.warn(f"a real run would wait for {len(unready)} members of {shown} to be ready")
    return bool(unready)


def _expression_holds(wait: _DependencyWait, state: _SetState, expression: str) -> bool:
    """Wait until ``ready_expr`` holds over the other set's ``parent`` (its metadata only: a Secret
    parent's values are never read into it) and ``members`` (whole), watching them for a change
    between evaluations; whether it waited."""
    live, rounds = state.live, 0
    while live is not None:
        parent = wait.client.get(live.resource, live.name, live.namespace or None) or {}
        listed = _member_items(wait.client, wait.discovery, live, whole=True)
        holds, why = cel.evaluate(expression, cel.Activation({"parent": {"metadata": metadata_of(parent)},
                                                              "members": [item for _res, item in listed]}))
        if holds:
            return rounds > 0
        said = why or "it does not hold"
        if wait.opts.dry_run:
            wait.warn(f"a real run would wait for ready_expr on {state.shown}: {said}")
            return False
        if time.monotonic() >= wait.deadline:
            raise WaitTimeout(f"ready_expr on {state.shown}, which this run waits for, does not hold after "
                              f"{wait.opts.waiting.timeout:.0f}s: {said}", obj=state.shown,
                              fix="look at that set's parent and members, or raise wait_timeout; nothing was changed")
        seen = {Target(live.resource, live.namespace or None, live.name): metadata_of(parent).get("resourceVersion")}
        seen.update({_target_of(res, item): metadata_of(item).get("resourceVersion") for res, item in listed})
        waiting.wait_until_changed(wait.client, seen, timeout=wait.deadline - time.monotonic())
        rounds += 1
    return False


def _members(client: KubeApi, discovery: Discovery, live: parent_model.LiveParent) -> list[Target]:
    """The wait's target of each member of the set ``live`` (``_member_items``)."""
    return [_target_of(res, item) for res, item in _member_items(client, discovery, live, whole=False)]


def _target_of(res: Resource, item: KubeObject) -> Target:
    """The wait's target of ``item``, a listed object of ``res``."""
    meta = metadata_of(item)
    return Target(res, meta.get("namespace"), meta.get("name", ""))


def _member_items(client: KubeApi, discovery: Discovery, live: parent_model.LiveParent, *,
                  whole: bool) -> list[tuple[Resource, KubeObject]]:
    """``(resource, object)`` of each member of the set ``live``: the kinds of its hint, in its
    namespaces, by its part-of label (metadata only unless ``whole``)."""
    found = []
    namespaces = [live.namespace or None, *sorted(live.additional_namespaces)]
    for group_kind in sorted(live.group_kinds, key=str):
        res = discovery.for_group_kind(group_kind)
        if res is None:
            continue  # a kind no longer served has no member to wait for
        selector = f"{spec.LABEL_PART_OF}={live.live_id}"
        for namespace in namespaces if res.namespaced else [None]:
            items = client.list(res, namespace, metadata_only=not whole, label_selector=selector)
            # A LIST's items carry no apiVersion and kind; ready_expr reads them as the objects they are.
            found += [(res, {"apiVersion": res.api_version, "kind": res.kind, **item}) for item in items]
    return found


WAIT_FOR_SETS = Step("wait-for-sets", wait_for_sets, WAIT)
