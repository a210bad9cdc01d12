"""Everything an apply decides before its first write, as one typed value: ``Decisions``.

The steps here send reads at most (discovery, the parent, LISTs, namespace GETs): the parent
is read and judged, the plan built, the live state listed, and then ``decide`` computes what
the writing steps act on: which members are unchanged (not sent), the prune candidates and
their first decisions (the guard applied), the hints the parent records while the run writes
and after it, the legacy objects adopted, the namespaces to create. Every input problem the
server can show is refused here, before anything is written.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable

from ..apply import adoption, namespaces
from ..run import early
from ..rules import field_policy, nochange, ordering, versioned_keep
from ..parent import members
from ..parent import read as parents
from ..parent import resolve as parent_resolve
from ..rules import plan as plans
from ..rules import prune as prunes
from .. import spec
from . import release_takeover
from .claim import wait_until_free
from ..errors import ApplySetError, GuardError, InputError, InputErrors
from ..kube.listing import LiveObject, list_pairs, live_objects, recorded_scope
from ..parent.model import Parent
from ..parent.prefetch import discover_and_read
from ..kube.versions import VersionFallback
from ..kube.api import KubeApi
from ..kube.discovery import Discovery
from ..run.options import Options
from ..run.report import Recorder
from ..run.runner import RunContext
from ..run.records import Decisions, Hints, LiveState, prune_context
from ..spec import GroupKind


# ----- the reading steps -------------------------------------------------------------------------


def read_parent(ctx: RunContext) -> None:
    """Step read-parent: discovery, then the parent read and judged; waits (bounded) while another
    run holds a claim on the set (a preview only warns)."""
    # The reads sent before the run asked for them are answered from there (early.py); a Secret or
    # ConfigMap parent is read together with discovery (prefetch.py): one round trip.
    early.finish(ctx.client)
    ctx.discovery, reader = discover_and_read(ctx.client, ctx.parent_spec, ctx.namespace)
    discovery = ctx.discovery
    res, name, ns, definition = parent_resolve.resolve(discovery, ctx.parent_spec, ctx.namespace)

    def read() -> tuple[Parent, list[str]]:
        return parents.read(reader, discovery, res, name, ns, takeover=ctx.opts.takeover, definition=definition)

    parent, warnings = read()
    if parent.claimed_by_other(ctx.run_id, time.time()):
        if ctx.opts.dry_run:
            warnings.append(f"another run ({(parent.claim or {}).get('run')}) is changing this set right now; "
                            "the preview may be out of date when it finishes")
        else:
            early.drop(ctx.client)  # what was read early may be from the middle of that run
            parent = wait_until_free(lambda: read()[0], ctx.run_id, ctx.opts.claim_wait, parent)
    ctx.record.warn(*warnings)
    ctx.parent = parent
    ctx.describe_hint(parent.recorded_group_kinds, parent.namespaces)


def make_plan(ctx: RunContext) -> None:
    """Step plan: the desired objects resolved against discovery (plan.build); refuses every input
    problem, and a parent that is one of its own members."""
    parent = ctx.parent
    chart_crds = ctx.chart_crds.to_apply if ctx.has("chart_crds") else []
    plan = plans.build(ctx.desired, ctx.discovery, parent.id, ctx.namespace or parent.namespace or None, chart_crds)
    ctx.record.warn(*plan.warnings)
    _refuse_parent_as_member(parent, plan)
    for member in plan.members:
        # Every apply records the digest of its own body, whatever reapply says: a later
        # run with reapply: changed then knows what was applied last (nochange.py).
        member.body = nochange.with_digest(member.body)
    ctx.plan = plan


def _refuse_parent_as_member(parent: Parent, plan: plans.Plan) -> None:
    """A parent that is also one of its own members would be labelled part-of its own set, and
    each member apply would race the run's claim on it; refuse it before anything is written."""
    member = next((m for m in plan.members
                   if m.key == spec.ObjectId.of(parent.resource, parent.namespace, parent.name)), None)
    if member is not None:
        raise InputError(
            f"the set's parent {member.ref} is also one of the objects to apply; an ApplySet's parent records "
            "the set and cannot be a member of it",
            obj=f"{member.manifest.source} ({member.ref})",
            fix=f"give the parent another name (for example parent: {{kind: {parent.resource.kind}, name: "
            f"{parent.name}-set}}), or leave that object out of src/definition")


def list_live(ctx: RunContext) -> None:
    """Step list-live: LIST what the run needs to see, before any write.

    Desired kinds are listed whole (to see live state and other sets' labels); the rest of the
    prune scope, the hint as recorded before this run (kubectl's rule), only through our
    selector. Desired kinds and namespaces new in this run are not searched for leftovers.
    """
    opts, parent = ctx.apply_options, ctx.parent
    desired_pairs = {(m.resource, m.namespace if m.resource.namespaced else None)
                     for m in ctx.plan.members if not m.crd_in_set}
    not_listed: frozenset = frozenset()
    scope_pairs: set = set()
    if opts.prune:
        scope = recorded_scope(parent, ctx.discovery)
        ctx.record.warn(*scope.warnings)
        not_listed, scope_pairs = scope.not_listed, set(scope.pairs)
    # A kind listed whole for the desired objects needs no second, selected list
    # (it may be under another version there).
    listed_whole = {(res.group_kind, ns) for res, ns in desired_pairs}
    scope_pairs = {(res, ns) for res, ns in scope_pairs if (res.group_kind, ns) not in listed_whole}
    selector = f"{spec.LABEL_PART_OF}={parent.id}"
    # Desired kinds keep their manifest's version; the recorded scope may be listed at another.
    fallback = VersionFallback(ctx.client, ctx.discovery, only=scope_pairs)
    listed = list_pairs(
        ctx.client, sorted(desired_pairs | scope_pairs, key=lambda p: (p[0].group, p[0].kind, p[1] or "")),
        selector_for=lambda pair: None if pair in desired_pairs else selector, obj=ctx.set_ref,
        # Full objects where the run compares them: diffs, check mode, and reapply: changed.
        # ignore_fields rules read live values.
        # An approved plan binds the live values of the members it configures (approval.py).
        full_for=desired_pairs if opts.diff or opts.dry_run or opts.reapply == "changed" or opts.ignore_fields
        or opts.approved_plan is not None else frozenset(),
        fallback=fallback)
    ctx.record.warn(*fallback.notes)
    ctx.live = LiveState({o.key: o for o in live_objects(listed)}, not_listed)


# ----- the decisions -----------------------------------------------------------------------------


def decide(ctx: RunContext) -> None:
    """Step decide: ``ctx.decisions``, or the error that refuses the run before any write.

    In this order: objects of another set (unless adopt), the legacy objects adopted, the prune
    candidates and the guard, the hints, the unchanged members, then the input problems only
    the server can show (recreate settings, missing namespaces: one GET each).
    """
    opts, parent, plan, live = ctx.apply_options, ctx.parent, ctx.plan, ctx.live
    refusal = prunes.overlap(plan.members, {k: (o.resource, o.obj) for k, o in live.objects.items()},
                             parent.id, adopt=opts.adopt)
    if refusal is not None:
        raise ApplySetError(refusal.message, obj=ctx.set_ref, fix=refusal.fix, details=refusal.details)
    taken = adoption.NONE
    if opts.adopt_legacy is not None and opts.prune:
        taken = adoption.select(ctx.client, ctx.discovery, opts, parent, ctx.record, plan)
    helm = release_takeover.find(ctx.client, ctx.discovery, ctx.opts, ctx.namespace, parent, plan, live, ctx.record)
    if helm is not None:
        ctx.set_managers = ctx.set_managers | helm.managers  # before the unchanged are found: Helm's field managers
        ctx.opts = release_takeover.with_provenance(ctx.opts, helm.release)
        taken = adoption.Adoption(taken.adopted + helm.dropped, taken.desired_count + helm.desired_count)
    released = ctx.chart_crds.released if ctx.has("chart_crds") else frozenset()
    candidates, about_to_apply, first = _first_prune_decisions(parent, plan, live, opts, taken, released)
    hints = _hints(parent, plan, live, ctx.discovery, opts, taken.adopted)
    policies = _leave_to_others(plan, live, opts, ctx.record)  # before the unchanged are found: rules change bodies
    unchanged = {**find_unchanged(plan, live, opts, ctx.set_managers), **policies.skipped}
    problems = plans.recreate_problems(plan.members, opts.recreate_on_immutable)
    if problems:
        raise InputErrors(problems)
    pruned = frozenset(spec.ObjectId.from_metadata(d.resource, d.meta) for d in first.with_verdict(prunes.PRUNE))
    order = _order_members(ctx.client, ctx.discovery, plan, live, pruned)
    if order is not None:
        ctx.report.order = ordering.describe(order, plan.members, opts)
    ctx.record.warn(*ordering.unread(plan.members))
    members.while_writing(parent, plan)
    ctx.decisions = Decisions(
        unchanged=unchanged, candidates=candidates, about_to_apply=about_to_apply, prune=first, hints=hints,
        adopted=taken.adopted, not_listed=live.not_listed, order=order, policies=policies, helm=helm,
        released_uids=released,
        namespace_to_create=namespaces.check(ctx.client, ctx.discovery, parent, ctx.namespace, opts, plan, unchanged),
        parent_namespace_first=None if opts.dry_run else _parent_namespace_first(parent, plan, live))


def _leave_to_others(plan: plans.Plan, live: LiveState, opts: Options, record: Recorder) -> field_policy.Policies:
    """The apply policies and ``ignore_fields`` rules of the ``plan``'s members (``field_policy.resolve``);
    warns about a rule that matches no member or no field of one."""
    rules = field_policy.parse_rules(opts.ignore_fields)
    policies = field_policy.resolve(rules, plan.members, live, opts.field_manager)
    record.warn(*field_policy.unused_rules(rules, plan.members))
    return policies


def _order_members(client: KubeApi, discovery: Discovery, plan: plans.Plan, live: LiveState,
                   pruned: frozenset) -> ordering.Order | None:
    """The order of the run's members (``ordering.decide_order``), or None when none is ordered.
    A dependency outside the set that was not listed is read (one GET each, in the order of
    their identities); one on neither, or one this run prunes (``pruned``), is refused.

    Raises:
        InputErrors: what ``ordering.decide_order`` and ``ordering.unavailable`` refuse.
    """
    members = plan.members
    order = ordering.decide_order(members, discovery)
    if order is None:
        return None
    absent = frozenset(key for key, res in sorted(order.external.items())
                       if key not in live and client.get(res, key.name, key.namespace or None) is None)
    problems = ordering.unavailable(order, members, absent, pruned)
    if problems:
        raise InputErrors(problems)
    return order


def _first_prune_decisions(parent: Parent, plan: plans.Plan, live: LiveState, opts: Options,
                           taken: adoption.Adoption, released: frozenset) -> tuple:
    """The prune candidates, the UIDs about to be applied, and the candidates' first decisions with
    the guard applied. The candidates are kept: after the applies they are decided again with
    the applied UIDs."""
    desired_keys = plan.keys()
    in_set = [o for o in live.objects.values() if (o.meta.get("labels") or {}).get(spec.LABEL_PART_OF) == parent.id]
    in_set += taken.adopted
    candidates = _without_kept_versions([o for o in in_set if o.key not in desired_keys], plan, opts.versioned_keep)
    # UIDs of the live objects this run is about to apply: the same object listed under
    # another group (Event and Event.events.k8s.io) is never a prune candidate.
    listed_uids = (live.objects[key].uid for key in desired_keys if key in live)
    about_to_apply = frozenset(uid for uid in listed_uids if uid is not None)
    if not opts.prune:
        if not plan.members:
            raise InputError("no objects passed to apply", obj=parent.set_ref,
                             fix="give src or definition, or use state: absent")
        return candidates, about_to_apply, prunes.PruneDecisions([])
    first = prunes.decide_all([(o.resource, o.meta) for o in candidates],
                              prune_context(parent, taken.adopted, about_to_apply, released))
    refusal = prunes.guard(first.delete, len(in_set) + taken.desired_count, not plan.members, opts.guard)
    if refusal is not None:
        raise GuardError(refusal.message, obj=parent.set_ref, fix=refusal.fix, details=refusal.details)
    return candidates, about_to_apply, first


def _without_kept_versions(candidates: list[LiveObject], plan: plans.Plan, keep: int) -> tuple[LiveObject, ...]:
    """The candidates but the older versions of the versioned objects this run applies that it keeps
    (rules.versioned_keep): they stay members, neither pruned nor reported."""
    applied = versioned_keep.applied_series((m.resource.group_kind, m.body) for m in plan.members)
    if not applied:
        return tuple(candidates)
    kept = versioned_keep.kept_versions([(o.resource.group_kind, o.meta) for o in candidates], applied, keep)
    return tuple(o for index, o in enumerate(candidates) if index not in kept)


def _hints(parent: Parent, plan: plans.Plan, live: LiveState, discovery: Discovery, opts: Options,
           adopted: tuple) -> Hints:
    """What the parent records while the run writes (the union of old and new, for crash safety)
    and once everything went through (exactly this run's set, and what must stay recorded)."""
    superset = (parent.recorded_group_kinds | plan.group_kinds | {o.resource.group_kind for o in adopted},
                parent.namespaces | plan.namespaces | {o.meta["namespace"] for o in adopted if o.meta.get("namespace")})
    final = superset
    if opts.prune:
        final = retained_hint(discovery, parent, live.not_listed, plan.group_kinds,
                              plan.namespaces | ({parent.namespace} if parent.namespace else set()))
    return Hints(superset, final, superset_changes=not parent.exists or hint_differs(parent, *superset),
                 final_changes=not parent.exists or hint_differs(parent, *final))


def retained_hint(discovery: Discovery, parent: Parent, not_listed: Collection[GroupKind],
                  group_kinds: Iterable[GroupKind], namespaces: Iterable[str]) -> tuple[set, set]:
    """A final hint plus what must stay recorded: kinds whose members could not be listed
    (and, while any of them may be namespaced, every recorded namespace)."""
    if not not_listed:
        return set(group_kinds), set(namespaces)
    served = [discovery.for_group_kind(gk) for gk in not_listed]
    namespaced_or_unknown = any(res is None or res.namespaced for res in served)
    return (set(group_kinds) | set(not_listed),
            set(namespaces) | (parent.namespaces if namespaced_or_unknown else set()))


def hint_differs(parent: Parent, group_kinds: Iterable[GroupKind], namespaces: Iterable[str]) -> bool:
    """Whether writing this hint would change the parent (or its tooling, or an old annotation)."""
    return bool(parent.legacy_annotation or parent.dropped_group_kinds or parent.tooling != spec.tooling_value()
                or set(group_kinds) != parent.recorded_group_kinds or set(namespaces) != parent.namespaces)


def find_unchanged(plan: plans.Plan, live: LiveState, opts: Options,
                   set_managers: Collection[str] = frozenset()) -> dict[spec.ObjectId, str | None]:
    """``{ObjectId: uid}`` of the members whose apply would change nothing (nochange.why_apply;
    ``set_managers``: a rollback's, from load-revision); empty with ``reapply: always``. Members
    whose CRD this run applies are never listed."""
    if opts.reapply != "changed":
        return {}
    unchanged = {}
    for member in plan.members:
        found = live.get(member.key)
        if member.crd_in_set or found is None or found.resource.group_kind != member.resource.group_kind:
            continue
        if nochange.why_apply(member.body, found.obj, opts.field_manager, digested=True,
                              set_managers=set_managers) is None:
            unchanged[member.key] = found.uid
    return unchanged


def _parent_namespace_first(parent: Parent, plan: plans.Plan, live: LiveState) -> plans.DesiredObject | None:
    """The set's Namespace object for a parent that does not exist yet in a namespace that does
    not either: it is applied before the parent (which cannot be created before it)."""
    if parent.exists:
        return None
    namespace_id = spec.ObjectId.of(spec.NAMESPACE_KIND, None, parent.namespace)
    member = next((m for m in plan.members if m.key == namespace_id), None)
    return None if member is None or namespace_id in live else member


def show_final_hint(ctx: RunContext) -> None:
    """Step show-final-hint (check mode): the result shows the hint a real run would leave, and
    whether it would write the parent."""
    hints = ctx.decisions.hints
    ctx.report.parent_changed = hints.final_changes
    ctx.describe_hint(*hints.final)
