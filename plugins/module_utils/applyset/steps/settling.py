"""After a run: wait (bounded) until what it applied is ready and what it deleted is gone.

Runs after the release of the claim: waiting changes nothing in the set. The targets come from
the report (objects applied or left unchanged, objects pruned or deleted); the readiness rules
and the loops are health.py's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..kube.api import KubeApi
from ..kube.discovery import Resource
from ..wait import reasons as wait_reasons
from ..wait import waiting
from ..wait.waiting import Target
from ..errors import WaitTimeout
from ..rules.plan import Plan
from ..run.options import RunOptions
from ..run.report import Recorder
from ..run.runner import RunContext

_APPLIED = ("created", "configured", "replaced", "unchanged")


@dataclass(frozen=True)
class Gone:
    """An object the run deleted, to wait for until it is gone: its resource, where, and its UID
    (an object of the same name with another UID is a new one, not this one)."""

    resource: Resource
    namespace: str | None
    name: str
    uid: str | None


def wait_until_settled(ctx: RunContext) -> None:
    """Step wait: the applied members ready and the pruned objects gone, within ``wait_timeout``."""
    deadline = time.monotonic() + ctx.opts.waiting.timeout
    wait_applied_ready(ctx.client, ctx.plan, ctx.opts, ctx.record)
    wait_pruned_gone(ctx, timeout=max(1.0, deadline - time.monotonic()))


def wait_ready_before_prune(ctx: RunContext) -> None:
    """Step wait-ready (``wait: true`` with prune): the applied members ready within
    ``wait_timeout``, before anything is pruned. A wait that fails prunes nothing: the run stops
    here, and the release keeps the parent covering every object (the union)."""
    try:
        wait_applied_ready(ctx.client, ctx.plan, ctx.opts, ctx.record)
    except WaitTimeout as err:
        err.what_failed = err.args[0]
        err.message = err.args[0] + "; nothing was pruned, and the parent keeps covering every object (the " \
            "next run that gets everything ready prunes)"
        err.args = (err.message,)
        raise


def wait_pruned_gone(ctx: RunContext, timeout: float | None = None) -> None:
    """Step wait-gone (after the release, ``wait: true``): the pruned objects gone."""
    report = ctx.report
    by_kind = {m.resource.group_kind: m.resource for m in ctx.plan.members}
    gone_targets = []
    for o in report.objects:
        if o.action == "pruned":
            res = by_kind.get(o.id.group_kind) or ctx.discovery.for_group_kind(o.id.group_kind)
            if res is not None:
                gone_targets.append(Gone(res, o.namespace, o.name, o.uid))
    wait_gone(ctx.client, gone_targets, timeout=ctx.opts.waiting.timeout if timeout is None else timeout,
              warn=ctx.record.warn)


def wait_applied_ready(client: KubeApi, plan: Plan, opts: RunOptions, record: Recorder) -> None:
    """The members of ``plan`` this run applied (or left unchanged, as ``record``'s report says)
    ready within ``wait_timeout``."""
    report = record.report
    applied = {o.id: o.uid for o in report.objects if o.action in _APPLIED}
    ready_targets = [Target(m.resource, m.namespace, m.name) for m in plan.members if m.key in applied]
    bodies = {Target(m.resource, m.namespace, m.name): wait_reasons.as_applied(m.body, applied[m.key])
              for m in plan.members if m.key in applied}
    wait_reasons.wait_ready_or_explain(client, ready_targets, bodies, opts.wait_settings(), warn=record.warn)


def wait_members_gone(ctx: RunContext) -> None:
    """Step wait-gone (uninstall): like kubectl delete, return once the deleted members are gone,
    finalizers done (a CRD only after its custom resources), so that an install right after does
    not race the deletion. The parent is gone already: what is left is being deleted anyway."""
    by_uid = {o.uid: o.resource for o in ctx.removal.members}
    gone = [Gone(by_uid[o.uid], o.namespace, o.name, o.uid)
            for o in ctx.report.objects if o.action == "pruned" and o.uid in by_uid]
    wait_gone(ctx.client, gone, timeout=ctx.opts.waiting.timeout, warn=ctx.record.warn)


def wait_gone(client: KubeApi, targets: list[Gone], timeout: float, warn: Callable[[str], None] | None = None) -> None:
    """Wait until the ``targets`` are gone, finalizers included (as ``kubectl delete`` does);
    ``warn`` is told once if the credentials may not watch (the wait then polls)."""
    where = {t: Target(t.resource, t.namespace, t.name) for t in targets}
    waiting.wait_gone(client, list(where.values()), timeout=timeout, uids={where[t]: t.uid for t in targets if t.uid},
                      warn=warn)
