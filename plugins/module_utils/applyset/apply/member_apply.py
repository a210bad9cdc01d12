"""One object's apply: the server-side apply, its conflicts, the take-over of fields that
client-side tools own (after the apply) or, in a rollback, other field managers of the set's
releases (before it), and a change the server refuses in place (recreated when its update
strategy says so, recreate.py).

Runs in worker threads: every function returns the object's ``MemberOutcome`` (result, diff
changes, warnings) and never writes to the report; the coordinator records outcomes in plan
order (steps/applying.py). API errors become the object's failed result, never an exception.
"""

from __future__ import annotations

import dataclasses
import re
import time

from collections.abc import Callable, Collection
from typing import Any

from ..object_meta import KubeObject, ManagedFieldsEntry, annotations_of, labels_of, metadata_of, uid_of
from ..rules import csa, drift
from . import recreate
from ..rules import plan as plans
from .. import spec
from ..errors import ApiError, ApplySetError, ConflictError, immutable_refusal, missing_namespace
from ..kube.http_requests import Response
from ..run.report import Change, MemberOutcome, ObjectResult, normalize, result_for
from .member_inputs import MemberApply

# How the server names the part-of label in an apply conflict's causes.
_PART_OF_FIELD = f".metadata.labels.{spec.LABEL_PART_OF}"
# How the server names the other manager in a conflict's cause: 'conflict with "kubectl" using apps/v1'.
_CONFLICT_WITH = re.compile(r'conflict with "([^"]*)"')


def apply_member(run: MemberApply, member: plans.DesiredObject, created_namespaces: Collection[str]) -> MemberOutcome:
    """Apply one desired object (a dry run in check mode), or skip it when ``decide`` found it
    unchanged; its result says its drift (drift.py, from what was listed before the write).

    Args:
        run: what the apply reads of its run (``member_inputs.MemberApply``).
        member: the desired object.
        created_namespaces: names of Namespaces this run created in an earlier phase.
    """
    return with_drift(run, member, _apply_member(run, member, created_namespaces))


def with_drift(run: MemberApply, member: plans.DesiredObject, outcome: MemberOutcome) -> MemberOutcome:
    """``outcome`` with its member's drift (``drift.mark``), judged against what the run listed
    and decided before its first write (read only: safe in a worker)."""
    return drift.mark(member, outcome, drift.Basis(
        live=run.live.objects if run.live is not None else None, record=run.member_record,
        policies=run.decisions.policies if run.decisions is not None else None,
        field_manager=run.opts.field_manager, dry_run=run.opts.dry_run))


def _apply_member(run: MemberApply, member: plans.DesiredObject, created_namespaces: Collection[str]) -> MemberOutcome:
    """Apply one desired object (a dry run in check mode), or skip it when ``decide`` found it
    unchanged.

    Args:
        run: what the apply reads of its run (``member_inputs.MemberApply``).
        member: the desired object.
        created_namespaces: names of Namespaces this run created in an earlier phase (a check-mode
            apply into one of them cannot be dry-run yet).
    """
    found = run.live.get(member.key) if run.live is not None else None
    before = found.obj if found is not None else None
    if member.key in run.unchanged:
        # The live object already is what this apply would make (nochange.why_apply): not sent.
        return unchanged_outcome(run, member)
    if run.opts.dry_run and member.crd_in_set:
        return MemberOutcome(result_for(member, "created", reason="its CRD is created by this run, so the server "
                                        "cannot dry-run it yet"), [Change(member.ref, None, member.body)])
    taken = _take_over_release_fields(run, member, before)
    if isinstance(taken, MemberOutcome):
        return taken
    sent = _send(run, member, before, created_namespaces)
    if isinstance(sent, MemberOutcome):
        sent.warnings[:0] = taken
        return sent
    removes: list[str] = []
    if taken and run.opts.dry_run and run.decisions is not None and run.decisions.helm is not None:
        sent, removes = _preview_release_removals(run, member, sent)
    outcome = applied_outcome(run, member, before, sent, taken + [f"{member.ref}: {w}" for w in sent.warnings])
    outcome.removes = removes
    return outcome


def _preview_release_removals(run: MemberApply, member: plans.DesiredObject, sent: Response) -> tuple[Response, list[str]]:
    """Check mode of a take-over: the dry run's answer without what the real run's
    apply removes once the release managers' fields are ours (``csa.release_removals``: Helm's
    annotations, fields only Helm set), and those fields' names, so that the diff shows it."""
    paths = csa.release_removals(metadata_of(sent.body).get("managedFields"), run.opts.field_manager,
                                 run.set_managers, member.body.get("apiVersion"))
    if not paths:
        return sent, []
    removed = csa.without_fields(sent.body, paths)
    try:
        # The server defaults again what a removal leaves unset (a Deployment's strategy, which Helm 3's
        # client-side create owns): a dry-run update of the object without those fields says what stays.
        settled = run.client.request("PUT", member.resource.path(member.namespace, member.name), body=removed,
                                     query={"dryRun": "All", "fieldManager": run.opts.field_manager}).body
    except ApiError:
        settled = removed
    shown = [p for p in paths if csa.value_at(sent.body, p) != csa.value_at(settled, p)]
    return dataclasses.replace(sent, body=settled), [csa.field_name(p) for p in shown]


def _take_over_release_fields(run: MemberApply, member: plans.DesiredObject,
                              before: KubeObject | None) -> list[str] | MemberOutcome:
    """A rollback's takeover before its apply: the entries of the set's other release managers
    (``run.set_managers``) merged into ours (csa.merge_releases), so the apply neither conflicts
    with a later release's fields nor leaves those only it set. Returns the warnings, or the
    member's failed outcome when the takeover could not be written (the apply would leave them).
    """
    if before is None or not run.set_managers:
        return []

    helm = run.decisions.helm if run.decisions is not None else None

    def plan_merge(obj: KubeObject | None) -> csa.Migration | None:
        migration = csa.merge_releases(metadata_of(obj).get("managedFields"), run.opts.field_manager,
                                       run.set_managers, member.body.get("apiVersion"))
        if migration is not None and helm is not None and set(migration.releases) <= helm.managers:
            migration.releases_of = f"Helm release {helm.release.ref}"  # helm.take_over (steps/release_takeover.py)
        return migration

    migration = plan_merge(before)
    if migration is None:
        return []
    if run.opts.dry_run:
        return [f"{member.ref}: a real run first takes over {migration.describe()}"]
    try:
        _taken, migration = _migrate(run, member, before, migration, plan_merge)
    except ApiError as err:
        reason = (f"could not take over the fields of earlier releases' field managers before the rollback's "
                  f"apply ({err.message}); nothing of it was applied. Fix: run the rollback again")
        return MemberOutcome(result_for(member, "failed", reason=reason, error=err))
    return [] if migration is None else [f"{member.ref}: took over {migration.describe()}"]


def unchanged_outcome(run: MemberApply, member: plans.DesiredObject) -> MemberOutcome:
    """The outcome of a member whose apply is skipped: unchanged, unless an attempt of this run
    without the claim updated it before the run started over (then that attempt's outcome)."""
    uid = run.unchanged[member.key]
    carried = run.carried.get(member.key)
    if carried is None:
        return MemberOutcome(result_for(member, "unchanged", uid=uid))
    if carried.result is not None and carried.result.action == "unchanged":
        return MemberOutcome(carried.result)
    after = carried.after if carried.after is not None else run.listed(member.key)
    return MemberOutcome(carried.result or result_for(member, "configured", uid=uid),
                         [Change(member.ref, carried.before, after)], list(carried.warnings))


def _send(run: MemberApply, member: plans.DesiredObject, before: KubeObject | None,
          created_namespaces: Collection[str]) -> Response | MemberOutcome:
    """The server-side apply of ``member``: its response, or the object's outcome when refused.

    Retried while the endpoint of a CRD this run created comes up, and once after taking
    the part-of label for ``adopt`` when only that label conflicts.
    """
    opts = run.opts
    deadline = time.monotonic() + (opts.crd_timeout if member.crd_in_set else 0)
    force = opts.force_conflicts
    label_taken = False
    while True:
        try:
            return run.client.apply(member.resource, member.body, field_manager=opts.field_manager,
                                    force=force, dry_run=opts.dry_run, field_validation=opts.field_validation)
        except ConflictError as err:
            if opts.dry_run and not force and _only_release_conflicts(run, err):
                force = True  # a real rollback owns these fields by then (_take_over_release_fields)
                continue
            if opts.dry_run and not force and not (opts.adopt and _only_part_of_conflicts(err)):
                return _conflict_preview(run, member, before, err)
            if label_taken or not (opts.adopt and _only_part_of_conflicts(err) and before is not None):
                return MemberOutcome(result_for(member, "failed", reason=_conflict_message(err), error=err))
            # adopt: true means "take the part-of label", and only that field: the other
            # tool's apply owns it with another set's id.
            label_taken = True
            if opts.dry_run:
                force = True  # nothing is written; the conflict was on the label alone
                continue
            try:
                _take_part_of_label(run, member, before)
            except ApiError as patch_err:
                return MemberOutcome(result_for(member, "failed", reason="adopting it failed: could not take its "
                                                f"part-of label: {patch_err.message}", error=patch_err))
        except ApiError as err:
            if err.status == 404 and member.crd_in_set and time.monotonic() < deadline:
                time.sleep(0.5)  # the new CRD's endpoint is not served yet
                continue
            return _refused(run, member, before, err, created_namespaces)


def _conflict_preview(run: MemberApply, member: plans.DesiredObject, before: KubeObject | None,
                      err: ConflictError) -> MemberOutcome:
    """Check mode and a field conflict: the preview goes on as a forced dry run (nothing is
    written), and the member's result says that a real run refuses it without force_conflicts.
    A scheduled preview so always completes and reports the conflict as drift."""
    opts = run.opts
    try:
        resp = run.client.apply(member.resource, member.body, field_manager=opts.field_manager, force=True,
                                dry_run=True, field_validation=opts.field_validation)
    except ApiError as forced_err:
        return _refused(run, member, before, forced_err, frozenset())
    message = _conflict_message(err)
    outcome = applied_outcome(run, member, before, resp, [f"{member.ref}: {w}" for w in resp.warnings])
    outcome.result.reason = f"a real run refuses this apply: {message}"
    outcome.warnings.append(f"{member.ref}: {message}")
    return outcome


def _refused(run: MemberApply, member: plans.DesiredObject, before: KubeObject | None, err: ApiError,
             created_namespaces: Collection[str]) -> MemberOutcome:
    """The outcome of an apply the server refused: a check-mode create in a namespace this run
    creates, a missing namespace, an immutable change (maybe recreated), or a plain failure."""
    if (run.opts.dry_run and err.status == 404
            and (member.namespace in created_namespaces or member.namespace == run.namespace_to_create)):
        return MemberOutcome(result_for(member, "created", reason=f"namespace {member.namespace} is created by "
                                        "this run, so the server cannot dry-run it yet"),
                             [Change(member.ref, None, member.body)])
    if missing_namespace(err):
        return MemberOutcome(_missing_namespace_result(run, member, err))
    immutable = immutable_refusal(err)
    if immutable:
        return _immutable(run, member, before, err, immutable)
    if run.opts.dry_run and err.status == 403:
        return MemberOutcome(result_for(member, "failed", reason=dry_run_refusal(member, err), error=err))
    return MemberOutcome(result_for(member, "failed", reason=err.message, error=err))


def dry_run_refusal(member: plans.DesiredObject, err: ApiError) -> str:
    """Why a check-mode apply was refused (403): a server-side dry run is authorized as the write
    itself, so read-only credentials (the view ClusterRole) cannot preview; names the verb."""
    found = re.search(r"cannot (\w+) resource", err.message or "")
    verb = found.group(1) if found else "patch"
    res = member.resource
    name = f"{res.plural}.{res.group}" if res.group else res.plural
    where = f" in namespace {member.namespace}" if res.namespaced and member.namespace else ""
    return (f"check mode sends server-side dry runs, which the API server authorizes as the writes themselves: the "
            f"credentials need {verb} on {name}{where} even to preview (read-only roles such as view have no write "
            f"verbs): {err.message}")


def applied_outcome(run: MemberApply, member: plans.DesiredObject, before: KubeObject | None, resp: Response,
                    warnings: list[str]) -> MemberOutcome:
    """What an accepted apply did: created, configured or unchanged, with its diff change.

    Args:
        warnings: the object's warnings so far (the server's, prefixed); the take-over's follow.
    """
    opts = run.opts
    after, taken = _take_over_client_side_fields(run, member, resp.body)
    warnings = warnings + taken
    uid = uid_of(after)
    if before is None or resp.status == 201:
        action = "created"
    elif opts.dry_run or opts.diff:
        action = "unchanged" if normalize(before) == normalize(after) else "configured"
    else:
        action = "unchanged" if apply_changed_nothing(before, after, opts.field_manager) else "configured"
    # Only a run that renders diffs keeps the answer: each outcome waits in its phase's list until the
    # coordinator records it, and a whole object per member there was most of a large run's peak memory.
    changes = [Change(member.ref, before, after)] if action != "unchanged" and opts.diff else []
    return MemberOutcome(result_for(member, action, uid=None if opts.dry_run and action == "created" else uid),
                         changes, warnings)


def _take_over_client_side_fields(run: MemberApply, member: plans.DesiredObject,
                                  applied: KubeObject) -> tuple[KubeObject, list[str]]:
    """Make fields that client-side tools own ours where csa.py says so, as kubectl's
    managed-fields upgrade does; returns the object as it is afterwards, and the warnings.

    Runs after a successful apply, like kubectl: one extra request in the rare case, none
    otherwise. A failure is a warning (the apply itself went through), and the next run
    tries again.
    """
    opts = run.opts
    meta = metadata_of(applied)
    migration = csa.plan(meta.get("managedFields"), opts.field_manager)
    if migration is None:
        return applied, []
    if opts.dry_run:
        return applied, [f"{member.ref}: a real run takes over {migration.describe()}"
                         + ("; fields they set that the manifest does not are then removed"
                            if migration.needs_reapply else "")]
    warnings: list[str] = []
    try:
        applied, migration = _migrate(run, member, applied, migration)
        if migration is None:
            return applied, warnings
        warnings.append(f"{member.ref}: took over {migration.describe()}")
        if migration.needs_reapply:
            applied = run.client.apply(member.resource, member.body, field_manager=opts.field_manager,
                                       force=opts.force_conflicts, field_validation=opts.field_validation).body
    except ApiError as err:
        warnings.append(f"{member.ref}: could not take over the fields of client-side tools "
                        f"({err.message}); the next run tries again")
    return applied, warnings


def _migrate(run: MemberApply, member: plans.DesiredObject, applied: KubeObject, migration: csa.Migration,
             plan_again: Callable[[KubeObject], csa.Migration | None] | None = None
             ) -> tuple[KubeObject, csa.Migration | None]:
    """Send the managed-fields patch (csa.patch), planned again (``plan_again(obj)``; csa.plan by
    default) on a fresh read when the object changed since it was read; returns the object
    afterwards and the migration made (None when a fresh read needs none)."""
    if plan_again is None:
        def plan_again(obj: KubeObject) -> csa.Migration | None:
            return csa.plan(metadata_of(obj).get("managedFields"), run.opts.field_manager)
    res, name, namespace = member.resource, member.name, member.namespace
    meta = metadata_of(applied)
    for _attempt in range(3):
        try:
            applied = run.client.json_patch(res, name, namespace, csa.patch(migration, meta.get("resourceVersion")),
                                            field_manager=run.opts.field_manager).body
            return applied, migration
        except ConflictError:  # changed since our apply: plan again on what is there now
            applied = run.client.get(res, name, namespace) or applied
            meta = metadata_of(applied)
            again = plan_again(applied)
            if again is None:
                return applied, None
            migration = again
    raise ApiError("the object kept changing", status=409)


def _missing_namespace_result(run: MemberApply, member: plans.DesiredObject, err: ApiError) -> ObjectResult:
    """The namespace went missing after the check (or could not be read): say so, not just 404."""
    name = missing_namespace(err)
    fix = f"add a Namespace object for {name} to the set, or create it beforehand"
    if name == run.home_namespace:
        fix += ", or set create_namespace: true"
    error = ApiError(f"namespace {name} does not exist ({err.message})", status=err.status, reason=err.reason,
                     body=err.body, obj=member.ref, fix=fix, details=err.details)
    return result_for(member, "failed", reason=f"{error.message}. Fix: {fix}", error=error)


def _immutable(run: MemberApply, member: plans.DesiredObject, before: KubeObject | None, err: ApiError,
               immutable: list[tuple[str, str]]) -> MemberOutcome:
    """A change the server refuses in place: recreate when its update strategy says so, else name
    the fields and the way out."""
    fields = "; ".join(text for _field, text in immutable)
    if member.resource.group_kind in plans.PROTECTED_KINDS:
        fix = (f"revert the change; a {member.resource.kind} is a protected kind and is never deleted to be "
               "created again (its data or contents would be lost)")
    elif plans.update_strategy(member, run.opts.recreate_on_immutable) == plans.STRATEGY_RECREATE:
        return recreate.recreate(run, member, before, fields)
    else:
        fix = (f"revert the change, or let it be deleted and created again: list {member.resource.kind} in "
               f"recreate_on_immutable, or annotate the object {plans.ANNOTATION_UPDATE_STRATEGY}: "
               f"{plans.STRATEGY_RECREATE}")
    message = f"the server cannot change it in place: {fields}"
    error = ApiError(message, status=err.status, reason=err.reason, obj=member.ref, fix=fix,
                     details={**(err.details or {}), "immutable_fields": [f for f, _text in immutable if f]})
    return MemberOutcome(result_for(member, "failed", reason=f"{message}. Fix: {fix}", error=error))


def _take_part_of_label(run: MemberApply, member: plans.DesiredObject, before: KubeObject) -> None:
    """Set the part-of label to this set's id with a merge patch guarded by the resourceVersion
    that was listed: an update takes a field over from another manager without a conflict,
    and touches nothing else."""
    patch = {"metadata": {"labels": {spec.LABEL_PART_OF: run.parent_id},
                          "resourceVersion": metadata_of(before).get("resourceVersion")}}
    run.client.merge_patch(member.resource, member.name, member.namespace, patch, field_manager=run.opts.field_manager)


# ----- reading the server's answers ------------------------------------------------------------


def _apply_entry(obj: KubeObject, manager: str) -> ManagedFieldsEntry | None:
    """Our manager's Apply entry of ``obj``'s managedFields (a managedFields entry: JSON), or None."""
    return next((e for e in metadata_of(obj).get("managedFields") or []
                 if e.get("manager") == manager and e.get("operation") == "Apply" and not e.get("subresource")),
                None)


def apply_changed_nothing(before: KubeObject, after: KubeObject, manager: str) -> bool:
    """Whether our apply left the object as it was listed (``before`` is metadata only).

    The same resourceVersion says so. A newer one alone does not say the opposite: a controller
    may have written the object's status (a Job's, say) between our LIST and our apply. So for
    an object with a status, a newer resourceVersion still counts as unchanged when its spec
    generation, labels, annotations and our manager's managedFields entry are all as listed:
    a status write touches none of them, and a change by our apply touches at least one.
    """
    meta_before, meta_after = metadata_of(before), metadata_of(after)
    if meta_before.get("resourceVersion") == meta_after.get("resourceVersion"):
        return True
    if "status" not in after or meta_before.get("generation") is None:
        return False
    ours_before = _apply_entry(before, manager)
    return (ours_before is not None and ours_before == _apply_entry(after, manager)
            and meta_before.get("generation") == meta_after.get("generation")
            and labels_of(before) == labels_of(after) and annotations_of(before) == annotations_of(after))


def conflict_causes(err: ApiError) -> list[dict[str, Any]]:
    """The causes of an apply conflict (``details.causes``), each a dict with ``field`` and ``message``."""
    causes = ((err.body or {}).get("details") or {}).get("causes") or []
    return [c for c in causes if isinstance(c, dict)]


def _only_release_conflicts(run: MemberApply, err: ConflictError) -> bool:
    """Whether every conflict of ``err`` is with another field manager of the set's releases (a
    rollback takes their fields over before a real apply; the server names each manager)."""
    others = run.set_managers - {run.opts.field_manager}
    named = [_CONFLICT_WITH.search(c.get("message") or "") for c in conflict_causes(err)]
    return bool(named) and all(found is not None and found.group(1) in others for found in named)


def _only_part_of_conflicts(err: ConflictError) -> bool:
    fields = [c.get("field") for c in conflict_causes(err)]
    return bool(fields) and all(f == _PART_OF_FIELD for f in fields)


def _conflict_message(err: ConflictError) -> str:
    lines = [f"{c.get('message', 'conflict')} at {c['field']}" if c.get("field") else c.get("message", "")
             for c in conflict_causes(err)]
    detail = "; ".join(line for line in lines if line) or err.message
    return (f"conflicts with another field manager: {detail}; set force_conflicts: true to take these "
            "fields over, or remove them from the manifest")


def as_outcome(member: plans.DesiredObject, outcome: MemberOutcome | Exception) -> MemberOutcome:
    """A worker's answer as an outcome: an exception it raised becomes the member's failure."""
    if isinstance(outcome, Exception):
        err = outcome if isinstance(outcome, ApplySetError) else ApplySetError(str(outcome))
        return MemberOutcome(result_for(member, "failed", reason=str(err), error=err))
    return outcome
