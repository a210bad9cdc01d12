"""The update-only route: a run whose only writes are in-place updates of members goes without
the claim and without writing the parent.

The claim keeps two runs from writing one set at the same time. A run on this route changes no
membership and no hint: it only updates members that carry this set's label, each apply
conditional on the uid and resourceVersion it listed (nochange.conditional). So a member another
run pruned meanwhile is refused (409), never created again; one that only moved on is read
again and updated on what is there now; any other refusal means start over. What was listed
must not be half of another run's work either: every run that writes a set writes its parent
first (the claim) and last (the release), no claim was held when this run read the parent, and
when the parent's resourceVersion is the same after this run's updates as when it was read,
before the LISTs, no run wrote the set in between. A parent changed, or not exactly as a release
would write it, means start over on the claim's route (``StartOver``), carrying what was updated.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

from ..object_meta import KubeObject, metadata_of, uid_of
from ..rules import nochange, ordering
from ..history import revisions as history
from ..parent import write as parent_write
from ..rules import prune as prunes
from .. import spec
from ..errors import ApiError
from ..apply import member_inputs
from ..apply.member_apply import applied_outcome, conflict_causes, unchanged_outcome, with_drift
from .pruning import carry_out
from ..rules.plan import DesiredObject, Plan
from ..run.report import MemberOutcome
from ..run.runner import RunContext
from ..spec import ObjectId
from ..run.records import CarriedUpdate, Decisions, LiveState, Updates
from ..parent.model import Parent

_Answer = TypeVar("_Answer")

# Tries of an update whose object changed since it was listed (read again in between).
IN_PLACE_ATTEMPTS = 3


class StartOver(Exception):
    """The update-only route cannot finish: the run starts over on the claim's route, with
    ``carried`` (``{ObjectId: CarriedUpdate}``) so that the members updated are still reported."""

    def __init__(self, carried: dict[ObjectId, CarriedUpdate]):
        super().__init__("start over with the claim")
        self.carried = carried


def blocker(run: member_inputs.MemberApply, parent: Parent, decisions: Decisions, plan: Plan,
            live: LiveState) -> str | None:
    """The first reason this run needs the claim, or None when its only writes would be in-place
    updates of members (the update-only route may go).

    Every member unchanged or updatable in place, nothing to delete or take out of the set (keep
    rules strip the label), nothing to adopt, no namespace to create, and a parent that exists,
    holds no claim (not even an expired one, which a normal run clears), has our tooling and
    already records exactly this run's hint; and, when the run keeps no history but updates a
    member, names no revision (the release drops that pointer: ``history.forgets``).
    """
    rules = (
        (not parent.exists, "the parent does not exist yet"),
        (parent.claim is not None, "the parent holds a claim"),
        (parent.tooling != spec.tooling_value() or parent.legacy_annotation, "the parent's tooling or annotations change"),
        (bool(decisions.prune.with_verdict(prunes.PRUNE) or decisions.prune.with_verdict(prunes.KEEP)),
         "members leave the set"),
        (bool(decisions.adopted), "legacy objects are adopted"),
        (decisions.namespace_to_create is not None, "a namespace is created"),
        (decisions.hints.superset_changes or decisions.hints.final_changes, "the hint changes"),
        (ordering.gated_change(decisions, plan), "a changed member waits for another to be ready (depends-on, "
                                                 "sync-wave): the apply route holds the gates"),
        (parent.record_members != parent.member_record, "the parent's member record changes"),
        (history.forgets(parent, run.opts.history) and any(m.key not in decisions.unchanged for m in plan.members),
         "the parent's revision pointer is dropped (the run keeps no history)"),
    )
    reason = next((why for holds, why in rules if holds), None)
    if reason is not None:
        return reason
    member = next((m for m in plan.members
                   if m.key not in decisions.unchanged and not _updatable_in_place(live, run, m)), None)
    return None if member is None else f"{member.ref} cannot be updated in place"


def _updatable_in_place(live: LiveState, run: member_inputs.MemberApply, member: DesiredObject) -> bool:
    """Whether ``member`` is a member of this set ``live`` lists whose apply may be sent conditional
    on the listed object (nochange.in_place_blocker). CRDs take the claim's route (their update is
    waited for before custom resources)."""
    found = live.get(member.key)
    return (found is not None and not member.crd_in_set and member.resource.group_kind != spec.CRD_KIND
            and found.resource.group_kind == member.resource.group_kind
            and _in_place_blocker(run, found.obj) is None)


def _in_place_blocker(run: member_inputs.MemberApply, live_obj: KubeObject | None) -> str | None:
    return nochange.in_place_blocker(live_obj, run.opts.field_manager, run.parent_id, run.set_managers)


@dataclass(frozen=True)
class _InPlace:
    """What one conditional update did: its outcome (None when refused) and what to carry."""

    outcome: MemberOutcome | None
    carried: CarriedUpdate


@dataclass(frozen=True)
class Alongside(Generic[_Answer]):
    """Work sent while the members are updated in place: ``work()`` runs in a worker, and once the
    updates are done ``then`` takes its answer (not when they started the run over)."""

    work: Callable[[], _Answer]
    then: Callable[[_Answer], None]


def update_in_place(alongside: Callable[[RunContext], Alongside | None] | None = None) -> Callable[[RunContext], None]:
    """Step update-in-place (built for its route): the members that are not unchanged, phase by
    phase, each apply conditional on the listed object; a refusal stops the later phases and
    starts the run over.

    Args:
        alongside: given the run, what to send at the same time, or None: on a route with a
            history, ``history_steps.revision_alongside`` (the revision's first Secret).
    """

    def update(ctx: RunContext) -> None:
        extra = alongside(ctx) if alongside is not None else None
        run = member_inputs.of_run(ctx)  # what the workers read: taken once, never the context
        if extra is None:
            ctx.in_place = _update_members(ctx.plan, run)
            return
        with ThreadPoolExecutor(max_workers=1) as pool:
            answer = pool.submit(extra.work)  # the first updates go out without waiting for it
            try:
                ctx.in_place = _update_members(ctx.plan, run)
            finally:
                answered = answer.result()  # nothing of this step goes on after it (a StartOver included)
        extra.then(answered)

    return update


def _update_members(plan: Plan, run: member_inputs.MemberApply) -> Updates:
    """The in-place updates of ``update_in_place``, phase by phase: what they did (``ctx.in_place``)."""
    updated, carried = {}, {}
    for phase_members in plan.phases:
        members = [m for m in phase_members if m.key not in run.unchanged]
        answers = run.client.map(lambda m: _update(run, m), members)
        refused = False
        for member, answer in zip(members, answers):
            if isinstance(answer, _InPlace):
                carried[member.key] = answer.carried
                if answer.outcome is not None:
                    updated[member.key] = answer.outcome
                    continue
            refused = True
        if refused:
            raise StartOver(carried)  # later phases wait for the claim's route
    return Updates(updated, carried)


def _update(run: member_inputs.MemberApply, member: DesiredObject) -> _InPlace:
    """Apply ``member`` conditional on the listed object (nochange.conditional), in a worker.

    An object that only changed since the LIST (a controller writing its status moves the
    resourceVersion too) is read again, up to twice: still the same object (same uid), still
    a member of this set that can be updated in place, the update is made conditional on what
    is there now. Anything else (gone, created again, left the set) is a refusal.
    """
    opts = run.opts
    before = run.listed(member.key)
    for attempt in range(IN_PLACE_ATTEMPTS):
        try:
            resp = run.client.apply(member.resource, nochange.conditional(member.body, before),
                                    field_manager=opts.field_manager, force=opts.force_conflicts,
                                    field_validation=opts.field_validation)
            break
        except ApiError as err:
            fresh = None
            if attempt + 1 < IN_PLACE_ATTEMPTS and err.status == 409 and not conflict_causes(err):
                fresh = run.client.get(member.resource, member.name, member.namespace or None)
            if (fresh is None or uid_of(fresh) != uid_of(before)
                    or _in_place_blocker(run, fresh) is not None):
                # Maybe written (an answer lost after a retry): a restart that finds it
                # unchanged reports it configured, not unchanged.
                return _InPlace(None, CarriedUpdate(None, before))
            before = fresh
    # the drift as listed before this write, kept in what is carried into a start over
    outcome = with_drift(run, member, applied_outcome(run, member, before, resp,
                                                      [f"{member.ref}: {w}" for w in resp.warnings]))
    return _InPlace(outcome, CarriedUpdate(outcome.result, before, resp.body, tuple(outcome.warnings)))


def confirm_parent_unchanged(ctx: RunContext) -> None:
    """Step confirm-parent-unchanged: one GET of the parent; the same resourceVersion, and exactly
    what a release would write, means no other run wrote the set meanwhile. Else start over.

    Not sent when a revision created alongside the updates waits for its pointer
    (``ctx.pending_revision``, history_steps.py): the pointer's write is conditional on the
    resourceVersion read, the same confirmation, a round trip later (docs/safety.md)."""
    if ctx.pending_revision is not None:
        return
    parent = ctx.parent
    now = ctx.client.get(parent.resource, parent.name, parent.namespace or None)
    if (now is None or metadata_of(now).get("resourceVersion") != parent.resource_version
            or not parent_write.records(parent, now, *ctx.decisions.hints.final)):
        raise StartOver(ctx.in_place.carried)


def record_in_plan_order(ctx: RunContext) -> None:
    """Step record: every member's outcome in rank order (updated or unchanged), then the prune
    candidates that are skipped (controlled by another object), as the claim's route reports them."""
    run = member_inputs.of_run(ctx)
    for rank_members in ctx.plan.ranks:
        for member in rank_members:
            outcome = ctx.in_place.outcomes.get(member.key) or unchanged_outcome(run, member)
            ctx.record.outcome(with_drift(run, member, outcome))
    carry_out(ctx.client, ctx.opts, ctx.record, prunes.PruneDecisions(ctx.decisions.prune.with_verdict(prunes.SKIP)),
              ctx.live.objects)
    ctx.report.applyset["tooling"] = ctx.parent.tooling
