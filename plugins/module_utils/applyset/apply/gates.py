"""The apply of a set with an order (ordering.py): members sent as soon as what they wait for is
applied or ready, the rest watched for readiness, each gate bounded by ``wait_timeout``.

A round sends every member whose edges are all satisfied (``client.map``, as a phase is sent
today); when none is, one readiness round lists what the waiting members need (one LIST per
resource and namespace) and watches it until one of them is ready (``waiting.wait_ready`` with
``until_any``), so that a dependent is sent within a round trip of its dependency's readiness.
A member left ``unchanged`` by the decide step is sent nothing and waits for nothing. A gate
that times out, or an object that can never become ready (a failed Job), stops the run:
nothing after it is applied, and the claim's release keeps the parent as the union.
Outcomes are recorded once, in plan order (the order ``applying.apply_phases`` records in), so
the report does not depend on which object became ready first.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..rules import ordering
from ..wait import reasons as wait_reasons, waiting
from ..errors import ApplySetError, WaitTimeout
from . import member_inputs
from .member_apply import apply_member, as_outcome
from ..wait.status import Readiness
from ..kube.api import KubeApi
from ..parent.model import Parent
from ..run.options import RunOptions
from ..run.records import Decisions
from ..spec import ObjectId
from ..run.report import NOT_TRIED_AFTER_FAILURE, NOT_TRIED_STOPPED, MemberOutcome, Recorder
from ..rules.plan import DesiredObject, Plan
from ..object_meta import KubeObject
from ..run.runner import StepOrderError
from ..rules.ordering import Order

if TYPE_CHECKING:  # the claim is a step's object (steps/claim.py): named for the annotations only
    from ..steps.claim import Claim

_APPLIED = ("created", "configured", "replaced", "unchanged")


class _State:
    """What the gates know: uids of the applied members (and of the external objects, None),
    the nodes seen ready, and since when each node has been waited for."""

    def __init__(self, order: ordering.Order, done_before: dict[ObjectId, str | None]):
        self.order = order
        self.applied = dict(done_before)
        self.applied.update({key: None for key in order.external})
        self.ready: set[ObjectId] = set()
        self.since: dict[ObjectId, float] = {}
        self.bodies: dict[ObjectId, KubeObject] = {}  # member key -> the body sent

    def satisfied(self, node: ObjectId | ordering.Gate, need: str, memo: dict[ordering.Gate, bool]) -> bool:
        if isinstance(node, ordering.Gate):
            if node not in memo:
                memo[node] = all(self.satisfied(src, n, memo) for src, n, _w in self.order.needs[node])
            return memo[node]
        if need == ordering.APPLIED:
            return node in self.applied
        return node in self.ready

    def can_go(self, key: ObjectId, memo: dict[ordering.Gate, bool]) -> bool:
        return all(self.satisfied(src, need, memo) for src, need, _w in self.order.needs.get(key, ()))

    def blocking(self, pending: list[DesiredObject]) -> dict[ObjectId, tuple[ObjectId, str]]:
        """``{node: (waiting member, why)}``: applied nodes not yet seen ready that a pending
        member (or a gate it needs) waits for."""
        found: dict[ObjectId, tuple[ObjectId, str]] = {}
        seen: set[ordering.Gate] = set()

        def visit(node: ObjectId | ordering.Gate, waiter: ObjectId) -> None:
            for src, need, why in self.order.needs.get(node, ()):
                if isinstance(src, ordering.Gate):
                    if src not in seen:
                        seen.add(src)
                        visit(src, waiter)
                elif need == ordering.READY and src in self.applied and src not in self.ready:
                    found.setdefault(src, (waiter, why))

        for member in pending:
            visit(member.key, member.key)
        return found


def apply_in_order(run: member_inputs.MemberApply, decisions: Decisions, plan: Plan, claim: Claim | None,
                   record: Recorder, parent: Parent) -> ApplySetError | None:
    """Step apply of a set with an order: see the module docstring. Returns the run's failure when a
    member failed, as ``applying.apply_phases`` records it; a gate that cannot open raises."""
    order = _order(decisions)
    first = decisions.parent_namespace_first
    done_before: dict[ObjectId, str | None] = {}
    if first is not None:
        done_before[first.key] = next((o.uid for o in record.report.objects if o.id == first.key), None)
    state = _State(order, done_before)
    state.bodies = {m.key: m.body for m in plan.members}
    outcomes: dict[ObjectId, MemberOutcome] = {}
    pending = [m for m in plan.members if m.key not in done_before]
    failure = None
    try:
        while pending:
            if claim:
                claim.check()
            memo: dict[ordering.Gate, bool] = {}
            batch = [m for m in pending if m.key in decisions.unchanged or state.can_go(m.key, memo)]
            if not batch:
                _wait_round(run.client, run.opts, record, parent, state, pending)
                continue
            for member, outcome in zip(batch, run.client.map(lambda m: apply_member(run, m, frozenset()), batch)):
                outcomes[member.key] = outcome = as_outcome(member, outcome)
                if outcome.result.action in _APPLIED:
                    state.applied[member.key] = outcome.result.uid
            pending = [m for m in pending if m.key not in outcomes]
            if any(o.result.action == "failed" for o in outcomes.values()):
                failure = ApplySetError(
                    "some objects could not be applied; what waits for them was not applied, nothing was pruned "
                    "and the parent keeps covering every object that may exist:\n" + _failures(outcomes),
                    what_failed="some objects could not be applied:\n" + _failures(outcomes),
                    obj=parent.set_ref, fix="fix the errors listed per object and run again")
                return failure
    finally:
        # In plan order, those not tried (the run stopped before them) in their place.
        why = NOT_TRIED_AFTER_FAILURE if failure is not None else NOT_TRIED_STOPPED
        for member in plan.in_apply_order:
            if member.key in outcomes:
                record.outcome(outcomes[member.key])
            else:
                record.untried([member], why)
    return None


def _wait_round(client: KubeApi, opts: RunOptions, record: Recorder, parent: Parent, state: _State,
                pending: list[DesiredObject]) -> None:
    """Wait until one of what the pending members wait for is ready (one LIST per resource and
    namespace, then watches: ``waiting.wait_ready`` with ``until_any``), at most until the
    earliest gate's ``wait_timeout``; raises when a gate times out or cannot open."""
    blocking = state.blocking(pending)
    if not blocking:
        raise ApplySetError("internal error: objects wait for nothing that can become ready: "
                            + ", ".join(m.ref for m in pending), obj=parent.set_ref)
    timeout = opts.waiting.timeout
    started = time.monotonic()
    for node in blocking:
        state.since.setdefault(node, started)
    targets = {_target(state.order, node): node for node in blocking}
    # The objects as applied, with their UIDs: the wait then knows a Job its TTL removed.
    applied = {t: wait_reasons.as_applied(state.bodies[n], state.applied[n])
               for t, n in targets.items() if state.applied.get(n) and n in state.bodies}
    left = min(state.since[node] + timeout for node in blocking) - started
    unready = waiting.wait_ready(client, list(targets), timeout=max(0.0, left), raise_on_timeout=False,
                                 applied=applied, until_any=True, warn=record.warn,
                                 field_manager=opts.field_manager, **opts.waiting.rules)
    now = time.monotonic()
    for target, node in targets.items():
        found = unready.get(waiting.normalised(target))
        if found is None:
            state.ready.add(node)
        elif found.final or now - state.since[node] >= timeout:
            # Say why, as the members' wait does: events and pods of the gate (a Job whose pods
            # cannot be created names the cause).
            raise wait_reasons.explain(client, _gate_closed(opts, parent, node, blocking[node], found),
                                       wait_reasons.bodies_by_ref(applied), logs=opts.waiting.failure_logs)


def _gate_closed(opts: RunOptions, parent: Parent, node: ObjectId, blocked: tuple[ObjectId, str],
                 found: Readiness) -> WaitTimeout:
    """The error of a gate that timed out or cannot open: what waits, for what, and why."""
    waiter, why = blocked
    cannot = found.final
    timeout = opts.waiting.timeout
    what_failed = (f"{ordering.ref_of(waiter)} waits for {ordering.ref_of(node)} ({why}), which "
                   + ("cannot become ready" if cannot else f"is not ready after {timeout:g}s") + f": {found.message}")
    return WaitTimeout(
        what_failed + "; what waits for it was not applied, nothing was pruned and the parent keeps covering "
        "every object", what_failed=what_failed,
        obj=parent.set_ref,
        fix=("look at the object and its events (kubectl describe), fix it and run again"
             + ("" if cannot else "; raise wait_timeout if it is only slow")),
        details={"unready": [{"kind": node.kind, "namespace": node.namespace or None, "name": node.name,
                              "reason": found.message, "waited_for_by": ordering.ref_of(waiter)}]})


def _order(decisions: Decisions) -> Order:
    """The order decide found (``decisions``); this apply runs only on a route that has one (routes.py)."""
    if decisions.order is None:
        raise StepOrderError("an ordered apply runs before decide has found an order")
    return decisions.order


def _target(order: Order, node: ObjectId) -> waiting.Target:
    """The (resource, namespace, name) of ``order`` to read for ``node``."""
    res = order.external[node] if node in order.external else order.resources[node]
    return waiting.Target(res, node.namespace or None, node.name)


def _failures(outcomes: dict[ObjectId, MemberOutcome]) -> str:
    return "\n".join(f"- {o.result.ref}: {o.result.reason}" for o in outcomes.values() if o.result.action == "failed")
