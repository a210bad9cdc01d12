"""The effects of prune decisions: report the skipped, take the kept out of the set, delete the rest.

What to delete is decided by prune.py's named rules, never here. Deletes go in reverse rank
order, a rank at a time (``client.map``), each DELETE with the UID it was listed with as a
precondition: a new object with the same name is never deleted. Workers return results; the
coordinating loop records them in a fixed order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..rules import plan as plans
from ..rules import prune as prunes
from ..rules import prune_order
from . import settling
from .. import spec
from ..object_meta import ObjectMeta
from ..errors import ApiError, ApplySetError
from ..kube.listing import LiveObject
from ..kube.api import KubeApi
from ..run.options import RunOptions
from ..run.report import Change, ObjectResult, Recorder, live_result
from ..run.runner import RunContext
from ..run.options import Options
from ..run.records import Decisions, LiveState
from ..parent.model import Parent

# Actions of objects that this run applied (their UIDs are never pruned).
_APPLIED = ("created", "configured", "replaced", "unchanged")


def prune_step(ctx: RunContext) -> None:
    """Step prune: the candidates decided again with the UIDs the applies returned (kubectl's
    visitedUids: whatever was listed before, nothing this run applied is deleted or taken out of
    the set), then their effects; a failure keeps the parent covering them. After a wait
    (``wait: true``), the candidates the prune-early step took are left out."""
    late = ctx.opts.waiting.enabled and not ctx.opts.dry_run
    if ctx.claim:
        ctx.claim.check()
    failure = _prune(ctx.client, ctx.apply_options, ctx.record, ctx.parent, ctx.decisions, ctx.live,
                     (lambda meta: not prune_order.is_early(meta)) if late else None)
    if failure is not None:
        ctx.failure = failure


def prune_early_step(ctx: RunContext) -> None:
    """Step prune-early (``wait: true``): the candidates annotated ``prune-timing: early``,
    pruned before the wait (prune_order.py)."""
    if ctx.claim:
        ctx.claim.check()
    failure = _prune(ctx.client, ctx.apply_options, ctx.record, ctx.parent, ctx.decisions, ctx.live,
                     prune_order.is_early)
    if failure is not None:
        ctx.failure = failure


def _prune(client: KubeApi, opts: Options, record: Recorder, parent: Parent, decisions: Decisions, live: LiveState,
           which: Callable[[ObjectMeta], bool] | None) -> ApplySetError | None:
    """Prune the candidates whose metadata ``which`` accepts (all when None), the claim checked before
    (by the step); the run's failure when one could not be pruned."""
    candidates = [o for o in decisions.candidates if which is None or which(o.meta)]
    if not candidates:
        return None
    applied = {o.uid for o in record.report.objects if o.uid and o.action in _APPLIED}
    decided = prunes.decide_all([(o.resource, o.meta) for o in candidates],
                                decisions.prune_context(parent, applied | decisions.about_to_apply))
    legacy, helm = opts.adopt_legacy, decisions.helm
    # Whence the adopted objects came, as a pruned one's reason names it: a Helm release taken over, or a
    # legacy prune set (its selector).
    adopted_from = (f"Helm release {helm.release.ref}" if helm is not None
                    else f"the legacy prune set ({legacy.selector})" if legacy else "")
    if not carry_out(client, opts, record, decided, live.objects, adopted=decisions.adopted,
                     adopted_from=adopted_from):
        return ApplySetError(
            "some objects could not be pruned; the parent keeps covering them so the next run retries:\n"
            + record.failures(), obj=parent.set_ref, fix="fix the errors listed per object and run again")
    return None


def carry_out(client: KubeApi, opts: RunOptions, record: Recorder, decided: prunes.PruneDecisions,
              live: dict[spec.ObjectId, LiveObject],
              adopted: Iterable[LiveObject] = (), adopted_from: str = "") -> bool:
    """Record and carry out ``decided``: skipped ones reported, kept ones unlabelled, the rest deleted
    (dry runs in check mode); False when any object of the run failed.

    Args:
        client, opts: the connection and the run's options (``dry_run``, ``propagation_policy`` ...).
        record: where each object's result and diff go (its report says what failed so far).
        decided: the candidates' decisions (prune.decide_all).
        live: ``{ObjectId: listing.LiveObject}``: the objects as listed, for the diff of a pruned one.
        adopted: ``listing.LiveObject`` values taken in from a legacy prune set or a Helm release (their
            reason says so, naming where they came from, ``adopted_from``).
    """
    for d in decided.with_verdict(prunes.SKIP):
        record.result(live_result(d.resource, d.meta, "skipped", d.reason))
    for d in decided.with_verdict(prunes.KEEP):
        record.result(_keep(client, opts, d))
    ok = all(o.action != "failed" for o in record.report.objects)
    adopted_uids = {o.uid for o in adopted}
    stages = prune_order.stages(decided.with_verdict(prunes.PRUNE))
    gone_uids: set = set()  # of the stage before
    for index, stage in enumerate(stages):
        if index and not ok:
            break  # what a failed delete depended on stays, and the parent keeps covering it
        if index:  # dependents (and higher waves) gone, finalizers included, before what they need
            _wait_stage_gone(client, opts, record, [d for d in stages[index - 1] if d.meta.get("uid") in gone_uids])
        gone_uids, ok = _delete_stage(client, opts, record, stage, live, (adopted_uids, adopted_from), ok)
    return ok


def _delete_stage(client: KubeApi, opts: RunOptions, record: Recorder, stage: list,
                  live: dict[spec.ObjectId, LiveObject],
                  adopted: tuple[set, str], ok: bool) -> tuple:
    """Delete one stage in reverse rank order; the UIDs deleted, and whether all went through.
    ``adopted``: the UIDs taken from a legacy prune set or a Helm release, and where they came from."""
    adopted_uids, adopted_from = adopted
    deleted = set()
    by_rank: dict[int, list] = {}
    for d in stage:
        by_rank.setdefault(plans.rank_of(d.resource.group_kind, d.resource.namespaced), []).append(d)
    for rank in sorted(by_rank, reverse=True):
        batch = sorted(by_rank[rank], key=lambda d: (d.resource.kind, d.meta.get("namespace") or "", d.meta["name"]))
        for d, result in zip(batch, client.map(lambda d: _delete_one(client, opts, d), batch)):
            if isinstance(result, Exception):
                result = live_result(d.resource, d.meta, "failed", f"pruning failed: {result}")
            ok = ok and result.action != "failed"
            if result.action == "pruned" and d.meta.get("uid") in adopted_uids:
                result.reason = f"taken over from {adopted_from} and no longer in the manifests"
            record.result(result)
            if result.action == "pruned":
                deleted.add(d.meta.get("uid"))
                found = live.get(spec.ObjectId.from_metadata(d.resource, d.meta))
                before = found.obj if found is not None else {"metadata": d.meta}
                # Listed as metadata only, the object says PartialObjectMetadata: the diff names its own kind.
                record.change(Change(result.ref, {**before, "apiVersion": d.resource.api_version,
                                                  "kind": d.resource.kind}, None))
    return deleted, ok


def _keep(client: KubeApi, opts: RunOptions, decision: prunes.Decision) -> ObjectResult:
    """Take a kept candidate out of the set (its part-of label removed; nothing in check mode)."""
    res, meta = decision.resource, decision.meta
    if not opts.dry_run:
        patch = {"metadata": {"labels": {spec.LABEL_PART_OF: None}}}
        try:
            client.merge_patch(res, meta["name"], meta.get("namespace"), patch, field_manager=opts.field_manager)
        except ApiError as err:
            return live_result(res, meta, "failed", f"could not remove it from the set: {err.message}", error=err)
    return live_result(res, meta, "kept", f"{decision.reason}; removed from the set")


def _delete_one(client: KubeApi, opts: RunOptions, decision: prunes.Decision) -> ObjectResult:
    """DELETE one candidate with its UID as a precondition (a worker: returns its result)."""
    res, meta = decision.resource, decision.meta
    try:
        client.delete(res, meta["name"], meta.get("namespace"), uid=meta.get("uid"),
                      propagation_policy=opts.propagation_policy, dry_run=opts.dry_run)
    except ApiError as err:
        if err.status == 404:
            return live_result(res, meta, "pruned", "already gone")
        if err.status == 409:
            # UID precondition failed: a new object with this name is not ours to delete.
            return live_result(res, meta, "skipped", "replaced by a new object with the same name")
        return live_result(res, meta, "failed", f"pruning failed: {err.message}", error=err)
    return live_result(res, meta, "pruned")


def _wait_stage_gone(client: KubeApi, opts: RunOptions, record: Recorder, pruned: list) -> None:
    """Wait until the objects pruned by a stage are gone (not in check mode).

    Args:
        pruned: the decisions whose DELETE went through.
    """
    if opts.dry_run or not pruned:
        return
    settling.wait_gone(client, [settling.Gone(d.resource, d.meta.get("namespace"), d.meta["name"],
                                              d.meta.get("uid")) for d in pruned],
                       timeout=opts.waiting.timeout, warn=record.warn)
