"""Taking over a release Helm installed (``helm.take_over``), and refusing Helm's objects otherwise.

In the decide step (``find``, reads only): the releases that own desired objects are read from
their records (``parent.helm_release``); a run that would apply them without taking exactly that
release over, or while Helm is changing it, is refused (``rules.helm_takeover``) before any write.
With ``take_over``:

- the release's objects that the manifests still contain are applied as members, and the field
  managers Helm wrote them under join ``ctx.set_managers``: their managedFields entries are merged
  into ours before the apply (``apply.member_apply``, ``rules.csa.merge_releases``, as client-go's
  csaupgrade does), so the apply keeps every UID, conflicts with nothing, and removes what only
  Helm set and our manifests do not (Helm's own ``meta.helm.sh/*`` annotations among them);
- the release's objects that the manifests no longer contain are taken in like ``adopt_legacy``'s
  (labelled after the claim) and pruned under the usual rules, each exactly the object of the
  release read here (its annotations name the release; the DELETE has its UID as precondition);
- before any write of a real run (``refuse_conflicts``, step check-take-over, dry runs only), every
  object of the release the run applies is dry-run: a field another manager owns (not Helm, whose
  fields become ours) refuses the whole take-over, naming each object and manager, unless
  ``force_conflicts``; so a take-over never stops half way on a conflict check mode predicted;
- after everything went through, ``retire`` (step retire-helm-release) deletes the release's
  records, each by UID: ``helm list`` no longer shows the release and ``helm uninstall`` has
  nothing to delete. The newest release's chart metadata and manifest digest become the provenance
  of the set's revision.

The result's ``applyset.helm_take_over`` says what is (or, in check mode, would be) done.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from typing import Any

from ..object_meta import metadata_of
from .. import spec
from ..errors import ApiError, ApplySetError, ConflictError
from ..apply.member_apply import conflict_causes
from ..kube.listing import LiveObject
from ..parent import helm_release
from ..rules import helm_takeover as rules
from ..parent.model import Parent
from ..run.options import RunOptions
from ..run.report import Recorder, Report
from ..run.runner import DRY_RUN, RunContext, Step
from ..run.records import Decisions, LiveState, TakeOver
from ..kube.api import KubeApi
from ..kube.discovery import Discovery
from ..rules.plan import DesiredObject, Plan

# How the server names the other manager in a conflict's cause: 'conflict with "kubectl-edit" using v1'.
_CONFLICT_WITH = re.compile(r'conflict with "([^"]*)"')


def home_namespace(opts: RunOptions, namespace: str | None, parent: Parent) -> str:
    """The release's namespace: ``helm.namespace``, else the set's (the run's ``namespace``, else the
    ``parent``'s)."""
    return opts.helm.namespace or namespace or parent.namespace or "default"


def find(client: KubeApi, discovery: Discovery, opts: RunOptions, namespace: str | None, parent: Parent, plan: Plan,
         live: LiveState, record: Recorder) -> TakeOver | None:
    """Refuse Helm's objects not taken over, and decide the take-over of ``helm.release_name``
    (reads only; see the module's docstring). The run's ``namespace`` is the release's default one;
    the take-over's field managers join the set's and its release the revision's provenance
    (``with_provenance``) by the decide step.

    Raises:
        ApplySetError: naming the release and the fix, before any write.
    """
    helm = opts.helm
    home = home_namespace(opts, namespace, parent) if helm.take_over else None
    wanted = rules.Wanted(helm.take_over, helm.release, home)
    owned = rules.owners(plan.members, {key: o.meta for key, o in live.objects.items()})
    releases = {owner: helm_release.read(client, discovery, *owner) for owner in sorted(owned)}
    release = None
    if wanted.take_over and wanted.name:
        key = (wanted.name, wanted.namespace or "")
        release = releases[key] if key in releases else helm_release.read(client, discovery, *key)
    refusal = rules.refuse(owned, releases, wanted) or (rules.pending_refusal(release) if release else None)
    if refusal is not None:
        raise ApplySetError(refusal.message, obj=parent.set_ref, fix=refusal.fix)
    if not wanted.take_over:
        return None
    if release is None:
        record.report.applyset["helm_take_over"] = {"release": wanted.name, "namespace": wanted.namespace,
                                                    "found": False}
        return None
    desired_refs = owned.get((release.name, release.namespace), [])
    take, left = _take_over(client, discovery, plan, live, parent.id, release, desired_refs)
    if left:
        record.warn(f"helm.take_over: {', '.join(left)} of Helm release {release.ref} no longer carry the "
                    "release's annotations; left alone")
    _show(record.report, release, desired_refs, list(take.dropped), set(take.managers))
    return take


def _take_over(client: KubeApi, discovery: Discovery, plan: Plan, live: LiveState, set_id: str,
               release: helm_release.Release, desired_refs: list[str]) -> tuple[TakeOver, list[str]]:
    """The take-over of ``release``: its objects the set ``set_id`` does not apply (``dropped``,
    labelled as members) and Helm's field managers, read from what list-live saw (``live``) or one
    GET each; with the objects that no longer carry the release's annotations (left alone)."""
    owner = (release.name, release.namespace)
    desired_keys = plan.keys()
    dropped, managers, left = [], set(), []
    for key, res in sorted(helm_release.object_ids(release, discovery).items()):
        listed = live.get(key)
        obj = listed.obj if listed is not None else client.get(res, key.name, key.namespace or None)
        meta = metadata_of(obj)
        if obj is None or helm_release.owner_of(meta) != owner:
            if obj is not None:
                left.append(f"{res.kind} {key.namespace + '/' if key.namespace else ''}{key.name}")
            continue
        managers |= rules.helm_managers(meta.get("managedFields"))
        if key not in desired_keys:
            labels = {**(meta.get("labels") or {}), spec.LABEL_PART_OF: set_id}
            dropped.append(LiveObject(res, {"metadata": {**meta, "labels": labels}}))
    return TakeOver(release, tuple(dropped), len(desired_refs), frozenset(managers)), left


def with_provenance(opts: RunOptions, release: helm_release.Release) -> RunOptions:
    """``opts`` whose history's provenance names ``release`` (a real run with a history), else ``opts``."""
    if opts.history is None or opts.dry_run:
        return opts
    provenance = {**opts.history.provenance, "helm_release": release.provenance()}
    return dataclasses.replace(opts, history=dataclasses.replace(opts.history, provenance=provenance))


def _show(report: Report, release: helm_release.Release, desired_refs: list[str], dropped: list[LiveObject],
          managers: set[str]) -> None:
    report.applyset["helm_take_over"] = {
        "release": release.name, "namespace": release.namespace, "found": True, "revision": release.version,
        "status": release.status, "chart": dict(release.chart),
        "adopted": sorted(desired_refs),
        "dropped": [f"{o.resource.kind} {o.key.namespace + '/' if o.key.namespace else ''}{o.key.name}"
                    for o in dropped],
        "field_managers": sorted(managers),
        "records": [record.name for record in release.records],
        "retired": False,
    }


def retire(ctx: RunContext) -> None:
    """Step retire-helm-release: once every object of the release is a member (the run got here:
    nothing failed), delete the release's records, each by UID, newest last so that an
    interrupted retirement leaves the release listed at its newest revision."""
    take = ctx.decisions.helm
    if take is None:
        return
    release = take.release
    for record in release.records:
        res = ctx.discovery.for_group_kind(record.kind)
        if res is None:  # never: the records were read through it
            raise AssertionError(f"{record.kind} is not served")
        try:
            ctx.client.delete(res, record.name, release.namespace, uid=record.uid)
        except ApiError as err:
            if err.status == 404:
                continue
            raise ApplySetError(
                f"the objects of Helm release {release.ref} are members of this set now, but its record "
                f"{record.name} could not be deleted: {err.message}",
                obj=f"{record.kind.kind} {release.namespace}/{record.name}",
                fix=f"grant this user delete on {res.plural} in that namespace and run again (the run retires "
                "the records that are left)") from err
    ctx.report.applyset["helm_take_over"]["retired"] = True


def refuse_conflicts(ctx: RunContext) -> None:
    """Step check-take-over (dry runs, before any write): every object of the release taken over
    that the run applies is dry-run; a field another field manager owns (Helm's own fields become
    ours before the apply) refuses the whole take-over, unless ``force_conflicts``.

    Raises:
        ApplySetError: naming each object, field and field manager, and the fix; nothing written.
    """
    take = ctx.decisions.helm
    if take is None or ctx.opts.force_conflicts:
        return
    members = release_members(ctx.plan, ctx.live, ctx.decisions, (take.release.name, take.release.namespace))
    opts = ctx.opts

    def dry_run(member: DesiredObject) -> list[str]:
        try:
            ctx.client.apply(member.resource, member.body, field_manager=opts.field_manager, dry_run=True,
                             field_validation=opts.field_validation)
        except ConflictError as err:
            return foreign_conflicts(conflict_causes(err), take.managers)
        except ApiError:
            pass  # not a conflict: the apply itself reports it, as for any member
        return []

    found = [(member.ref, causes) for member, causes in zip(members, ctx.client.map(dry_run, members))
             if isinstance(causes, list) and causes]
    if found:
        raise ApplySetError(conflict_refusal(take.release.ref, found), obj=ctx.parent.set_ref,
                            fix="set force_conflicts: true to take these fields over from those field managers, or "
                                "remove the fields from the manifests (or give them the values they have); "
                                "nothing was changed")


def release_members(plan: Plan, live: LiveState, decisions: Decisions, owner: tuple[str, str]) -> list[DesiredObject]:
    """The desired members whose live object belongs to the release ``owner`` and that the run applies."""
    return [member for member in plan.members
            if member.key not in decisions.unchanged and (listed := live.get(member.key)) is not None
            and helm_release.owner_of(metadata_of(listed.obj)) == owner]


def foreign_conflicts(causes: list[dict[str, Any]], helm_managers: Collection[str]) -> list[str]:
    """The conflicts of a dry run (``causes``: the server's) with managers that are not Helm's, as
    ``FIELD (manager "NAME")``."""
    found = []
    for cause in causes:
        manager = _CONFLICT_WITH.search(cause.get("message") or "")
        if manager is not None and manager.group(1) in helm_managers:
            continue  # Helm's fields become ours before the apply
        name = f'manager "{manager.group(1)}"' if manager else cause.get("message") or "another manager"
        found.append(f"{cause.get('field') or '?'} ({name})")
    return found


def conflict_refusal(release_ref: str, found: list[tuple[str, list[str]]]) -> str:
    """The message of a take-over refused on the conflicts ``found`` (object ref, its conflicts)."""
    objects = "; ".join(f"{ref}: {', '.join(causes)}" for ref, causes in found)
    return (f"taking over Helm release {release_ref} would stop half way: {len(found)} of its objects would be "
            f"refused for fields other field managers own: {objects}")


CHECK_TAKE_OVER = Step("check-take-over", refuse_conflicts, DRY_RUN, reads="decisions live parent plan")
