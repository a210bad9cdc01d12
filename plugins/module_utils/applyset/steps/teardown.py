"""The end of a set: ``state: absent`` (uninstall: every member deleted under the prune rules,
then the parent) and ``state: disbanded`` (every member left in place without our part-of
label, then the parent).

Both list every member first, and refuse when some recorded kind cannot be listed: removing
the parent would leave those members labelled, with no parent to find them by. The parent is
deleted only once every member went; until then it keeps recording the set.
"""

from __future__ import annotations

from collections.abc import Callable

from ..parent import write as parent_write
from ..rules import prune as prunes
from .. import spec
from ..errors import ApplySetError, GuardError
from ..kube.list_errors import explain_error
from ..kube.listing import failure_of, list_each, live_objects, recorded_scope
from .pruning import carry_out
from ..parent.model import Parent
from ..kube.listing import LiveObject
from ..run.report import Change, ObjectResult, Recorder, live_result
from ..kube.versions import VersionFallback
from ..run.runner import RunContext, StepOrderError
from ..run.records import Hints, Removal, prune_context


def warn_missing_parent(action: str) -> Callable[[RunContext], None]:
    """The step of a route whose parent does not exist: a warning, nothing else."""

    def warn(ctx: RunContext) -> None:
        ctx.record.warn(f"{ctx.set_ref} does not exist (no parent); nothing to {action}")

    return warn


def list_members(action: str) -> Callable[[RunContext], None]:
    """Step list-members: every member of the set, through our selector, in the recorded scope.

    A kind whose LIST fails at the preferred version is listed at another served version
    (``versions.VersionFallback``). For uninstall, custom resources whose LIST fails at every
    version while their CustomResourceDefinition is a member are left to go with it: the server
    deletes them with the CRD (``decide_removal`` makes sure this run deletes it).
    """

    def list_them(ctx: RunContext) -> None:
        parent = ctx.parent
        scope = recorded_scope(parent, ctx.discovery)
        ctx.record.warn(*scope.warnings)
        if scope.not_listed:
            raise ApplySetError(
                f"cannot {action} the set: the members of {spec.format_group_kinds(scope.not_listed)} cannot be "
                "listed (see the warnings), and removing the parent would leave them behind for good",
                obj=ctx.set_ref, fix="run again once the server serves and lists those kinds; nothing was changed")
        selector = f"{spec.LABEL_PART_OF}={parent.id}"
        fallback = VersionFallback(ctx.client, ctx.discovery)
        found = list_each(ctx.client, list(scope.pairs), lambda pair: selector,
                          full_for=set(scope.pairs) if ctx.opts.diff else frozenset(), fallback=fallback)
        ctx.record.warn(*fallback.notes)
        listed = {(used, pair[1]): items for pair, used, items in found if not isinstance(items, Exception)}
        members = tuple(live_objects(listed))
        gone_with_crd = _left_to_their_crds(parent, ctx.record, action, found, members)
        recorded = (parent.group_kinds, parent.namespaces)
        ctx.removal = Removal(members, Hints(recorded, recorded, False, False), gone_with_crd=gone_with_crd)

    return list_them


def _left_to_their_crds(parent: Parent, record: Recorder, action: str, found: list, members: tuple) -> frozenset:
    """The kinds whose LIST failed but whose CRD is a member that uninstall deletes (with a warning
    each); any other failed LIST stops the run."""
    crds = {o.meta.get("name") for o in members if o.resource.group_kind == spec.CRD_KIND}
    left = set()
    for pair, _used, items in found:
        if not isinstance(items, Exception):
            continue
        res = pair[0]
        crd = f"{res.plural}.{res.group}"
        if action != "remove" or crd not in crds:
            raise failure_of(items, pair, parent.set_ref)
        if crd not in left:
            record.warn(f"{res.group_kind} could not be listed ({explain_error(items, res).what}); its objects "
                        f"go with CustomResourceDefinition {crd}, which this uninstall deletes")
        left.add(crd)
    return frozenset(left)


def decide_removal(ctx: RunContext) -> None:
    """Step decide-removal (uninstall): every member decided by the prune rules; the protected-kinds
    rule of the guard refuses before any write, and so does a CRD left in place whose objects could
    not be listed."""
    removal = ctx.removal
    released = ctx.chart_crds.released if ctx.has("chart_crds") else frozenset()  # a chart's crds/: kept
    decided = prunes.decide_all([(o.resource, o.meta) for o in removal.members],
                                prune_context(ctx.parent, (), released_uids=released))
    refusal = prunes.refuse_protected_kinds(decided.delete, 0, False, ctx.opts.guard, removing=True)
    if refusal is not None:
        raise GuardError(refusal.message, obj=ctx.set_ref, fix=refusal.fix, details=refusal.details)
    deleted = {meta.get("name") for res, meta in decided.delete if res.group_kind == spec.CRD_KIND}
    kept = sorted(removal.gone_with_crd - deleted)
    if kept:
        raise ApplySetError(
            f"cannot uninstall the set: the objects of CustomResourceDefinition {', '.join(kept)} could not be "
            "listed, and this run does not delete the CRD (it is kept or skipped), so its members would be left "
            "behind for good",
            obj=ctx.set_ref, fix="make those kinds listable again (see the warnings) and run again; nothing was "
                                 "changed")
    ctx.removal = Removal(removal.members, removal.hints, decided, removal.gone_with_crd)


def delete_members(ctx: RunContext) -> None:
    """Step delete-members: the decisions carried out (deletes with UID preconditions)."""
    live = {o.key: o for o in ctx.removal.members}
    if ctx.removal.decided is None:
        raise StepOrderError("delete-members runs before decide-removal")
    if not carry_out(ctx.client, ctx.opts, ctx.record, ctx.removal.decided, live):
        ctx.failure = ApplySetError(
            "some members could not be deleted; the parent is kept so that a re-run finds them:\n"
            + ctx.record.failures(), obj=ctx.set_ref, fix="fix the errors listed per object and run again")


def unlabel_members(ctx: RunContext) -> None:
    """Step unlabel-members (disband): each member's part-of label removed (nothing in check mode)."""
    patch = {"metadata": {"labels": {spec.LABEL_PART_OF: None}}}

    def unlabel(member: LiveObject) -> ObjectResult:
        meta = member.meta
        if not ctx.opts.dry_run:
            ctx.client.merge_patch(member.resource, meta["name"], meta.get("namespace"), patch,
                                   field_manager=ctx.opts.field_manager)
        return live_result(member.resource, meta, "disbanded", "left in place without the part-of label")

    members = ctx.removal.members
    for member, result in zip(members, ctx.client.map(unlabel, members)):
        if isinstance(result, Exception):
            result = live_result(member.resource, member.meta, "failed", f"could not remove the label: {result}")
        ctx.record.result(result)
    if ctx.report.failed_objects:
        ctx.failure = ApplySetError("some members kept the label; the parent is kept", obj=ctx.set_ref,
                                    fix="run again")


def delete_parent(show_diff: bool) -> Callable[[RunContext], None]:
    """Step delete-parent: the claim ends (its heartbeat stops) and the parent is deleted (a dry run
    in check mode); with ``show_diff`` (uninstall) the diff shows the parent going."""

    def delete(ctx: RunContext) -> None:
        if ctx.claim:
            ctx.claim.stop()
            ctx.claim = None  # the parent goes with it: nothing left to release
        parent = ctx.parent
        parent_write.delete(ctx.client, parent, dry_run=ctx.opts.dry_run)
        ctx.report.parent_changed = True
        if show_diff:
            ctx.record.change(Change(f"{parent.resource.kind} {parent.name}", {"metadata": {"name": parent.name}},
                                     None))

    return delete
