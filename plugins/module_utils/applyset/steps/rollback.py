"""Rollback: a revision of the set's history applied again, through the normal run.

``rollback_to: N`` (or ``previous``) adds one reading step, ``load-revision``, after the parent is
read: it reads revision N (history.py), refuses what would lose data, and makes the revision's
bodies the run's desired objects. Everything after is an ordinary run: the claim, the guard (a
protected kind to prune still needs ``guard.allow_prune_kinds``), UID-preconditioned prunes of
what came later, check mode and diff, and a new revision recorded (``rollback_of: N``).

What is the revision's and what is the task's: the revision gives what was applied, the member
bodies (per-object annotations included: update strategy, ordering, apply policy); the set is the
task's parent, whose history it is. Every option of the run is the task's (field_manager,
force_conflicts, field_validation, recreate_on_immutable, wait, timeouts, guard, prune, ...), so
that a rollback can be forced or waited for like any run. A revision keeps no hooks: a rollback
runs none.

Releases of one set may have used several field managers. Server-side apply removes only the
fields its own manager owned, and conflicts with fields another manager took. So the step also
learns every field manager the kept revisions recorded (``ctx.set_managers``), and each member
whose managedFields hold entries of the others gets them merged into the rollback's manager
before its apply (csa.merge_releases, member_apply.py): the apply then leaves the object as the
revision had it.

``on_failure: rollback`` (``apply_or_roll_back``): when a release fails (its apply or its wait),
the last good revision before it is applied in a second run with its own ``rollback_timeout``;
the task still fails, naming the revision it returned to and the original error.
"""

from __future__ import annotations

import dataclasses

from ..history import revisions as history
from .. import spec
from ..errors import ApplySetError, GuardError, InputError, ParentError
from ..inputs.manifests import Manifest
from ..inputs.manifest_checks import validate
from ..run.report import CHANGING_ACTIONS
from ..run.runner import READ, Step
from ..run.runner import RunContext


def rolls_back(opts) -> bool:
    """Whether a run with ``opts`` applies a revision of the history instead of its input."""
    return opts.history is not None and opts.history.rollback_to is not None


def _target(ctx: RunContext, listed: list) -> int:
    wanted = ctx.opts.history.rollback_to if ctx.opts.history is not None else None
    parent = ctx.parent
    if isinstance(wanted, int):  # else "previous" (Settings.validate refuses anything else)
        if any(r.number == wanted and r.stored_result == history.FAILED for r in listed):
            ctx.record.warn(f"revision {wanted} of {parent.set_ref} is marked failed: the release it records did not "
                            "go through, and rolling back to it applies that release again")
        return wanted
    earlier = history.last_good(listed, parent.revision)
    if earlier is None:
        raise InputError(f"{parent.set_ref} keeps no deployed revision before revision {parent.revision}",
                         obj=parent.set_ref,
                         fix="list the revisions with applyset_info (revisions: true) and give rollback_to a number")
    return earlier.number


def load_revision(ctx: RunContext) -> None:
    """Step load-revision: revision N read and checked; its bodies become the desired objects.

    Raises:
        InputError: no history here, the revision is not kept, or it would lose data (below).
    """
    parent = ctx.parent
    namespace = history.home(parent, ctx.opts.history)
    if not parent.exists or parent.revision is None or namespace is None:
        raise InputError(f"{parent.set_ref} has no history to roll back to", obj=parent.set_ref,
                         fix="a set records revisions from its first run with history_max above 0 (for a "
                             "cluster-scoped parent, with history_namespace); apply src or definition instead")
    secrets = ctx.discovery.for_group_kind(spec.SECRET_KIND)
    listed = history.revisions(history.list_secrets(ctx.client, secrets, namespace, parent.id))
    number = _target(ctx, listed)
    content = history.read(ctx.client, secrets, parent, namespace, number)
    bodies = [(m["source"], m["body"]) for m in content["members"]]
    refuse_data_loss(ctx, number, [body for _source, body in bodies])
    ctx.manifests = [Manifest(_without_membership(body), f"revision {number} ({source})") for source, body in bodies]
    validate(ctx.manifests)
    ctx.rollback_of = number
    # The task's options stay (see the module's docstring); the set's field managers are learnt.
    read_kept = {number: content}
    ctx.set_managers = history.field_managers(listed, lambda kept: read_kept.get(kept) or history.read(
        ctx.client, secrets, parent, namespace, kept))


def _without_membership(body: dict) -> dict:
    """The body as the user gave it: without the part-of label the run adds again."""
    meta = dict(body["metadata"])
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != spec.LABEL_PART_OF}
    meta["labels"] = labels
    if not labels:
        del meta["labels"]
    return {**body, "metadata": meta}


def _served_by_revision_crd(bodies: list, group: str, version: str, kind: str) -> bool:
    for body in bodies:
        if body.get("kind") != "CustomResourceDefinition":
            continue
        crd_spec = body.get("spec") or {}
        if crd_spec.get("group") == group and (crd_spec.get("names") or {}).get("kind") == kind:
            return any(v.get("name") == version and v.get("served", True) for v in crd_spec.get("versions") or ())
    return False


def refuse_data_loss(ctx: RunContext, number: int, bodies: list) -> None:
    """Refuse, before any write, a rollback that would lose data: an object whose apiVersion is no
    longer served (a CRD version removed since) and that the revision's own CRD does not serve,
    or a CRD of the revision that drops a version the live CRD stores objects in.

    Raises:
        InputError: naming each such object.
    """
    problems = []
    crds = ctx.discovery.for_group_kind(spec.CRD_KIND)
    for body in bodies:
        group, _sep, version = body["apiVersion"].rpartition("/")
        kind, name = body["kind"], body["metadata"]["name"]
        if ctx.discovery.for_gvk(group, version, kind) is None and not _served_by_revision_crd(bodies, group, version,
                                                                                               kind):
            problems.append(f"{kind} {name}: {body['apiVersion']} is no longer served")
        if kind == "CustomResourceDefinition" and crds is not None:
            live = ctx.client.get(crds, name) or {}
            stored = set((live.get("status") or {}).get("storedVersions") or ())
            kept = {v.get("name") for v in (body.get("spec") or {}).get("versions") or ()}
            if stored - kept:
                problems.append(f"CustomResourceDefinition {name}: objects are stored as "
                                f"{', '.join(sorted(stored - kept))}, which revision {number} does not define")
    if problems:
        raise InputError(f"rolling back to revision {number} would lose data: " + "; ".join(problems),
                         obj=f"revision {number} of {ctx.parent.set_ref}",
                         fix="roll back to a later revision, or migrate those objects first; nothing was changed")


LOAD_REVISION = Step("load-revision", load_revision, READ)


class RolledBack(ApplySetError):
    """A release failed and the set was rolled back to ``revision``: the task fails all the same."""

    revision: int | None = None  # the revision the set was rolled back to
    cause: ApplySetError | None = None  # the error of the release that failed


def apply_or_roll_back(make_engine, opts, manifests):
    """Run ``make_engine(opts).apply(manifests)``; with ``on_failure: rollback`` (and not in check
    mode), a failure applies the last good revision before it in a second run, whose wait (if
    any) has ``rollback_timeout`` of its own.

    Returns:
        The report of a run that went through.

    Raises:
        RolledBack: the release failed and the rollback went through (``err.report`` is the
            rollback's, ``err.revision`` the revision returned to).
        ApplySetError: the release failed and there was nothing to roll back to, or the rollback
            failed too (the message names both errors).
    """
    engine = make_engine(opts)
    try:
        return engine.apply(manifests)
    except ApplySetError as err:
        settings = opts.history
        parent = engine.parent
        if rolls_back(opts):  # a rollback whose wait failed is no deployed revision
            _mark_failed(engine, parent, settings, err)
        refused = isinstance(err, (InputError, GuardError, ParentError))  # before any member write
        if opts.dry_run or settings is None or settings.on_failure != "rollback" or parent is None or refused:
            raise
        if engine.recorded_revision is None and not _wrote_members(err.report):
            _say(err, "nothing needed rolling back: the release wrote no member")
            raise
        target, why_none = _last_good_before(engine, parent, settings)
        if target is None:
            if why_none:
                _say(err, why_none)
            raise
        # The rollback is a plan of its own, which nobody approved: it is bound to none.
        again = dataclasses.replace(opts, wait_timeout=settings.rollback_timeout, approved_plan=None,
                                    history=dataclasses.replace(settings, rollback_to=target, on_failure=None))
        rollback = make_engine(again)
        try:
            rollback.apply([])
        except ApplySetError as second:
            second.message = (f"the release failed ({err.message}), and so did the rollback to revision "
                              f"{target}: {second.message}")
            _mark_failed(rollback, parent, settings, second)
            _keep_release_plan(rollback.report, err.report)
            raise
        raise _rolled_back(err, rollback.report, target) from err


def _keep_release_plan(report, release) -> None:
    """The result of a release rolled back shows the release's plan (the one approved) as
    ``plan_id`` and ``plan``, and the rollback's id apart, as ``rollback_plan_id``."""
    if release is None or release.plan_id is None:
        return
    report.rollback_plan_id = report.plan_id
    report.plan_id, report.plan = release.plan_id, release.plan


def _mark_failed(engine, parent, settings, err: ApplySetError) -> None:
    """The revision a rollback recorded marked failed, as it failed after recording it (its wait);
    when it cannot be, ``err`` says so (the history then shows it deployed)."""
    number, discovery = engine.recorded_revision, engine.parent_discovery
    namespace = history.home(parent, settings) if parent is not None and settings is not None else None
    if number is None or namespace is None or discovery is None:
        return
    try:
        history.mark_failed(engine.client, discovery.for_group_kind(spec.SECRET_KIND), parent, namespace, number)
    except ApplySetError as failed:
        _say(err, f"revision {number} could not be marked failed in the history ({failed.message}), so it is listed "
                  "as deployed though it did not go through")


def _wrote_members(report) -> bool:
    """Whether the failed release changed a member (a stop before any member write did not)."""
    return report is not None and any(o.action in CHANGING_ACTIONS for o in report.objects)


def _say(err, aftermath: str) -> None:
    """Add to the failed release's error what the rollback did not do, and why."""
    err.message = f"{err.message}; {aftermath}"
    err.args = (err.message,)


def _rolled_back(err, report, target: int) -> RolledBack:
    """The error of a release that failed and was rolled back: what the rollback did (from its
    report), then what failed, without what the failed run said it left as it was (the rollback
    changed that); named by the objects that failed. The result shows the rollback's objects
    and, before its own, the hooks and warnings of the failed release."""
    done = RolledBack(f"the release failed and the set was rolled back to revision {target} (the rollback "
                      f"{_what_it_did(report)}); what failed: {err.what_failed}",
                      obj=_failed_objects(err) or err.obj, fix=err.fix or "fix the release and run again")
    if err.report is not None:
        report.hooks[:0] = err.report.hooks
        report.warnings[:0] = err.report.warnings
    _keep_release_plan(report, err.report)
    done.report, done.revision, done.cause = report, target, err
    return done


def _what_it_did(report) -> str:
    counts = report.summary()
    applied = counts["created"] + counts["configured"] + counts.get("replaced", 0)
    done = [f"re-applied {applied} object{'s' if applied != 1 else ''}"] if applied else []
    done += [f"pruned {counts['pruned']}"] if counts["pruned"] else []
    return " and ".join(done) if done else "changed nothing"


def _failed_objects(err) -> str | None:
    """The objects that failed (or were not ready), as messages name them; None when none is named."""
    named = [o.ref for o in err.report.failed_objects] if err.report is not None else []
    for entry in (err.details or {}).get("unready") or ():
        where = f"{entry['namespace']}/{entry['name']}" if entry.get("namespace") else entry.get("name")
        named.append(f"{entry.get('kind')} {where}")
    return ", ".join(named) or None


def _last_good_before(engine, parent, settings) -> tuple:
    """``(number, None)``: the newest deployed revision before the failed one; ``(None, why)``
    when there is none (``why`` None when the set keeps no history). The failed run's own
    revision, if it recorded one, is marked failed first."""
    namespace = history.home(parent, settings)
    if namespace is None or not parent.exists:
        return None, None
    client = engine.client
    secrets = engine.parent_discovery.for_group_kind(spec.SECRET_KIND)
    failed = engine.recorded_revision
    if failed is not None:
        history.mark_failed(client, secrets, parent, namespace, failed)
    listed = history.revisions(history.list_secrets(client, secrets, namespace, parent.id))
    below = failed if failed is not None else (parent.revision or 0) + 1
    good = history.last_good(listed, below)
    if good is not None:
        return good.number, None
    if any(r.number < below for r in listed):
        return None, f"nothing to roll back to: no revision before revision {below} was deployed"
    return None, "nothing to roll back to: this was the set's first release"
