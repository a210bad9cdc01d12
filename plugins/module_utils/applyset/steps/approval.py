"""The plan step of every route: the run's plan and its id (``rules/plan_id.py``), made from what
the reading steps decided, and the refusal of a run whose plan is not the approved one.

The step runs after the last reading step and before the first write of its route (the
namespaces, the claim, a hook, a member): apply's last reading step, and an uninstall's or a
disband's last step before the claim. It sends no request: the plan is made from the decisions.
Check mode and real runs make it alike, so the id a preview shows is the id the real run
computes on the same cluster state.

With ``approved_plan`` the run goes on only when its plan id is the approved one. An attempt
that starts over after its own in-place updates (``without_claim.StartOver`` with what it
carried) is not checked again: the first attempt was, before it wrote anything, and what it
wrote changes the plan by itself.
"""

from __future__ import annotations

from typing import Any

from .. import spec
from ..inputs import redact
from ..kube.discovery import Resource
from ..kube.listing import LiveObject
from ..parent import plan_key as plan_keys
from ..errors import PlanChanged
from ..rules import hooks as hks
from ..rules import nochange
from ..rules import plan_bind, plan_diff, plan_digests
from ..rules import plan_id as plans
from ..parent.model import Parent
from ..rules.plan import DesiredObject, Plan
from ..run.options import RunOptions
from ..run.report import Recorder, Report
from ..rules import prune as prunes
from ..run.runner import RunContext
from ..run.records import CarriedUpdate, Decisions, LiveState
from ..object_meta import ObjectMeta
from ..spec import ObjectId
from . import hook_run

# One entry of a plan (rules.plan_id.entry): JSON, the object's reference, action and set fields.
PlanEntry = dict[str, Any]

_PRUNE_ACTIONS = {prunes.PRUNE: plans.PRUNE, prunes.KEEP: plans.KEEP, prunes.SKIP: plans.LEAVE}
_REMOVE_ACTIONS = {prunes.PRUNE: plans.DELETE, prunes.KEEP: plans.KEEP, prunes.SKIP: plans.LEAVE}


def plan_apply(ctx: RunContext) -> None:
    """Step plan-id of an apply (after decide): the plan, its id, and the approval's check."""
    hooks = ctx.hooks if hook_run.due(ctx) else None
    entries = apply_entries(ctx.parent, ctx.plan, ctx.decisions, ctx.live, hooks, ctx.opts, ctx.record)
    settle(ctx.report, ctx.opts, ctx.carried, ctx.parent, entries)


def plan_uninstall(ctx: RunContext) -> None:
    """Step plan-id of an uninstall (after find-hooks, before the claim)."""
    removal = ctx.removal
    entries = [plans.entry(ctx.set_ref, plans.SET_UNINSTALL, id=ctx.parent.id,
                           gone_with_crd=sorted(removal.gone_with_crd))]
    for decision in (removal.decided.all if removal.decided is not None else ()):
        action = _REMOVE_ACTIONS.get(decision.verdict)
        if action is not None:
            entries.append(_live_entry(decision.resource, decision.meta, action))
    hooks = ctx.hooks if ctx.has("hooks") else None
    entries += _hook_entries(hooks, (hks.PRE_DELETE, hks.POST_DELETE), installing=False)
    settle(ctx.report, ctx.opts, ctx.carried, ctx.parent, entries)


def plan_disband(ctx: RunContext) -> None:
    """Step plan-id of a disband (after list-members, before the claim)."""
    entries = [plans.entry(ctx.set_ref, plans.SET_DISBAND, id=ctx.parent.id)]
    entries += [_live_entry(o.resource, o.meta, plans.UNLABEL) for o in ctx.removal.members]
    settle(ctx.report, ctx.opts, ctx.carried, ctx.parent, entries)


def apply_entries(parent: Parent, plan: Plan, decisions: Decisions, live: LiveState, hooks: hks.HookSet | None,
                  opts: RunOptions, record: Recorder) -> list[PlanEntry]:
    """The entries of an apply's plan: the set, each member, each prune candidate, each legacy
    object adopted, the namespace created, the Helm release taken over, and the ``hooks`` when they
    run (None when they do not: ``hook_run.due``)."""
    order = decisions.order
    waves = order.waves if order is not None and len(set(order.waves.values())) > 1 else {}
    entries = [plans.entry(parent.set_ref, plans.SET_APPLY, id=parent.id)]
    secret_key = parent.plan_key
    for member in plan.members:
        key = member.key
        action = (plans.SKIP if key in decisions.policies.skipped else plans.UNCHANGED if key in decisions.unchanged
                  else plans.CONFIGURE if live.get(key) is not None else plans.CREATE)
        entries.append(plans.entry(
            plans.ref_of(key), action, body=plans.body_digest(member.body), wave=waves.get(key),
            after=sorted(plans.ref_of(dep) for dep in order.explicit(key)) if order is not None else None,
            values=plan_bind.values_digest(member.body, secret_key) if action != plans.SKIP else None,
            start=_start(member, live.get(key), secret_key) if action == plans.CONFIGURE else None))
    for decision in decisions.prune.all:
        verdict = _PRUNE_ACTIONS.get(decision.verdict)
        if verdict is not None:
            entries.append(_live_entry(decision.resource, decision.meta, verdict))
    entries += [_live_entry(o.resource, o.meta, plans.ADOPT) for o in decisions.adopted]
    if decisions.namespace_to_create:
        entries.append(plans.entry(plans.ref_of(spec.ObjectId("", "Namespace", "", decisions.namespace_to_create)),
                                   plans.CREATE_NAMESPACE))
    if decisions.helm is not None:  # the objects it drops are adopted above; its records go too
        release = decisions.helm.release
        entries.append(plans.entry(f"Helm release {release.ref}", plans.RETIRE_HELM_RELEASE,
                                   revision=release.version, status=release.status))
    if hooks is not None:
        entries += _hook_entries(hooks, (hks.PRE_APPLY, hks.POST_APPLY, hks.ON_FAILURE), hooks.installing)
    if secret_key is None and (opts.dry_run or opts.approved_plan is not None):
        _warn_unbound(plan, parent, record)
    return entries


def _warn_unbound(plan: Plan, parent: Parent, record: Recorder) -> None:
    """Say so when the ``plan`` cannot bind the values of the Secrets it sends (no plan key)."""
    secrets = sorted(m.ref for m in plan.members if redact.is_secret(m.body))
    if not secrets:
        return
    named = ", ".join(secrets[:3]) + (f" and {len(secrets) - 3} more" if len(secrets) > 3 else "")
    why = ("the set has no plan key yet: the first run that writes its parent makes one"
           if plan_keys.holds_key(parent.resource) else
           f"its parent is a {parent.resource.kind}, which cannot keep the key that would bind them unseen "
           "(use a Secret parent)")
    record.warn(f"this plan does not bind the values of {named}: {why}; a value changed after the "
                "approval would not be refused")


def _start(member: DesiredObject, found: LiveObject | None, secret_key: bytes | None) -> str | None:
    """The starting point of a member the plan configures (``plan_bind.start_digest``); None when
    the live object was listed by its metadata only (a real run with ``reapply: always`` and no
    ``approved_plan``: nothing is compared there)."""
    if found is None or nochange.why_not_whole(found.obj) is not None:
        return None
    return plan_bind.start_digest(member.digest_source or member.body, found.obj, secret_key)


def _live_entry(resource: Resource, meta: ObjectMeta, action: str) -> PlanEntry:
    return plans.entry(plans.ref_of(spec.ObjectId.from_metadata(resource, meta)), action, uid=meta.get("uid"))


def _hook_entries(hooks: hks.HookSet | None, phases: tuple[str, ...], installing: bool) -> list[PlanEntry]:
    """One entry per hook and phase it runs in: its body's digest and its weight (none without
    ``hooks``: a route that found none)."""
    if hooks is None:
        return []
    return [plans.entry(plans.ref_of(hook.desired.key), plans.RUN_HOOK, phase=phase,
                        body=plans.body_digest(hook.desired.body), weight=hook.weight)
            for phase in phases for hook in hooks.of_phase(phase, installing)]


def settle(report: Report, opts: RunOptions, carried: dict[ObjectId, CarriedUpdate], parent: Parent,
           entries: list[PlanEntry]) -> None:
    """Record the plan and its id in the ``report``; with ``approved_plan``, refuse a run whose plan
    differs (not an attempt that ``carried`` updates over: the plan was checked before them).

    Raises:
        PlanChanged: the plan is not the approved one; nothing was written.
    """
    plan = plans.canonical(entries)
    report.plan, report.plan_id = plan, plans.digest(plan)
    if opts.approved_plan is None or carried:
        return
    approved = plan_diff.parse_approved(opts.approved_plan)
    if approved.plan_id != report.plan_id:
        raise refusal(approved, plan, report.plan_id, parent.set_ref)


def refusal(approved: plan_diff.Approved, plan: list[PlanEntry], plan_id: str, set_ref: str) -> PlanChanged:
    """The error of a run whose plan ``plan`` (id ``plan_id``) is not the ``approved`` one."""
    theirs = plan_diff.other_set(approved.plan, plan[0]) if approved.plan is not None and plan else None
    what = "the approved plan is for another set or run" if theirs else "the plan is not the approved one"
    head = f"{what} (approved {approved.plan_id}, now {plan_id}); nothing was written"
    if not approved.plan_id.startswith(plans.PLAN_VERSION + ":"):
        head += f"; the approved id was made by another version of the plan ({approved.plan_id.partition(':')[0]})"
    if theirs is not None:
        # Its members would each read as removed from the manifests: say whose plan it is instead.
        found = [f"{theirs['object']}: the approved plan is for this set ({theirs['action']}, id {theirs.get('id')}), "
                 f"not for {plan[0]['object']} ({plan[0]['action']}, id {plan[0].get('id')})"]
    elif approved.plan is not None:
        found = plan_diff.differences(approved.plan, plan, approved.left_out)
    elif approved.digests is not None:
        found = plan_digests.differences(approved.digests, plan, approved.left_out)
    else:
        found = []
    named = approved.plan is not None or approved.digests is not None
    body = "\n".join(f"- {line}" for line in found) if named else (
        "only the plan id was approved, so the differences cannot be named; the plan now is:\n"
        + "\n".join(f"- {line}" for line in plans.as_lines(plan)))
    return PlanChanged(
        f"{head}:\n{body}", obj=set_ref,
        fix=f"preview again (check mode), review the new plan and approve it ({plan_id}); give approved_plan the "
            "check-mode result's plan to have each difference named",
        details={"approved_plan_id": approved.plan_id, "plan_id": plan_id, "differences": found})
