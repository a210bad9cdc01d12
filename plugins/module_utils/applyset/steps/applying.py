"""The route steps that apply: the applies of a run, coordinated (phase by phase, all members of a
phase at once, outcomes recorded in plan order); the namespaces that must exist before the parent
is written (and their preview in check mode); and the label that takes adopted objects in.

Workers (``member_apply.apply_member``) return outcomes; only this loop records them, so the
objects, diffs and warnings of a run come out in rank order, then input order, on every run.
A failed member stops the later phases (they may need it), never its own.
"""

from __future__ import annotations

from ..apply import gates, namespaces
from .. import spec
from ..wait import waiting
from ..errors import ApiError, ApplySetError
from ..apply import member_inputs
from ..apply.member_apply import apply_member, as_outcome
from ..run.report import NOT_TRIED_AFTER_FAILURE, NOT_TRIED_STOPPED, live_result
from ..parent.model import Parent
from ..rules.plan import DesiredObject, Plan
from ..run.report import Recorder
from ..run.runner import RunContext
from .claim import Claim


def make_namespaces(ctx: RunContext) -> None:
    """Step make-namespaces: before the claim, since the parent cannot be written in a namespace
    that does not exist. create_namespace's namespace (no member), then the set's own Namespace
    of a parent about to be created (a member: the parent written next records its kind)."""
    decisions = ctx.decisions
    name = decisions.namespace_to_create
    if name:
        result = ctx.record.outcome(namespaces.create(ctx.client, ctx.discovery, ctx.apply_options, name))
        if result.action == "failed":
            raise ApplySetError(f"could not create namespace {name}: {result.reason}", obj=ctx.set_ref,
                                fix=namespaces.refusal_fix(result))
    member = decisions.parent_namespace_first
    if member is not None:
        result = ctx.record.outcome(apply_member(member_inputs.of_run(ctx), member, frozenset()))
        if result.action == "failed":
            # The server's own words, as kubectl prints them: the webhook or policy and its message.
            raise ApplySetError(f"could not create namespace {ctx.parent.namespace} for the parent: {result.reason}",
                                obj=ctx.set_ref, fix=namespaces.refusal_fix(result))


def apply_phases(ctx: RunContext) -> None:
    """Step apply: the members phase by phase (``plan.phases``), the claim checked before each;
    CRDs waited for until Established before the next phase. A failed member records the run's
    failure (raised once the claim is released) and stops the later phases. A set with an order
    of its own (depends-on, sync waves) is applied by ``gates.apply_in_order`` (check mode: the
    dry runs go phase by phase, and the result's ``order`` shows what the real run waits for)."""
    if ctx.decisions.order is not None and not ctx.opts.dry_run:
        ordered_failure = gates.apply_in_order(member_inputs.of_run(ctx), ctx.decisions, ctx.plan, ctx.claim,
                                               ctx.record, ctx.parent)
        if ordered_failure is not None:
            ctx.failure = ordered_failure
        return
    try:
        first = ctx.decisions.parent_namespace_first
        run = member_inputs.of_run(ctx)  # what the workers read: taken once, never the context
        failure = _each_phase(run, ctx.plan, first, ctx.claim, ctx.record, ctx.parent)
    except ApplySetError:
        ctx.record.untried(ctx.plan.in_apply_order, NOT_TRIED_STOPPED)  # a CRD not Established, a lost claim
        raise
    if failure is not None:
        ctx.failure = failure
        ctx.record.untried(ctx.plan.in_apply_order, NOT_TRIED_AFTER_FAILURE)


def _each_phase(run: member_inputs.MemberApply, plan: Plan, first: DesiredObject | None, claim: Claim | None,
                record: Recorder, parent: Parent) -> ApplySetError | None:
    """The members of ``plan`` phase by phase (but ``first``, applied before the parent), each
    outcome recorded; the run's failure when a member failed (the later phases are not sent)."""
    done_before = {first.key} if first is not None else set()
    created_namespaces: set = set()
    for phase_members in plan.phases:
        if claim:
            claim.check()
        members = [m for m in phase_members if m.key not in done_before]
        seen = frozenset(created_namespaces)
        outcomes = run.client.map(lambda m: apply_member(run, m, seen), members)
        ok = True
        for member, outcome in zip(members, outcomes):
            result = record.outcome(as_outcome(member, outcome))
            ok = ok and result.action != "failed"
            if member.resource.group_kind == spec.NAMESPACE_KIND and result.action == "created":
                created_namespaces.add(member.name)
        if not ok:
            failures = record.failures()
            return ApplySetError(  # later phases depend on this one
                "some objects could not be applied; nothing was pruned and the parent keeps covering every "
                "object that may exist:\n" + failures, what_failed="some objects could not be applied:\n" + failures,
                obj=parent.set_ref, fix="fix the errors listed per object and run again")
        crds = [m for m in members if m.resource.group_kind == spec.CRD_KIND]
        if crds and not run.opts.dry_run:
            waiting.wait_for_crds(run.client, crds[0].resource, [m.name for m in crds], run.opts.crd_timeout,
                                  parent.set_ref)
    return None


def preview_namespace(ctx: RunContext) -> None:
    """Step preview-namespace (check mode): the dry-run creation of create_namespace's namespace."""
    name = ctx.decisions.namespace_to_create
    if name:
        ctx.record.outcome(namespaces.create(ctx.client, ctx.discovery, ctx.apply_options, name))


def label_adopted(ctx: RunContext) -> None:
    """Step label-adopted: write this set's label on the adopted objects, each guarded by the
    resourceVersion listed; a failure stops the run before any member is applied."""
    ok = True
    for adopted in ctx.decisions.adopted:
        meta = adopted.meta
        patch = {"metadata": {"labels": {spec.LABEL_PART_OF: ctx.parent.id},
                              "resourceVersion": meta.get("resourceVersion")}}
        try:
            ctx.client.merge_patch(adopted.resource, meta["name"], meta.get("namespace"), patch,
                                   field_manager=ctx.opts.field_manager)
        except ApiError as err:
            ok = False
            ctx.record.result(live_result(adopted.resource, meta, "failed",
                                          f"could not take it into the set: {err.message}", error=err))
    if not ok:
        ctx.failure = ApplySetError(
            "some objects of the legacy prune set could not be taken into the set; nothing was applied or "
            "pruned:\n" + ctx.record.failures(), obj=ctx.set_ref, fix="fix the errors listed per object and run again")
